#%% md
## 2. What a score counts: the metrics

A fine-tuning result is a number, and a number means something only if it is computed as everyone else computes it.
Each task has its reference tool, and `minibert.metrics` reproduces it exactly (the package tests compare with
`seqeval` and with the official SQuAD v1.1 script on thousands of cases):

| task | metric | reference |
|---|---|---|
| sentiment | accuracy: the share of snippets whose predicted class is right | - |
| named entities | entity-level F1: an entity counts only when its type, its first word and its last word are all right | `conlleval` (CoNLL 2000), `seqeval` |
| extractive QA | exact match (EM) and token F1 of the answer text, after normalisation, best over the gold answers | SQuAD v1.1's `evaluate-v1.1.py` |

Accuracy is given. You write the other two.
#%% code
#| export metrics
"""Fine-tuning metrics (chapter 08): accuracy, entity-level F1 as conlleval/seqeval count it, SQuAD v1.1 EM and F1.

Why reimplement them: each is a few lines, and a student should see what "entity F1 = 0.45" or "EM = 60" counts.
Each one reproduces the reference tool exactly, so our numbers can be compared with published ones: the tests check
entity_f1 against seqeval 1.2.2 and the SQuAD functions against the official evaluate-v1.1.py.
"""

from __future__ import annotations

import re
import string
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any


def accuracy(predictions: Sequence[int], labels: Sequence[int]) -> float:
    """The fraction of predictions equal to their label (0.0 to 1.0)."""
    if len(predictions) != len(labels):
        raise ValueError(f"accuracy: {len(predictions)} predictions but {len(labels)} labels")
    if not labels:
        raise ValueError("accuracy: no labels, the accuracy of nothing is undefined")
    return sum(int(p) == int(y) for p, y in zip(predictions, labels, strict=True)) / len(labels)
#%% md
### Exercise: entities from BIO tags

WNUT-16 tags each word `O` (outside any entity), `B-type` (the first word of an entity) or `I-type` (a later word of
the same entity), with ten types such as `person`, `geo-loc` (note the hyphen: the type is everything after `B-` or
`I-`) and `company`. An **entity** is a run of words: it starts at `B-x` and goes on over the `I-x` that follow.

```
words:  Obama  visited  New    York   and  Apple  HQ     Apple
tags:   B-person  O     B-geo-loc I-geo-loc O B-company I-company B-company
```

gives `("person", 0, 0)`, `("geo-loc", 2, 3)`, `("company", 5, 6)`, `("company", 7, 7)` as (type, first word, last
word), the last word included. Two details decide agreement with `seqeval` on real model output, which is not always
well formed:

- an `I-x` that does not continue an entity of type `x` (at the start, after `O`, or after another type) **starts** a
  new entity, as if it were `B-x`; it is not dropped;
- a `B-x` right after an entity of type `x` starts a new entity: `B-x B-x` is two entities.

