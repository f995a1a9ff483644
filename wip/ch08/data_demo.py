#| demo
from minibert.qa_generation import template_counts  # noqa: E402
from minibert.task_data import WNUT_LABELS, load_qa, load_rotten_tomatoes, load_wnut16  # noqa: E402

for name, load in (("sentiment", load_rotten_tomatoes), ("ner", load_wnut16), ("qa", load_qa)):
    print(f"{name:>9}: " + " / ".join(f"{split} {len(load(split)):,}" for split in ("train", "dev", "test")))
text, label = load_rotten_tomatoes("train")[0]
print(f"\nsentiment: {text!r} -> {label} ({'fresh' if label else 'rotten'})")
words, tags = next((w, t) for w, t in load_wnut16("train") if len(set(t)) > 2)
print("ner:      ", " ".join(f"{w}/{t}" if t != "O" else w for w, t in zip(words, tags, strict=True)))
print(f"           {len(WNUT_LABELS)} tags: {', '.join(WNUT_LABELS[:5])}, ...")
for split in ("train", "test"):
    q = load_qa(split)[3]
    print(f"qa ({split}): {q['question']!r} -> {q['answers'][0]['text']!r}")
from minibert.qa_generation import generate_qa  # noqa: E402

print("generated questions per template:", dict(template_counts(generate_qa()).most_common()))
