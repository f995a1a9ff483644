"""Tests of the metrics: entity F1 against seqeval 1.2.2, SQuAD normalisation and scores on known cases (the comparison
with the official evaluate-v1.1.py is in test_squad_official.py, which the student kit leaves out)."""

from __future__ import annotations

import json
import random
import warnings
from importlib import resources

import pytest

import minibert.metrics as fm

# ----------------------------------------------------------------------------------------------- accuracy


def test_accuracy():
    assert fm.accuracy([1, 0, 1, 1], [1, 1, 1, 0]) == 0.5
    assert fm.accuracy([2], [2]) == 1.0
    with pytest.raises(ValueError, match="3 predictions but 2 labels"):
        fm.accuracy([1, 0, 1], [1, 0])
    with pytest.raises(ValueError, match="no labels"):
        fm.accuracy([], [])


# ----------------------------------------------------------------------------------------------- entity F1


@pytest.mark.parametrize(("tags", "entities"), [
    (["B-PER", "I-PER", "O", "B-LOC"], [("PER", 0, 1), ("LOC", 3, 3)]),
    (["I-PER", "I-PER", "O"], [("PER", 0, 1)]),                       # I- without B- starts a chunk
    (["O", "I-LOC"], [("LOC", 1, 1)]),
    (["B-PER", "I-LOC", "I-LOC"], [("PER", 0, 0), ("LOC", 1, 2)]),    # a type change ends and starts a chunk
    (["B-PER", "B-PER"], [("PER", 0, 0), ("PER", 1, 1)]),
    (["I-PER", "B-PER", "I-PER"], [("PER", 0, 0), ("PER", 1, 2)]),
    (["B-geo-loc", "I-geo-loc"], [("geo-loc", 0, 1)]),                # the type keeps its hyphen
    ([], []),
    (["O", "O"], []),
])
def test_bio_entities(tags, entities):
    assert fm.bio_entities(tags) == entities


def test_bio_entities_rejects_other_tag_schemes():
    with pytest.raises(ValueError, match="tag 1 is 'E-PER'"):
        fm.bio_entities(["B-PER", "E-PER"])
    with pytest.raises(ValueError, match="tag 0 is 'B-'"):
        fm.bio_entities(["B-"])


