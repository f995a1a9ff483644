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
from conftest import ROOT, filled_submission, read

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


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    subs = tmp_path_factory.mktemp("submissions")
    release = ROOT / "notebooks" / f"{CHAPTER}.ipynb"
    solution = ROOT / "solutions" / f"{CHAPTER}.ipynb"
    cases = {
        "alice_solution": filled_submission(release, solution),
        "bob_untouched": read(release),
        "carol_one_wrong": filled_submission(release, solution, {"input-format-solution": WRONG_INPUT_FORMAT}),
    }
    for student, nb in cases.items():
        (subs / student / CHAPTER).mkdir(parents=True)
        nbformat.write(nb, subs / student / CHAPTER / f"{CHAPTER}.ipynb")
    (subs / "dave_malformed" / CHAPTER).mkdir(parents=True)
    (subs / "dave_malformed" / CHAPTER / f"{CHAPTER}.ipynb").write_text('{"cells": [', encoding="utf-8")
    course = tmp_path_factory.mktemp("course")
    before = package_digest()
    run = subprocess.run([sys.executable, str(ROOT / "autograder" / "grade.py"), "--course", str(course),
                          "--submissions", str(subs), "--assignment", CHAPTER],
                         capture_output=True, text=True, timeout=1200)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = {r["student"]: r for r in csv.DictReader(open(course / "grades.csv", encoding="utf-8"))}
    return course, rows, before, run.stdout


def max_points() -> float:
    return sum(c.metadata["nbgrader"].get("points", 0) for c in read(ROOT / "solutions" / f"{CHAPTER}.ipynb").cells
               if c.metadata.get("nbgrader", {}).get("grade"))


def test_solution_gets_full_marks(graded):
    _, rows, _, out = graded
    assert float(rows["alice_solution"]["score"]) == max_points() == float(rows["alice_solution"]["max_score"]), out


def test_untouched_release_gets_zero(graded):
    _, rows, _, out = graded
    assert float(rows["bob_untouched"]["score"]) == 0.0, out


def test_one_wrong_exercise_loses_exactly_its_points(graded):
    _, rows, _, out = graded
    points = read(ROOT / "solutions" / f"{CHAPTER}.ipynb")
    lost = sum(c.metadata["nbgrader"]["points"] for c in points.cells
               if c.metadata.get("nbgrader", {}).get("grade_id") == "test-input-format")
    assert lost == 2
    assert float(rows["carol_one_wrong"]["score"]) == max_points() - lost, out


def test_malformed_submission_is_reported_and_others_graded(graded):
    _, rows, _, out = graded
    assert rows["dave_malformed"]["score"] == ""
    assert "not a notebook file" in rows["dave_malformed"]["problem"]
    assert "NOT GRADED" in out and rows["alice_solution"]["score"] != ""


def test_feedback_hides_hidden_tests_and_solutions(graded):
    course, _, _, _ = graded
    secrets = secret_lines(read(ROOT / "solutions" / f"{CHAPTER}.ipynb"))
    assert len(secrets) > 20
    pages = list((course / "feedback").rglob("*.html"))
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


def test_grading_does_not_touch_the_reference_package(graded):
    _, _, before, _ = graded
    assert package_digest() == before
