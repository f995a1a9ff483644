# Generated from notebook 08_finetuning.ipynb by minibert_course.export: edit the notebook, not this file.
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

__all__ = ["accuracy", "bio_entities", "entity_f1", "normalize_answer", "exact_match", "f1_score", "squad_scores",
           "confusion_matrix", "entity_f1_by_type", "question_type", "squad_scores_by_type"]


def accuracy(predictions: Sequence[int], labels: Sequence[int]) -> float:
    """The fraction of predictions equal to their label (0.0 to 1.0)."""
    if len(predictions) != len(labels):
        raise ValueError(f"accuracy: {len(predictions)} predictions but {len(labels)} labels")
    if not labels:
        raise ValueError("accuracy: no labels, the accuracy of nothing is undefined")
    return sum(int(p) == int(y) for p, y in zip(predictions, labels, strict=True)) / len(labels)


def bio_entities(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """Entity chunks (type, start, end) of one BIO tag sequence, end inclusive, as conlleval and seqeval read them.

    A chunk starts at B-x, and also at an I-x that does not continue a chunk of type x (after O, at the start, or
    after another type): ill-formed BIO is read leniently, not dropped. A chunk goes on over I-x of the same type and
    ends before O, B-anything, or a change of type. The type is everything after "B-"/"I-" ("geo-loc").
    """
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


def entity_f1(true_tags: Sequence[Sequence[str]], pred_tags: Sequence[Sequence[str]]) -> dict[str, float]:
    """Micro-averaged entity precision, recall and F1 over sentences (0.0 to 1.0), seqeval's default mode.

    An entity counts as correct only if type, start and end all match. Where a ratio is 0/0 (no predicted or no gold
    entities) it is 0.0, as in seqeval and conlleval: predicting nothing never scores.
    """
    if len(true_tags) != len(pred_tags):
        raise ValueError(f"entity_f1: {len(true_tags)} gold sentences but {len(pred_tags)} predicted")
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


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)  # ASCII only, as the official script: "–", "’", "«" are kept


def normalize_answer(s: str) -> str:
    """Lower-case, drop ASCII punctuation, drop the words a/an/the, collapse whitespace: evaluate-v1.1.py's order.

    The order matters: punctuation goes before articles, so "the-end" -> "theend" keeps its "the".
    """
    text = "".join(ch for ch in s.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def f1_score(prediction: str, ground_truth: str) -> float:
    """Token-overlap F1 of the normalised answers (a bag of words: order is ignored, repeats count)."""
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(ground_truth).split()
    same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str, ground_truth: str) -> bool:
    """Equal after normalisation ("The Eiffel Tower." matches "eiffel tower"; "" matches "the")."""
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def _best_match(prediction: str, qa: Mapping[str, Any]) -> tuple[float, float]:
    """(EM, F1) of one prediction against its question's best-matching gold answer, as evaluate-v1.1.py scores it."""
    golds = [answer["text"] for answer in qa["answers"]]
    return max(exact_match(prediction, g) for g in golds), max(f1_score(prediction, g) for g in golds)


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
                best_em, best_f1 = _best_match(predictions[qa["id"]], qa)
                em += best_em
                f1 += best_f1
    if total == 0:
        raise ValueError("squad_scores: the data set has no questions")
    if missing:
        warnings.warn(f"{len(missing)} of {total} questions have no prediction and score 0 (first: {missing[0]})",
                      stacklevel=2)
    return {"exact_match": 100.0 * em / total, "f1": 100.0 * f1 / total}


def confusion_matrix(labels: Sequence[int], predictions: Sequence[int], n_classes: int) -> list[list[int]]:
    """counts[true class][predicted class]. The diagonal is what accuracy counts; the two off-diagonal cells of a
    two-class task say which way the model errs, which one accuracy figure cannot."""
    if len(predictions) != len(labels):
        raise ValueError(f"confusion_matrix: {len(predictions)} predictions but {len(labels)} labels")
    counts = [[0] * n_classes for _ in range(n_classes)]
    for gold, guess in zip(labels, predictions, strict=True):
        counts[int(gold)][int(guess)] += 1
    return counts


def entity_f1_by_type(true_tags: Sequence[Sequence[str]],
                      pred_tags: Sequence[Sequence[str]]) -> dict[str, dict[str, float]]:
    """entity_f1 per entity type, with its support (the gold entities of that type), sorted by type.

    Why: WNUT-16 has ten types of very different sizes (person and geo-loc are common, tvshow and movie rare), and a
    micro F1 is mostly the common ones. A chunk of one type does not depend on the other types' tags (bio_entities),
    so each type is scored on its own chunks.
    """
    if len(true_tags) != len(pred_tags):
        raise ValueError(f"entity_f1_by_type: {len(true_tags)} gold sentences but {len(pred_tags)} predicted")
    support = Counter(kind for tags in true_tags for kind, _, _ in bio_entities(tags))
    kinds = support.keys() | {kind for tags in pred_tags for kind, _, _ in bio_entities(tags)}

    def only(corpus: Sequence[Sequence[str]], kind: str) -> list[list[str]]:  # the other types' tags read as O
        return [[tag if tag[2:] == kind else "O" for tag in tags] for tags in corpus]

    return {kind: {**entity_f1(only(true_tags, kind), only(pred_tags, kind)), "support": support[kind]}
            for kind in sorted(kinds)}


_QUESTION_WORDS = (  # (type, pattern); the leftmost match in the lower-cased question wins, earlier types on a tie
    ("when", r"\bwhen\b|\b(?:what|which) (?:year|date|decade|century|month|day)\b"),
    ("how many / much", r"\bhow (?:many|much|long|far|old|big|large|tall|high|heavy|wide|deep|fast)\b"),
    ("who", r"\bwho(?:m|se)?\b"),
    ("where", r"\bwhere\b"),
    ("which", r"\bwhich\b"),
    ("what", r"\bwhat\b"),
    ("why", r"\bwhy\b"),
    ("how", r"\bhow\b"),
)


def question_type(question: str) -> str:
    """The kind of answer a question asks for, from its first question word: 'when' (also "in what year"), 'how many /
    much' (a quantity), 'who', 'where', 'which', 'what', 'why', 'how' (a manner), or 'other'. "In which city was X
    born?" is 'which'; "Who was king when X?" is 'who' (the first question word, not the last)."""
    text = question.lower()
    best = None  # (position, rank, type)
    for rank, (kind, pattern) in enumerate(_QUESTION_WORDS):
        found = re.search(pattern, text)
        if found and (best is None or (found.start(), rank) < best[:2]):
            best = (found.start(), rank, kind)
    return best[2] if best else "other"


def squad_scores_by_type(predictions: Mapping[str, str],
                         examples: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """SQuAD EM and F1 (percent) per question_type, with the number of questions, sorted by that number: a model that
    answers every question with a year scores on the 'when' questions only, and this shows it."""
    groups: dict[str, list[tuple[float, float]]] = {}
    for qa in examples:
        groups.setdefault(question_type(qa["question"]), []).append(_best_match(predictions.get(qa["id"], ""), qa))
    return {kind: {"n": len(s), "exact_match": 100.0 * sum(e for e, _ in s) / len(s),
                   "f1": 100.0 * sum(f for _, f in s) / len(s)}
            for kind, s in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))}
