"""SQuAD v1.1 scores against the official evaluate-v1.1.py (Rajpurkar et al., 2016), transcribed verbatim below.

Not copied into the student kit (certify.CHAPTERS lists the kit's tests): these functions answer chapter 08's exercise.
"""

from __future__ import annotations

import random
import re
import string
from collections import Counter

import pytest
from test_metrics import _eval_set

import minibert.metrics as fm


def _official_normalize_answer(s):
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def _official_f1_score(prediction, ground_truth):
    prediction_tokens = _official_normalize_answer(prediction).split()
    ground_truth_tokens = _official_normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1


def _official_evaluate(dataset, predictions):
    f1 = exact_match = total = 0
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                total += 1
                if qa["id"] not in predictions:
                    continue
                ground_truths = [x["text"] for x in qa["answers"]]
                prediction = predictions[qa["id"]]
                exact_match += max(_official_normalize_answer(prediction) == _official_normalize_answer(g)
                                   for g in ground_truths)
                f1 += max(_official_f1_score(prediction, g) for g in ground_truths)
    return {"exact_match": 100.0 * exact_match / total, "f1": 100.0 * f1 / total}


@pytest.mark.parametrize("text", ["The Eiffel Tower!", "", "?!...", "a an the", "the-end", "theatre",
                                  "“Quoted” – text…", "Ça va, L'ÉTÉ", "A\u00a0B", "1,000.5 km"])
def test_normalize_answer_equals_official(text):
    assert fm.normalize_answer(text) == _official_normalize_answer(text)


def test_metrics_equal_official_on_random_strings():
    rng = random.Random(11)
    alphabet = list("abcdeth ") + list(string.punctuation) + ["“", "”", "–", "é", "\u00a0", "\t", "A", "The "]
    for _ in range(3_000):
        a = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 15)))
        b = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 15)))
        assert fm.normalize_answer(a) == _official_normalize_answer(a)
        assert fm.exact_match(a, b) == (_official_normalize_answer(a) == _official_normalize_answer(b))
        assert fm.f1_score(a, b) == _official_f1_score(a, b)


def test_squad_scores_equal_official_evaluate_on_the_eval_set():
    dataset = _eval_set()
    qas = [qa for article in dataset["data"] for p in article["paragraphs"] for qa in p["qas"]]
    rng = random.Random(3)
    gold = {qa["id"]: qa["answers"][0]["text"] for qa in qas}
    assert fm.squad_scores(gold, dataset) == {"exact_match": 100.0, "f1": 100.0}
    noisy = {}
    for qa in qas:  # each prediction: right, padded, cut, wrong or empty
        answer = qa["answers"][-1]["text"]
        noisy[qa["id"]] = rng.choice([answer, "the " + answer + ".", answer.split()[0], "Paris", "", answer.upper()])
    ours, official = fm.squad_scores(noisy, dataset), _official_evaluate(dataset["data"], noisy)
    assert ours == pytest.approx(official, abs=1e-9)
    assert 0 < ours["exact_match"] < ours["f1"] < 100
    assert fm.squad_scores(noisy, dataset["data"]) == ours  # the "data" list works too
