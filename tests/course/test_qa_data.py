"""Tests of the hand-written question-answering evaluation set `minibert/data/wiki_qa_eval.json`.

The file is SQuAD v1.1 JSON over the course's Wikipedia sample: every context must be one of the paragraphs that
`load_wikipedia_sample()` returns for that title, and every answer an exact span of its context.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import minibert
from minibert.corpus import load_wikipedia_sample

QA_FILE = Path(minibert.__file__).parent / "resources" / "wiki_qa_eval.json"
MIN_QUESTIONS = 150
MIN_ARTICLES = 20
MAX_COPIED_CHARS = 60  # a question may share a name or a phrase with its context, not a whole clause


@pytest.fixture(scope="module")
def squad() -> dict:
    assert QA_FILE.exists(), f"expected the evaluation set at {QA_FILE}, found no file"
    with open(QA_FILE, encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def questions(squad) -> list[tuple[str, str, dict]]:
    """(title, context, qa) for every question of the file."""
    return [(article["title"], paragraph["context"], qa)
            for article in squad["data"] for paragraph in article["paragraphs"] for qa in paragraph["qas"]]


@pytest.fixture(scope="module")
def corpus() -> dict[str, list[str]]:
    return {article.title: article.paragraphs for article in load_wikipedia_sample()}


def _check_type(value, expected: type, where: str) -> None:
    ok = isinstance(value, expected) and not (expected is int and isinstance(value, bool))
    assert ok, f"{where}: expected {expected.__name__}, found {type(value).__name__} ({value!r:.80})"


def test_squad_v11_structure(squad):
    _check_type(squad, dict, "top level")
    assert set(squad) == {"version", "data"}, f"top level: expected keys ['data', 'version'], found {sorted(squad)}"
    assert squad["version"] == "1.1", f"version: expected '1.1', found {squad['version']!r}"
    _check_type(squad["data"], list, "data")
    for i, article in enumerate(squad["data"]):
        where = f"data[{i}]"
        _check_type(article, dict, where)
        assert set(article) == {"title", "paragraphs"}, \
            f"{where}: expected keys ['paragraphs', 'title'], found {sorted(article)}"
        _check_type(article["title"], str, f"{where}.title")
        _check_type(article["paragraphs"], list, f"{where} ({article['title']}).paragraphs")
        assert article["paragraphs"], f"{where} ({article['title']}): expected at least one paragraph, found none"
        for j, paragraph in enumerate(article["paragraphs"]):
            where = f"data[{i}] ({article['title']}).paragraphs[{j}]"
            _check_type(paragraph, dict, where)
            assert set(paragraph) == {"context", "qas"}, \
                f"{where}: expected keys ['context', 'qas'], found {sorted(paragraph)}"
            _check_type(paragraph["context"], str, f"{where}.context")
            _check_type(paragraph["qas"], list, f"{where}.qas")
            assert paragraph["qas"], f"{where}: expected at least one question, found none"
            for qa in paragraph["qas"]:
                _check_type(qa, dict, f"{where}.qas[]")
                assert set(qa) == {"id", "question", "answers"}, \
                    f"question {qa.get('id')!r}: expected keys ['answers', 'id', 'question'], found {sorted(qa)}"
                _check_type(qa["id"], str, f"{where}: an id")
                _check_type(qa["question"], str, f"question {qa['id']}: question")
                _check_type(qa["answers"], list, f"question {qa['id']}: answers")
                assert qa["answers"], f"question {qa['id']}: expected at least one answer, found none"
                for answer in qa["answers"]:
                    _check_type(answer, dict, f"question {qa['id']}: an answer")
                    assert set(answer) == {"text", "answer_start"}, \
                        f"question {qa['id']}: expected answer keys ['answer_start', 'text'], found {sorted(answer)}"
                    _check_type(answer["text"], str, f"question {qa['id']}: answer text")
                    _check_type(answer["answer_start"], int, f"question {qa['id']}: answer_start")


def test_size_and_unique_ids(squad, questions):
    assert len(questions) >= MIN_QUESTIONS, f"expected at least {MIN_QUESTIONS} questions, found {len(questions)}"
    titles = [article["title"] for article in squad["data"]]
    assert len(set(titles)) >= MIN_ARTICLES, f"expected at least {MIN_ARTICLES} articles, found {len(set(titles))}"
    assert len(titles) == len(set(titles)), \
        f"expected each article once, found repeated titles {sorted({t for t in titles if titles.count(t) > 1})}"
    seen: set[str] = set()
    for _, _, qa in questions:
        assert qa["id"] not in seen, f"question {qa['id']}: expected a unique id, found it a second time"
        seen.add(qa["id"])


def test_contexts_are_paragraphs_of_the_wikipedia_sample(squad, corpus):
    for article in squad["data"]:
        title = article["title"]
        assert title in corpus, f"title {title!r}: expected an article of load_wikipedia_sample(), found none"
        for paragraph in article["paragraphs"]:
            ids = [qa["id"] for qa in paragraph["qas"]]
            assert paragraph["context"] in corpus[title], (
                f"questions {ids}: expected the context to be exactly one of the {len(corpus[title])} paragraphs of "
                f"{title!r}, found a text that is none of them: {paragraph['context'][:80]!r}...")


def test_answers_are_exact_spans(questions):
    for _, context, qa in questions:
        for answer in qa["answers"]:
            text, start = answer["text"], answer["answer_start"]
            assert text, f"question {qa['id']}: expected a non-empty answer, found ''"
            assert text == text.strip(), f"question {qa['id']}: expected a stripped answer, found {text!r}"
            assert 0 <= start <= len(context) - len(text), \
                f"question {qa['id']}: expected answer_start in [0, {len(context) - len(text)}], found {start}"
            found = context[start:start + len(text)]
            assert found == text, (f"question {qa['id']}: expected {text!r} at answer_start {start}, "
                                   f"found {found!r} (the text occurs at {context.find(text)})")


def test_questions_are_questions_not_copies(questions):
    for _, context, qa in questions:
        question = qa["question"]
        assert question.strip(), f"question {qa['id']}: expected a question, found an empty string"
        assert "?" in question, f"question {qa['id']}: expected a question mark, found {question!r}"
        q, c = question.lower(), context.lower()
        n = MAX_COPIED_CHARS + 1
        copied = [q[i:i + n] for i in range(len(q) - n + 1) if q[i:i + n] in c]
        assert not copied, (f"question {qa['id']}: expected a paraphrase (at most {MAX_COPIED_CHARS} characters "
                            f"copied from the context), found the copy {copied[0]!r}")