def test_entity_f1_counts_exact_matches_only():
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG"]]
    pred = [["B-PER", "O", "O", "B-LOC"], ["B-ORG"]]  # PER too short: wrong; LOC and ORG right
    assert fm.entity_f1(gold, pred) == pytest.approx({"precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3})
    assert fm.entity_f1([["O"]], [["O"]]) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}  # seqeval's 0/0 -> 0
    assert fm.entity_f1([["B-X"]], [["O"]]) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    with pytest.raises(ValueError, match="sentence 1 has 1 gold tags but 2 predicted"):
        fm.entity_f1([["O"], ["O"]], [["O"], ["O", "O"]])
    with pytest.raises(ValueError, match="2 gold sentences but 1 predicted"):
        fm.entity_f1([["O"], ["O"]], [["O"]])


def test_entities_never_cross_sentences():
    scores = fm.entity_f1([["B-X"], ["I-X"]], [["B-X"], ["O"]])  # gold has two entities, not one over both
    assert (scores["precision"], scores["recall"]) == (1.0, 0.5)
    assert fm.entity_f1([["O", "B-X"], ["I-X"]], [["O", "B-X"], ["B-X"]])["f1"] == 1.0


def _random_tags(rng: random.Random, types: list[str], length: int) -> list[str]:
    labels = ["O"] + [f"{p}-{t}" for t in types for p in "BI"]
    return [rng.choice(labels) for _ in range(length)]


def _corrupt(rng: random.Random, tags: list[str], labels: list[str], rate: float) -> list[str]:
    """A plausible model output: some tags replaced, some B- turned into I- (ill-formed), some entities shifted."""
    out = list(tags)
    for i in range(len(out)):
        r = rng.random()
        if r < rate:
            out[i] = rng.choice(labels)
        elif r < 1.5 * rate and out[i].startswith("B-"):
            out[i] = "I-" + out[i][2:]
        elif r < 2 * rate and i + 1 < len(out):
            out[i], out[i + 1] = out[i + 1], out[i]
    return out


def _seqeval_cases():
    """(name, gold, pred) corpora: random, adversarial and realistic (WNUT-16 gold with corruptions)."""
    import minibert.task_data as finetune_data

    rng = random.Random(2016)
    cases = []
    for n in range(300):  # random, including ill-formed BIO, empty sentences, one or several types
        types = ["PER", "LOC", "geo-loc", "a-b-c"][: rng.randint(1, 4)]
        sizes = [rng.randint(0, 12) for _ in range(rng.randint(1, 8))]
        cases.append((f"random-{n}", [_random_tags(rng, types, k) for k in sizes],
                      [_random_tags(rng, types, k) for k in sizes]))
    adversarial = [  # every ordered pair and triple of tags over two types, against each other
        [a, b, c] for a in ["O", "B-X", "I-X", "B-Y", "I-Y"] for b in ["O", "B-X", "I-X", "B-Y", "I-Y"]
        for c in ["O", "B-X", "I-X", "B-Y", "I-Y"]
    ]
    for n, gold in enumerate(adversarial):
        cases.append((f"adversarial-{n}", [gold], [adversarial[(n * 7 + 3) % len(adversarial)]]))
        cases.append((f"adversarial-self-{n}", [gold], [gold]))
    cases.append(("all-o-pred", [adversarial[5]], [["O", "O", "O"]]))
    wnut = [tags for _, tags in finetune_data.read_wnut16()]
    for n, rate in enumerate([0.0, 0.01, 0.03, 0.1, 0.3]):
        pred = [_corrupt(rng, tags, finetune_data.WNUT_LABELS, rate) for tags in wnut]
        cases.append((f"wnut-corrupt-{rate}", wnut, pred))
        cases.append((f"wnut-corrupt-{rate}-swapped", pred, wnut))
        if n == 0:
            cases.append(("wnut-all-o", wnut, [["O"] * len(t) for t in wnut]))
    return cases


def test_entity_f1_matches_seqeval():
    metrics = pytest.importorskip("seqeval.metrics")
    from seqeval.metrics.sequence_labeling import get_entities

    max_difference, sequences = 0.0, 0
    cases = _seqeval_cases()
    for name, gold, pred in cases:
        for tags in gold + pred:  # the chunks themselves, one sentence at a time
            assert [tuple(e) for e in get_entities(list(tags))] == fm.bio_entities(tags), (name, tags)
        ours = fm.entity_f1(gold, pred)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # seqeval warns where a ratio is 0/0
            theirs = {"precision": metrics.precision_score(gold, pred), "recall": metrics.recall_score(gold, pred),
                      "f1": metrics.f1_score(gold, pred)}
        for key in ours:
            assert ours[key] == pytest.approx(theirs[key], abs=1e-12), (name, key, ours, theirs)
            max_difference = max(max_difference, abs(ours[key] - theirs[key]))
        sequences += len(gold)
    assert sequences > 20_000
    print(f"\nentity_f1 vs seqeval: {len(cases)} corpora, {sequences} sentence pairs, max difference {max_difference}")


def test_entity_f1_by_type_matches_seqeval_per_type():
    """Per entity type, as seqeval's classification report counts it (support: the gold entities of the type); the
    types' true positives add up to entity_f1's."""
    metrics = pytest.importorskip("seqeval.metrics")
    checked = 0
    for name, gold, pred in _seqeval_cases()[::7]:
        ours = fm.entity_f1_by_type(gold, pred)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = metrics.classification_report(gold, pred, output_dict=True)
        for kind, score in ours.items():
            if score["support"] == 0:  # predicted only: seqeval leaves it out of its report
                assert score["recall"] == score["f1"] == 0.0, (name, kind, score)
                continue
            for key in ("precision", "recall", "f1"):
                assert score[key] == pytest.approx(theirs[kind]["f1-score" if key == "f1" else key], abs=1e-12), (
                    name, kind, key)
            assert score["support"] == theirs[kind]["support"], (name, kind)
            checked += 1
        overall = fm.entity_f1(gold, pred)
        correct = sum(round(s["recall"] * s["support"]) for s in ours.values())
        assert correct == round(overall["recall"] * sum(s["support"] for s in ours.values())), name
    assert checked > 100


def test_confusion_matrix():
    assert fm.confusion_matrix([0, 0, 1, 1, 1], [0, 1, 1, 0, 1], 2) == [[1, 1], [1, 2]]  # rows: the true class
    assert fm.confusion_matrix([2], [0], 3) == [[0, 0, 0], [0, 0, 0], [1, 0, 0]]
    with pytest.raises(ValueError, match="2 predictions but 1 labels"):
        fm.confusion_matrix([1], [1, 0], 2)


@pytest.mark.parametrize(("question", "kind"), [
    ("Which company released BERT?", "which"),
    ("In which city was Mozart born?", "which"),
    ("In what year was BERT released?", "when"),  # a year is asked: 'when', not 'what'
    ("When did Apollo 8 launch?", "when"),
    ("Which century saw the first printed book?", "when"),
    ("How many moons does Mars have?", "how many / much"),
    ("Roughly how long is the Nile?", "how many / much"),
    ("Who was king when the war began?", "who"),  # the first question word decides
    ("Whom did Lincoln marry?", "who"),
    ("Where was Einstein born?", "where"),
    ("What is albedo?", "what"),
    ("Why was Collins removed from the crew?", "why"),
    ("How did Lincoln's grandfather die?", "how"),
    ("Name the largest ocean.", "other"),
    ("Whatever happened?", "other"),  # whole words only
])
def test_question_type(question, kind):
    assert fm.question_type(question) == kind


def test_squad_scores_by_type_averages_each_type_of_question():
    examples = [{"id": "a", "question": "When was X?", "answers": [{"text": "1539"}]},
                {"id": "b", "question": "In what year was Y?", "answers": [{"text": "2018"}]},
                {"id": "c", "question": "Who made Y?", "answers": [{"text": "Google Research"}]}]
    got = fm.squad_scores_by_type({"a": "1539", "b": "2019", "c": "Google"}, examples)
    assert list(got) == ["when", "who"]  # the larger type first
    assert got["when"] == {"n": 2, "exact_match": 50.0, "f1": 50.0}
    assert got["who"]["n"] == 1 and got["who"]["exact_match"] == 0.0
    assert got["who"]["f1"] == pytest.approx(100 * 2 / 3)  # precision 1, recall 1/2
    assert fm.squad_scores_by_type({}, examples[:1]) == {"when": {"n": 1, "exact_match": 0.0, "f1": 0.0}}


# ----------------------------------------------------------------------------------------------- SQuAD v1.1
# The comparison with the official evaluate-v1.1.py is in test_squad_official.py, which the student kit leaves
# out: the official functions are the answer to chapter 08's exercise.


@pytest.mark.parametrize(("text", "normal"), [
    ("The Eiffel Tower!", "eiffel tower"),
    ("", ""),
    ("?!...", ""),                          # punctuation only
    ("a an the", ""),                       # articles only
    ("An apple a day", "apple day"),
    ("the-end", "theend"),                  # punctuation goes first, so "the" is no longer a word
    ("theatre", "theatre"),                 # articles are whole words only
    ("Tom's  \t car\n", "toms car"),
    ("“Quoted” – text…", "“quoted” – text…"),  # unicode punctuation is not in string.punctuation: kept
    ("Ça va, L'ÉTÉ", "ça va lété"),
    ("A\u00a0B", "b"),                      # a non-breaking space splits words; "a" is an article
    ("1,000.5 km", "10005 km"),
])
def test_normalize_answer_edge_cases(text, normal):
    assert fm.normalize_answer(text) == normal


def test_exact_match_and_f1_edge_cases():
    assert fm.exact_match("the Eiffel Tower.", "Eiffel tower")
    assert fm.exact_match("", "the")        # both normalise to "": a match, as in the official script
    assert fm.f1_score("", "the") == 0.0    # ... but no tokens in common, so F1 is 0
    assert fm.f1_score("", "") == 0.0
    assert fm.f1_score("Barack Obama", "President Barack Obama") == pytest.approx(0.8)
    assert fm.f1_score("obama obama", "obama") == pytest.approx(2 * 0.5 * 1 / 1.5)  # repeats count once each
    assert fm.f1_score("in 1928", "1928") == pytest.approx(2 / 3)
    assert not fm.exact_match("“Google”", "Google")  # curly quotes are not ASCII punctuation


def _eval_set() -> dict:
    with resources.files("minibert").joinpath("resources/wiki_qa_eval.json").open(encoding="utf-8") as f:
        return json.load(f)


def test_squad_scores_of_the_gold_answers_are_100():
    dataset = _eval_set()
    gold = {qa["id"]: qa["answers"][0]["text"] for a in dataset["data"] for p in a["paragraphs"] for qa in p["qas"]}
    assert fm.squad_scores(gold, dataset) == {"exact_match": 100.0, "f1": 100.0}


def test_squad_scores_missing_predictions_score_zero_with_a_warning():
    dataset = _eval_set()
    first = dataset["data"][0]["paragraphs"][0]["qas"][0]
    with pytest.warns(UserWarning, match="255 of 256 questions have no prediction"):
        scores = fm.squad_scores({first["id"]: first["answers"][0]["text"], "unknown-id": "x"}, dataset)
    assert scores["exact_match"] == pytest.approx(100 / 256)
    with pytest.raises(ValueError, match="no questions"):
        fm.squad_scores({}, {"data": []})
