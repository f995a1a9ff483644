"""The nbgrader round trip on a temporary course, through `autograder/grade.py` (what `make grade` runs).

Solutions submitted -> full marks; the untouched release -> zero; one exercise wrong -> exactly that exercise's
points lost; a malformed submission is reported and the others are still graded. Feedback shows neither hidden
tests nor solution text, and grading writes nothing into the reference package.
"""

from __future__ import annotations

import csv
import hashlib
import subprocess
import sys

import nbformat
import pytest
from conftest import ROOT, SOLUTIONS, filled_submission, read

from minibert_course.nbgrader_ext import secret_lines

pytestmark = pytest.mark.slow
CHAPTER = "01_wordpiece"
WRONG_INPUT_FORMAT = '''#| export
def build_inputs(tokens_a, tokens_b=None):
    tokens = ["[CLS]", *tokens_a, "[SEP]"]
    if tokens_b is not None:
        tokens += [*tokens_b, "[SEP]"]
    return tokens, [0] * len(tokens)  # wrong: B is segment 1
'''


def package_digest() -> str:
    files = sorted((ROOT / "src" / "minibert").glob("*.py"))
    return hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()


CHAPTERS = [p.stem for p in SOLUTIONS]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """One `grade.py` run over every chapter: alice submits the solutions, bob the untouched release notebooks,
    carol chapter 01 with one exercise wrong, dave a chapter 01 file that is not a notebook."""
    subs = tmp_path_factory.mktemp("submissions")

    def submit(student: str, chapter: str, nb) -> None:
        (subs / student / chapter).mkdir(parents=True)
        nbformat.write(nb, subs / student / chapter / f"{chapter}.ipynb")

    for chapter in CHAPTERS:
        release, solution = ROOT / "notebooks" / f"{chapter}.ipynb", ROOT / "solutions" / f"{chapter}.ipynb"
        submit("alice_solution", chapter, filled_submission(release, solution))
        submit("bob_untouched", chapter, read(release))
    submit("carol_one_wrong", CHAPTER, filled_submission(ROOT / "notebooks" / f"{CHAPTER}.ipynb",
                                                         ROOT / "solutions" / f"{CHAPTER}.ipynb",
                                                         {"input-format-solution": WRONG_INPUT_FORMAT}))
    (subs / "dave_malformed" / CHAPTER).mkdir(parents=True)
    (subs / "dave_malformed" / CHAPTER / f"{CHAPTER}.ipynb").write_text('{"cells": [', encoding="utf-8")
    course = tmp_path_factory.mktemp("course")
    before = package_digest()
    run = subprocess.run([sys.executable, str(ROOT / "autograder" / "grade.py"), "--course", str(course),
                          "--submissions", str(subs)], capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = {(r["student"], r["assignment"]): r for r in csv.DictReader(open(course / "grades.csv", encoding="utf-8"))}
    return course, rows, before, run.stdout


def max_points(chapter: str) -> float:
    return sum(c.metadata["nbgrader"].get("points", 0) for c in read(ROOT / "solutions" / f"{chapter}.ipynb").cells
               if c.metadata.get("nbgrader", {}).get("grade"))


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_solution_gets_full_marks(graded, chapter):
    _, rows, _, out = graded
    row = rows[("alice_solution", chapter)]
    assert float(row["score"]) == max_points(chapter) == float(row["max_score"]) > 0, out


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_untouched_release_gets_zero(graded, chapter):
    _, rows, _, out = graded
    assert float(rows[("bob_untouched", chapter)]["score"]) == 0.0, out


def test_one_wrong_exercise_loses_exactly_its_points(graded):
    _, rows, _, out = graded
    points = read(ROOT / "solutions" / f"{CHAPTER}.ipynb")
    lost = sum(c.metadata["nbgrader"]["points"] for c in points.cells
               if c.metadata.get("nbgrader", {}).get("grade_id") == "test-input-format")
    assert lost == 2
    assert float(rows[("carol_one_wrong", CHAPTER)]["score"]) == max_points(CHAPTER) - lost, out
    assert ("carol_one_wrong", "02_embeddings") not in rows, "a chapter not submitted is not graded"


def test_malformed_submission_is_reported_and_others_graded(graded):
    _, rows, _, out = graded
    assert rows[("dave_malformed", CHAPTER)]["score"] == ""
    assert "not a notebook file" in rows[("dave_malformed", CHAPTER)]["problem"]
    assert "NOT GRADED" in out and rows[("alice_solution", CHAPTER)]["score"] != ""


def test_feedback_hides_hidden_tests_and_solutions(graded):
    course, _, _, _ = graded
    secrets = secret_lines(read(ROOT / "solutions" / f"{CHAPTER}.ipynb"))
    assert len(secrets) > 20
    pages = list((course / "feedback").rglob(f"{CHAPTER}.html"))
    assert {p.parent.parent.name for p in pages} >= {"alice_solution", "bob_untouched", "carol_one_wrong"}
    import html

    hidden_probe = 'build_inputs(("a",), ("b", "c"))'
    hide_note = "this test failed. Its details are not shown"
    for page in pages:
        text = html.unescape(page.read_text(encoding="utf-8"))
        student = page.parent.parent.name
        assert "BEGIN HIDDEN TESTS" not in text and hidden_probe not in text, student
        if student == "bob_untouched":  # every test cell fails; none shows its traceback or the solutions
            assert text.count(hide_note) == 6, text.count(hide_note)
            leaked = [s for s in secrets if s in text]
            assert not leaked, leaked[:3]
        if student == "carol_one_wrong":  # the failing visible test's message (with its values) is not shown
            assert text.count(hide_note) == 1
            assert text.count("B and its [SEP] are segment 1") == 1  # the test's source only, not its error
        if student == "alice_solution":
            assert hide_note not in text


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_no_feedback_reveals_a_chapters_solutions_or_hidden_tests(graded, chapter):
    import html

    course, _, _, _ = graded
    secrets = secret_lines(read(ROOT / "solutions" / f"{chapter}.ipynb"))
    pages = list((course / "feedback").rglob(f"{chapter}.html"))
    assert len(pages) >= 2 and len(secrets) >= 10
    for page in pages:
        text = html.unescape(page.read_text(encoding="utf-8"))
        assert "BEGIN HIDDEN TESTS" not in text and "BEGIN SOLUTION" not in text
        if page.parent.parent.name == "bob_untouched":
            leaked = [s for s in secrets if s in text]
            assert not leaked, leaked[:3]


def test_grading_does_not_touch_the_reference_package(graded):
    _, _, before, _ = graded
    assert package_digest() == before
