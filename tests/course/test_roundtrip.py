"""The nbgrader round trip of a whole class (the session's one `make grade` run, see conftest.graded_class).

Solutions submitted -> full marks in every chapter; the untouched release -> zero; one exercise wrong -> exactly that
exercise's points lost; a malformed submission is reported and the others are still graded; feedback shows neither
hidden tests nor solution text; grading writes nothing into the reference package; grades.csv has one row per
student, one column per chapter and the total.
"""

from __future__ import annotations

import csv
import html
import re

import pytest
from conftest import ROOT, SOLUTIONS, read, tree_digest

from minibert_course.nbgrader_ext import secret_lines

pytestmark = pytest.mark.slow
CHAPTERS = [p.stem for p in SOLUTIONS]
HIDE_NOTE = "a hidden test failed. Its details are not shown"
VISIBLE_NOTE = "(a visible test failed: see it in your notebook)"


def rows(graded_class) -> dict[tuple[str, str], dict]:
    return {(r["student"], r["assignment"]): r for r in graded_class.report.rows}


def max_points(chapter: str, autograded_only: bool = False) -> float:
    return sum(c.metadata["nbgrader"].get("points", 0) for c in read(ROOT / "solutions" / f"{chapter}.ipynb").cells
               if c.metadata.get("nbgrader", {}).get("grade") and (c.cell_type == "code" or not autograded_only))


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_solution_gets_full_marks(graded_class, chapter):
    """Full marks of the autograded part; a manually graded answer scores 0 until a grader marks it."""
    row = rows(graded_class)[("control", chapter)]
    assert float(row["score"]) == max_points(chapter, autograded_only=True) > 0, row
    assert float(row["max_score"]) == max_points(chapter), row
    assert not row["flags"] and not row["review"], row


def test_manual_answers_reach_the_graders_and_mark_schemes_never_the_students(graded_class):
    """Chapter 07's manually graded answer: the student's text is in the autograded notebook (what the formgrader
    shows), its mark scheme is in COURSE/mark_schemes.md, and no criterion is in a release or a feedback page."""
    from minibert_course.nbgrader_ext import mark_schemes

    course = graded_class.course
    schemes = [(ch, gid, criteria) for ch in CHAPTERS for gid, _, criteria in
               mark_schemes(read(ROOT / "solutions" / f"{ch}.ipynb"))]
    assert schemes, "no manually graded answer with a mark scheme in the course"
    graders = (course / "mark_schemes.md").read_text(encoding="utf-8")
    for chapter, grade_id, criteria in schemes:
        assert grade_id in graders and all(c in graders for c in criteria), (chapter, grade_id)
        answer = next(c for c in read(ROOT / "solutions" / f"{chapter}.ipynb").cells
                      if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
        first = next(line for line in answer.source.splitlines() if line.strip() and "SOLUTION" not in line)
        graded = (course / "autograded" / "control" / chapter / f"{chapter}.ipynb").read_text(encoding="utf-8")
        assert first[:60] in graded, f"{chapter}: the student's answer is not in the autograded notebook"
        students_see = [ROOT / "notebooks" / f"{chapter}.ipynb", course / "release" / chapter / f"{chapter}.ipynb",
                        *(course / "feedback").rglob(f"{chapter}.html")]
        for path in students_see:
            text = html.unescape(path.read_text(encoding="utf-8"))
            leaked = [c[:40] for c in criteria if c[:40] in text]
            assert not leaked and "mark_scheme" not in text, (path, leaked)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_untouched_release_gets_zero(graded_class, chapter):
    row = rows(graded_class)[("untouched", chapter)]
    assert float(row["score"]) == 0.0, row
    assert not row["flags"], row


def test_one_wrong_exercise_loses_exactly_its_points(graded_class):
    points = read(ROOT / "solutions" / "01_wordpiece.ipynb")
    lost = sum(c.metadata["nbgrader"]["points"] for c in points.cells
               if c.metadata.get("nbgrader", {}).get("grade_id") == "test-input-format")
    assert lost >= 2
    row = rows(graded_class)[("carol_one_wrong", "01_wordpiece")]
    assert float(row["score"]) == max_points("01_wordpiece") - lost, row
    assert ("carol_one_wrong", "02_embeddings") not in rows(graded_class), "a chapter not submitted is not graded"


def test_malformed_submission_is_reported_and_others_graded(graded_class):
    row = rows(graded_class)[("dave_malformed", "01_wordpiece")]
    assert row["score"] == "" and "not a notebook file" in row["problem"], row
    summary = (graded_class.course / "summary.txt").read_text(encoding="utf-8")
    assert "NOT GRADED dave_malformed 01_wordpiece: not a notebook file" in summary


def test_grades_csv_has_a_column_per_chapter_and_the_total(graded_class):
    with open(graded_class.course / "grades.csv", encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    assert list(table[0]) == ["student", *CHAPTERS, "total"]
    control = next(r for r in table if r["student"] == "control")
    autograded = sum(max_points(ch, autograded_only=True) for ch in CHAPTERS)  # not hand-graded yet
    assert float(control["total"]) == autograded
    carol = next(r for r in table if r["student"] == "carol_one_wrong")
    assert carol["02_embeddings"] == "" and float(carol["total"]) == float(carol["01_wordpiece"])


def test_feedback_of_the_class_hides_hidden_tests_and_solutions(graded_class):
    course = graded_class.course
    for chapter in CHAPTERS:
        secrets = secret_lines(read(ROOT / "solutions" / f"{chapter}.ipynb"))
        assert len(secrets) >= 10, chapter
        pages = list((course / "feedback").rglob(f"{chapter}.html"))
        assert {p.parent.parent.name for p in pages} >= {"control", "untouched"}, chapter
        for page in pages:
            text = html.unescape(page.read_text(encoding="utf-8"))
            student = page.parent.parent.name
            assert "BEGIN HIDDEN TESTS" not in text and "BEGIN SOLUTION" not in text, (student, chapter)
            assert not re.findall(r'(?:src|href)="(?:https?:)?//', text), f"{page}: loads from the network"
            if student == "untouched":  # every test fails at its first visible line: the stub's message is shown
                assert VISIBLE_NOTE in text and "complete chapter" in text, chapter
                leaked = [s for s in secrets if s in text]
                assert not leaked, (chapter, leaked[:3])
            if student == "control":
                assert HIDE_NOTE not in text and VISIBLE_NOTE not in text, chapter


def test_carol_sees_the_message_of_her_one_failing_visible_test(graded_class):
    """A failing visible test shows its message in full (it is in the student's notebook anyway), never its
    traceback; only a hidden test's message is withheld."""
    page = graded_class.course / "feedback" / "carol_one_wrong" / "01_wordpiece" / "01_wordpiece.html"
    text = html.unescape(page.read_text(encoding="utf-8"))
    assert text.count(VISIBLE_NOTE) + text.count(HIDE_NOTE) == 1, "exactly one test of carol's fails"
    assert text.count(VISIBLE_NOTE) == 1, "carol's wrong input format fails a visible test"
    shown = text.split(VISIBLE_NOTE)[0].rsplit("Error: ", 1)[1].strip()
    assert len(shown) > 10, f"the visible test's message should be shown in full, got {shown!r}"


def test_grading_does_not_touch_the_reference_package_or_the_solutions(graded_class):
    assert tree_digest(ROOT / "src" / "minibert") == graded_class.before["package"]
    assert tree_digest(ROOT / "solutions") == graded_class.before["solutions"]
