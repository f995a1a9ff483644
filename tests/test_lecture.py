"""Every numbered item of the lecture has a home: cells that teach it and graded cells that check it
(src/minibert_course/lecture.py), and docs/lecture_coverage.md is the table those homes produce."""

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
    assert len({item.key for item in lecture.ITEMS}) == len(lecture.ITEMS)


def test_an_item_without_a_home_or_with_a_lost_cell_is_reported(monkeypatch):
    first = lecture.ITEMS[0]
    broken = (replace(first, graded=()), replace(first, key="x", taught=("03/no-such-cell",)),
              replace(first, key="y", graded=("07/ch07-17",)))  # a markdown cell is not a grade
    monkeypatch.setattr(lecture, "ITEMS", broken)
    found = lecture.problems()
    assert any("no graded home" in p for p in found)
    assert any("03/no-such-cell is not a cell" in p for p in found)
    assert any("07/ch07-17 is not a graded cell" in p for p in found)


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
