"""Every numbered item of the lecture has a home: cells that teach it and graded cells that check it, with how far
they check it (src/minibert_course/lecture.py), and docs/lecture_coverage.md is the table those homes produce."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace

import pytest
from conftest import ROOT

from minibert_course import lecture

SEEDS = ROOT.parent / "shared" / "seeds"


def test_every_item_is_taught_and_graded_by_cells_that_exist():
    assert lecture.problems() == []


def test_the_item_list_has_the_lectures_shape():
    kinds = Counter(item.kind for item in lecture.ITEMS)
    assert kinds["section"] == 8 and kinds["check question"] == 4 and kinds["misconception"] == 5
    assert kinds["self-check"] == 5
    assert set(kinds) == {"section", "check question", "misconception", "self-check", "figure", "claim", "code link"}
    assert len({item.key for item in lecture.ITEMS}) == len(lecture.ITEMS)
    assert {item.grading for item in lecture.ITEMS} <= set(lecture.GRADINGS)


def test_the_items_issue_21_found_are_listed_as_far_as_they_are_graded():
    items = {item.key: item for item in lecture.ITEMS}
    for key in ("claim-word-labels", "claim-start-end-vectors", "fact-vocab", "claim-problem-setting",
                "code-bertmodel", "code-bertformaskedlm", "code-berttokenizer"):
        assert key in items, f"{key}: the lecture states it, so it needs a row"
    assert "07/test-align" in items["claim-word-labels"].graded
    assert "07/ch07-se-vectors" in items["claim-start-end-vectors"].taught
    assert items["fact-sizes"].grading == "partly" and items["check-3"].grading == "partly"
    assert items["fact-vocab"].grading == "not graded" and not items["fact-vocab"].graded
    assert "02/ch02-03" not in items["misconception-4"].taught  # it explains the three tables, not the misconception
    section_7 = set(items["section-7"].graded)  # each of its three features has a test that grades it
    assert {"03/test-pattern", "03/test-layer", "06/test-loss"} <= section_7


def test_an_item_without_a_home_or_with_a_lost_cell_is_reported(monkeypatch):
    first = replace(lecture.ITEMS[0], grading="graded", note="")
    broken = (replace(first, graded=()), replace(first, key="x", taught=("03/no-such-cell",)),
              replace(first, key="y", graded=("07/ch07-17",)),  # a markdown cell is not a grade
              replace(first, key="z", taught=()))
    monkeypatch.setattr(lecture, "ITEMS", broken)
    found = lecture.problems()
    assert any(p.startswith(f"{first.key}: no graded home") for p in found)
    assert any("03/no-such-cell is not a cell" in p for p in found)
    assert any("07/ch07-17 is not a graded cell" in p for p in found)
    assert any(p == "z: no taught home" for p in found)


def test_a_grading_that_its_cells_or_its_note_contradict_is_reported(monkeypatch):
    first = replace(lecture.ITEMS[0], grading="graded", note="")
    broken = (replace(first, key="a", grading="not graded", note="taught in 03"),  # names graded cells all the same
              replace(first, key="b", grading="partly"),  # partly, but says nowhere what is graded
              replace(first, key="c", grading="not graded", graded=()),  # nor where it is taught
              replace(first, key="d", grading="mostly"),
              replace(first, key="e", taught=("03/test-pattern",)),  # a test does not teach
              replace(first, key="f", grading="not graded", graded=(), note="taught in ch03-11 only"))  # all right
    monkeypatch.setattr(lecture, "ITEMS", broken)
    found = lecture.problems()
    assert any(p.startswith("a: 'not graded' but it names graded cells") for p in found)
    assert any(p.startswith("b: 'partly' needs a note") for p in found)
    assert any(p.startswith("c: 'not graded' needs a note") for p in found)
    assert any(p.startswith("d: grading 'mostly' is not one of") for p in found)
    assert any(p.startswith("e: 03/test-pattern is a graded cell, not one that teaches") for p in found)
    assert not any(p.startswith("f:") for p in found)


def test_a_graded_home_without_points_is_reported(monkeypatch):
    real = lecture.cells

    def with_a_pointless_test(chapter):
        found = real(chapter)
        found["test-pointless"] = {"cell_type": "code", "metadata": {"nbgrader": {
            "grade": True, "locked": True, "solution": False, "grade_id": "test-pointless", "points": 0}}}
        return found

    monkeypatch.setattr(lecture, "cells", with_a_pointless_test)
    monkeypatch.setattr(lecture, "ITEMS", (replace(lecture.ITEMS[0], graded=("07/test-pointless",)),))
    assert any("07/test-pointless is a graded cell without points" in p for p in lecture.problems())


def test_manually_graded_homes_carry_a_mark_scheme():
    manual = {ref for item in lecture.ITEMS for ref in item.graded
              if lecture.how_graded(lecture.cells(ref.split("/")[0])[ref.split("/")[1]]).startswith("manual")}
    assert {"10/why-answer", "10/selfcheck-nsp-purpose", "07/one-checkpoint-answer"} <= manual
    for ref in manual:
        chapter, cid = ref.split("/")
        assert lecture.cells(chapter)[cid]["metadata"]["minibert"]["mark_scheme"], ref


def test_the_coverage_table_in_the_docs_is_current():
    docs = (ROOT / "docs" / "lecture_coverage.md").read_text(encoding="utf-8")
    assert docs == lecture.table(), "docs/lecture_coverage.md is stale: run `python -m minibert_course.lecture`"


def test_every_row_of_the_table_has_its_seven_cells_and_says_how_far_it_is_graded():
    rows = [line for line in lecture.table().splitlines() if line.startswith("| ") and not line.startswith("| # ")]
    assert len(rows) == len(lecture.ITEMS)
    for item, row in zip(lecture.ITEMS, rows, strict=True):
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]  # a `\|` inside a cell does not split it
        assert len(cells) == 7, f"{item.key}: {len(cells)} cells in {row[:120]!r}"
        assert cells[0] == item.key and cells[5] == lecture.GRADINGS[item.grading]
        assert not item.note or item.note.replace("|", "\\|") in cells[6], f"{item.key}: its note is not shown"


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the lecture's sources (../shared/seeds) are not next to this checkout")
def test_every_question_misconception_and_section_of_the_sources_is_listed():
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted(SEEDS.glob("*.txt")))
    lines = [line.strip() for line in text.splitlines()]
    check = lines[lines.index("Check") + 1:]
    check = check[:next((i for i, line in enumerate(check) if "Portfolio" in line), len(check))]  # the notes' end
    questions = [line for line in check if line.endswith("?") or line.endswith("설명하세요.")]
    start = lines.index("자주 하는 오해 5개")
    misconceptions = [line for line in lines[start + 1:start + 7] if line]
    start = next(i for i, line in enumerate(lines) if line.startswith("체크리스트"))
    self_checks = [line for line in lines[start + 1:] if line.endswith("?")]
    sections = [line for line in lines if re.match(r"^[1-8]\. ", line)]
    assert (len(questions), len(misconceptions), len(self_checks), len(sections)) == (4, 5, 5, 8)
    listed = {item.source for item in lecture.ITEMS}
    missing = [line for line in questions + misconceptions + self_checks + sections if line not in listed]
    assert not missing, f"lecture items without an entry in lecture.ITEMS: {missing}"


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the lecture's sources (../shared/seeds) are not next to this checkout")
def test_every_item_quotes_the_sources():
    def words(text):
        return " ".join(text.split())  # the sources separate table columns with tabs

    text = words("\n".join(p.read_text(encoding="utf-8") for p in sorted(SEEDS.glob("*.txt"))))
    unquoted = [item.key for item in lecture.ITEMS if words(item.source) not in text]
    assert not unquoted, f"items whose `source` is not the lecture's words: {unquoted}"