Write `bio_entities(tags)`. A tag that is not `O`, `B-...` or `I-...` raises `ValueError` naming its position.
#%% solution id=bio-solution
#| export metrics
def bio_entities(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """Entity chunks (type, start, end) of one BIO tag sequence, end inclusive, as conlleval and seqeval read them.

    A chunk starts at B-x, and also at an I-x that does not continue a chunk of type x (after O, at the start, or
    after another type): ill-formed BIO is read leniently, not dropped. A chunk goes on over I-x of the same type and
    ends before O, B-anything, or a change of type. The type is everything after "B-"/"I-" ("geo-loc").
    """
    ### BEGIN SOLUTION
    chunks = []
    start, kind = -1, ""  # the open chunk, if start >= 0
    for i, tag in enumerate(tags):
        if tag == "O":
            prefix, tag_type = "O", ""
        elif tag[:2] in ("B-", "I-") and len(tag) > 2:
            prefix, tag_type = tag[0], tag[2:]
        else:
            raise ValueError(f"tag {i} is {tag!r}: expected 'O', 'B-<type>' or 'I-<type>'")
        continues = prefix == "I" and start >= 0 and tag_type == kind
        if start >= 0 and not continues:
            chunks.append((kind, start, i - 1))
            start = -1
        if prefix != "O" and not continues:
            start, kind = i, tag_type
    if start >= 0:
        chunks.append((kind, start, len(tags) - 1))
    return chunks
    ### END SOLUTION
#%% test id=test-bio pts=3
tags = ["B-person", "O", "B-geo-loc", "I-geo-loc", "O", "B-company", "I-company", "B-company"]
got = bio_entities(tags)
want = [("person", 0, 0), ("geo-loc", 2, 3), ("company", 5, 6), ("company", 7, 7)]
assert got == want, f"bio_entities({tags}): expected {want}, got {got}"
tags = ["O", "I-person", "I-person", "O"]
got = bio_entities(tags)
assert got == [("person", 1, 2)], f"an I- after O starts an entity: bio_entities({tags}) expected [('person', 1, 2)], " \
    f"got {got}"
### BEGIN HIDDEN TESTS
cases = [
    ([], []),
    (["O", "O"], []),
    (["B-person"], [("person", 0, 0)]),
    (["I-other"], [("other", 0, 0)]),
    (["O", "B-geo-loc", "I-geo-loc", "I-geo-loc"], [("geo-loc", 1, 3)]),  # open at the end: closed there
    (["B-person", "I-company", "I-company", "O"], [("person", 0, 0), ("company", 1, 2)]),  # a change of type
    (["B-person", "B-person", "I-person"], [("person", 0, 0), ("person", 1, 2)]),  # B after B: two entities
    (["B-musicartist", "I-musicartist", "B-tvshow", "O", "I-tvshow", "B-sportsteam"],
     [("musicartist", 0, 1), ("tvshow", 2, 2), ("tvshow", 4, 4), ("sportsteam", 5, 5)]),
    (["I-company", "B-company", "I-company", "I-product"], [("company", 0, 0), ("company", 1, 2), ("product", 3, 3)]),
]
for tags, want in cases:
    got = bio_entities(tags)
    assert type(got) is list and all(type(c) is tuple for c in got), f"bio_entities({tags}): expected a list of " \
        f"tuples, got {got!r}"
    assert got == want, f"bio_entities({tags}): expected {want}, got {got}"
for bad in (["B-person", "X-person"], ["O", "B-"], ["person"]):
    try:
        bio_entities(bad)
    except ValueError as exc:
        assert str(len(bad) - 1) in str(exc), f"bio_entities({bad}): the error should name tag {len(bad) - 1}: {exc}"
    else:
        raise AssertionError(f"bio_entities({bad}) should raise ValueError")
long = ["B-person", "I-person", "I-person", "O"] * 50
assert bio_entities(long) == [("person", 4 * k, 4 * k + 2) for k in range(50)], "200 tags, 50 entities"
### END HIDDEN TESTS
print("BIO entities: OK")
#%% md
### Exercise: entity-level F1

Entity F1 compares the **sets** of entities, gold and predicted, over the whole corpus: an entity is right when the
same sentence holds a gold entity of the same type, first word and last word. Then, with $C$ right entities out of
$P$ predicted and $G$ gold,

$$\text{precision} = C / P, \qquad \text{recall} = C / G, \qquad F_1 = \frac{2 \cdot \text{precision} \cdot
\text{recall}}{\text{precision} + \text{recall}}.$$

This is the *micro* average, counted over all sentences together (not an average of per-sentence scores), and it
gives no partial credit: `New` alone for `New York` is one wrong prediction and one missed entity. Where a ratio is
0/0 (nothing predicted, or nothing to find) it is 0.0, as in `seqeval`: predicting nothing never scores. Sentences
must come in pairs of the same length; raise `ValueError` otherwise.
#%% solution id=entity-f1-solution
#| export metrics
def entity_f1(true_tags: Sequence[Sequence[str]], pred_tags: Sequence[Sequence[str]]) -> dict[str, float]:
    """Micro-averaged entity precision, recall and F1 over sentences (0.0 to 1.0), seqeval's default mode.

    An entity counts as correct only if type, start and end all match. Where a ratio is 0/0 (no predicted or no gold
    entities) it is 0.0, as in seqeval and conlleval: predicting nothing never scores.
    """
    if len(true_tags) != len(pred_tags):
        raise ValueError(f"entity_f1: {len(true_tags)} gold sentences but {len(pred_tags)} predicted")
    ### BEGIN SOLUTION
    gold: set[tuple[int, str, int, int]] = set()
    pred: set[tuple[int, str, int, int]] = set()
    for n, (t, p) in enumerate(zip(true_tags, pred_tags, strict=True)):
        if len(t) != len(p):
            raise ValueError(f"entity_f1: sentence {n} has {len(t)} gold tags but {len(p)} predicted")
        gold.update((n, *chunk) for chunk in bio_entities(t))
        pred.update((n, *chunk) for chunk in bio_entities(p))
    correct = len(gold & pred)
    precision = correct / len(pred) if pred else 0.0
    recall = correct / len(gold) if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}
    ### END SOLUTION
#%% test id=test-entity-f1 pts=3
import math  # noqa: E402


def close(got: dict, want: dict) -> bool:
    return set(got) == set(want) and all(math.isclose(got[k], want[k], abs_tol=1e-9) for k in want)


gold = [["B-person", "I-person", "O"], ["B-geo-loc", "O"]]
pred = [["B-person", "O", "O"], ["B-geo-loc", "O"]]  # "Barack" for "Barack Obama": no partial credit
got, want = entity_f1(gold, pred), {"precision": 0.5, "recall": 0.5, "f1": 0.5}
assert close(got, want), f"entity_f1({gold}, {pred}): expected {want}, got {got}"
### BEGIN HIDDEN TESTS
cases = [
    ([["B-person", "O"]], [["B-company", "O"]], {"precision": 0.0, "recall": 0.0, "f1": 0.0}),  # the type matters
    ([["B-person"], ["O"]], [["O"], ["B-person"]], {"precision": 0.0, "recall": 0.0, "f1": 0.0}),  # the sentence too
    ([["O", "O"]], [["O", "O"]], {"precision": 0.0, "recall": 0.0, "f1": 0.0}),  # 0/0 is 0
    ([["B-person", "O"]], [["O", "O"]], {"precision": 0.0, "recall": 0.0, "f1": 0.0}),
    ([["O", "B-other"]], [["B-other", "B-other"]], {"precision": 0.5, "recall": 1.0, "f1": 2 / 3}),
    ([["B-person", "O", "B-company", "O"]], [["B-person", "O", "O", "B-company"]],
     {"precision": 0.5, "recall": 0.5, "f1": 0.5}),
    # micro, not macro: sentence 1 is perfect, sentence 2 finds nothing of 3 -> P = 1/1, R = 1/4, F1 = 0.4
    ([["B-person"], ["B-movie", "B-movie", "B-movie"]], [["B-person"], ["O", "O", "O"]],
     {"precision": 1.0, "recall": 0.25, "f1": 0.4}),
    # entities, not tags: 3 of 4 tags right is still 0 of 1 entity
    ([["B-product", "I-product", "I-product", "I-product"]], [["B-product", "I-product", "I-product", "O"]],
     {"precision": 0.0, "recall": 0.0, "f1": 0.0}),
    ([["I-person", "I-person", "O"]], [["B-person", "I-person", "O"]], {"precision": 1.0, "recall": 1.0, "f1": 1.0}),
]
for gold, pred, want in cases:
    got = entity_f1(gold, pred)
    assert close(got, want), f"entity_f1({gold}, {pred}): expected {want}, got {got}"
for gold, pred in (([["O"]], [["O"], ["O"]]), ([["O", "O"]], [["O"]])):
    try:
        entity_f1(gold, pred)
    except ValueError:
        pass
    else:
        raise AssertionError(f"entity_f1({gold}, {pred}) should raise ValueError (lengths differ)")
### END HIDDEN TESTS
print("entity F1: OK")
#%% md
### Exercise: SQuAD's answer normalisation and token F1

A QA model answers with a span of the context; the gold answers were typed by people. SQuAD v1.1 compares them after
**normalisation**, in this order: lower-case; remove ASCII punctuation (Python's `string.punctuation`: `–`, `’` or
`«` stay); remove the words `a`, `an`, `the` (whole words only: "banana" keeps its "an"); collapse whitespace to
single spaces. The order matters: `"The-End"` becomes `"theend"`, whose "the" is no longer a word.

*Exact match* is equality of the normalised strings. *Token F1* treats the normalised answers as bags of words:
with $s$ words in common (counting repeats, as `collections.Counter` intersection does), precision $s$ / (words
predicted) and recall $s$ / (words in the gold answer); 0.0 when nothing is in common (also when both are empty).
Write `normalize_answer` and `f1_score`.
#%% solution id=squad-solution
#| export metrics
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)  # ASCII only, as the official script: "–", "’", "«" are kept


def normalize_answer(s: str) -> str:
    """Lower-case, drop ASCII punctuation, drop the words a/an/the, collapse whitespace: evaluate-v1.1.py's order.

    The order matters: punctuation goes before articles, so "the-end" -> "theend" keeps its "the".
    """
    ### BEGIN SOLUTION
    text = "".join(ch for ch in s.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())
    ### END SOLUTION


def f1_score(prediction: str, ground_truth: str) -> float:
    """Token-overlap F1 of the normalised answers (a bag of words: order is ignored, repeats count)."""
    ### BEGIN SOLUTION
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(ground_truth).split()
    same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)
    ### END SOLUTION
#%% test id=test-squad pts=3
import math  # noqa: E402

for text, want in [("The Eiffel Tower!", "eiffel tower"), ("  New\tYork ", "new york")]:
    got = normalize_answer(text)
    assert got == want, f"normalize_answer({text!r}): expected {want!r}, got {got!r}"
got = f1_score("the cat sat", "A cat sat down")  # 2 words in common: precision 2/2, recall 2/3
assert math.isclose(got, 0.8), f"f1_score('the cat sat', 'A cat sat down'): expected 0.8, got {got}"
### BEGIN HIDDEN TESTS
for text, want in [("The-End", "theend"), ("An apple", "apple"), ("banana", "banana"), ("1914–1918", "1914–1918"),
                   ("«Le Monde»", "«le monde»"), ("Rock 'n' Roll", "rock n roll"), ("the", ""), ("a.b", "ab"),
                   ("THE THEORY", "theory"), ("the  the a an", ""), ("an\nanswer", "answer"), ("Dr. Who?", "dr who")]:
    got = normalize_answer(text)
    assert got == want, f"normalize_answer({text!r}): expected {want!r}, got {got!r}"
for pred, gold, want in [("x x x", "x", 0.5), ("x y", "y x", 1.0), ("Paris", "paris.", 1.0), ("the", "a", 0.0),
                         ("london", "paris", 0.0), ("in 1990", "1990", 2 / 3), ("", "paris", 0.0),
                         ("x x y", "x y y", 2 / 3), ("New York City", "the city of New York", 6 / 7)]:
    got = f1_score(pred, gold)
    assert type(got) is float and math.isclose(got, want), f"f1_score({pred!r}, {gold!r}): expected {want}, got {got!r}"
### END HIDDEN TESTS
print("SQuAD normalisation and F1: OK")
#%% code
#| export metrics
def exact_match(prediction: str, ground_truth: str) -> bool:
    """Equal after normalisation ("The Eiffel Tower." matches "eiffel tower"; "" matches "the")."""
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def squad_scores(predictions: Mapping[str, str], dataset: Mapping[str, Any] | Sequence[Any]) -> dict[str, float]:
    """{"exact_match", "f1"} in percent over every question of a SQuAD v1.1 data set, as evaluate-v1.1.py computes.

    Each question scores its best match over its gold answers. `dataset` is the parsed JSON file or its "data" list.
    A question without a prediction scores 0 (with a warning, as the official script prints one); predictions for
    ids not in the data set are ignored.
    """
    articles = dataset["data"] if isinstance(dataset, Mapping) else dataset
    em = f1 = 0.0
    total = 0
    missing = []
    for article in articles:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                total += 1
                if qa["id"] not in predictions:
                    missing.append(qa["id"])
                    continue
                golds = [answer["text"] for answer in qa["answers"]]
                em += max(exact_match(predictions[qa["id"]], g) for g in golds)
                f1 += max(f1_score(predictions[qa["id"]], g) for g in golds)
    if total == 0:
        raise ValueError("squad_scores: the data set has no questions")
    if missing:
        warnings.warn(f"{len(missing)} of {total} questions have no prediction and score 0 (first: {missing[0]})",
                      stacklevel=2)
    return {"exact_match": 100.0 * em / total, "f1": 100.0 * f1 / total}
