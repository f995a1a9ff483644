"""Hostile and broken submissions (autograder/hostile.py) in the session's one class run (conftest.graded_class).

For each case: the score it must get (0 for every attack: its answers are wrong), whether it is flagged for review,
or reported as not gradable with the reason. For the class: the batch completes, honest students keep their grades,
the gradebook holds exactly the expected rows, nothing of the instructor's changes (reference package, solutions,
installed environment), no process of a submission outlives grading, and no feedback page leaks a hidden test.
"""

from __future__ import annotations

import html
import subprocess
import time
from pathlib import Path

import nbformat
import pytest
from conftest import ROOT, _autograder, read

from minibert_course.nbgrader_ext import secret_lines

pytestmark = pytest.mark.slow
hostile = _autograder("hostile")
CASES = hostile.cases(Path("/course"))  # names and expectations only; the real paths are set by the fixture


def full_marks() -> float:
    nb = read(ROOT / "solutions" / f"{hostile.CHAPTER}.ipynb")
    return sum(c.metadata["nbgrader"].get("points", 0) for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade"))


def row_of(graded_class, name: str) -> dict:
    rows = [r for r in graded_class.report.rows if r["student"] == f"h-{name}"]
    assert len(rows) == 1, f"h-{name}: {len(rows)} rows in the report"
    return rows[0]


def test_there_are_at_least_25_cases():
    assert len(CASES) >= 25
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_outcome(graded_class, case):
    from minibert_course.sealed import Sandbox

    if case.needs_sandbox and not Sandbox().works:
        pytest.skip(f"{case.name}: only the bubblewrap sandbox stops this attack, and bubblewrap is not available "
                    "here (apt-get install bubblewrap); the case was not submitted")
    row = row_of(graded_class, case.name)
    if not case.graded:
        assert row["score"] == "" and row["problem"], row
        return
    assert row["score"] != "", f"{case.name} was not graded: {row['problem']}"
    score = float(row["score"])
    expected = {"zero": 0.0, "full": full_marks(),
                "all-but-count": full_marks() - hostile.points_of("test-count")}[case.expect]
    assert score == expected, f"{case.name} ({case.what}): expected {expected}, got {score}; {row}"
    if case.flagged is True:
        assert row["flags"] or row["review"], f"{case.name} must be flagged for review: {row}"
    if case.flagged is False:
        assert not row["flags"] and not row["review"], f"{case.name} must not be flagged: {row}"


def test_renamed_notebook_is_graded_and_noted(graded_class):
    row = row_of(graded_class, "renamed-notebook")
    assert "renamed notebook" in row["notes"], row


def test_the_summary_names_every_flagged_and_ungraded_case(graded_class):
    summary = (graded_class.course / "summary.txt").read_text(encoding="utf-8")
    for case in CASES:
        row = row_of(graded_class, case.name)
        if row["flags"]:
            assert f"FLAGGED h-{case.name} 02_embeddings (graded 0)" in summary, case.name
        elif row["review"]:
            assert f"FLAGGED h-{case.name} 02_embeddings (graded)" in summary, case.name
        if not case.graded:
            assert f"NOT GRADED h-{case.name} 02_embeddings" in summary, case.name
    assert "sandbox: bubblewrap sandbox" in summary or "NO FILESYSTEM ISOLATION" in summary


def test_the_gradebook_holds_exactly_the_expected_rows(graded_class):
    from nbgrader.api import Gradebook

    expected = {(r["student"], r["assignment"]) for r in graded_class.report.rows if r["score"] != ""}
    with Gradebook(f"sqlite:///{graded_class.course / 'gradebook.db'}", "minibert") as gb:
        got = {}
        for assignment in gb.assignments:
            for sub in gb.assignment_submissions(assignment.name):
                got[(sub.student.id, assignment.name)] = (sub.score, sub.max_score)
    assert set(got) == expected
    by_row = {(r["student"], r["assignment"]): r for r in graded_class.report.rows}
    for key, (score, max_score) in got.items():
        assert 0 <= score <= max_score, key
        assert score == float(by_row[key]["score"]), key


def test_nothing_of_the_instructors_changed(graded_class):
    from conftest import tree_digest

    assert tree_digest(ROOT / "src" / "minibert") == graded_class.before["package"]
    assert tree_digest(ROOT / "solutions") == graded_class.before["solutions"]
    site = Path(nbformat.__file__).parents[1]
    assert sorted(p.name for p in site.glob("*.pth")) == graded_class.before["site_pth"]


def test_no_submission_process_outlives_grading(graded_class):
    deadline = time.monotonic() + 10
    while True:
        ps = subprocess.run(["ps", "-eo", "uid=,pid=,args="], capture_output=True, text=True).stdout
        workers = range(61000, 61000 + 2)  # the class run's two shards
        leftovers = [line for line in ps.splitlines() if line.split() and int(line.split()[0]) in workers]
        if not leftovers or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert not leftovers, leftovers


def test_no_feedback_page_leaks_a_hidden_test(graded_class):
    secrets = secret_lines(read(ROOT / "solutions" / f"{hostile.CHAPTER}.ipynb"))
    pages = [p for p in (graded_class.course / "feedback").glob(f"h-*/{hostile.CHAPTER}/*.html")]
    submitted = {s for s, v in graded_class.students.items() if v[0] == "hostile"}
    graded = [c for c in CASES if c.graded and f"h-{c.name}" in submitted]
    assert len(pages) == len(graded), sorted(p.parent.parent.name for p in pages)
    for page in pages:
        text = html.unescape(page.read_text(encoding="utf-8"))
        assert "BEGIN HIDDEN TESTS" not in text, page
        leaked = [s for s in secrets if s in text]
        assert not leaked, (page.parent.parent.name, leaked[:3])
        assert len(text) < 5 * 2**20, f"{page}: {len(text)} characters (the 50 MB output must not reach feedback)"


def test_honest_students_keep_their_grades(graded_class):
    rows = {(r["student"], r["assignment"]): r for r in graded_class.report.rows}
    assert float(rows[("control", hostile.CHAPTER)]["score"]) == full_marks()


def hostile_table(graded_class) -> str:
    lines = ["# Hostile and broken submissions", "",
             "Generated by tests/test_hostile.py from the suite's class run (autograder/hostile.py, chapter 02, "
             f"{full_marks():g} points). Every attack answers the exercises wrongly, so any point it got would be "
             "undeserved.", "",
             "| case | what it does | expected | observed | flagged for review (reason) |", "|---|---|---|---|---|"]
    for case in CASES:
        rows = [r for r in graded_class.report.rows if r["student"] == f"h-{case.name}"]
        if not rows:
            lines.append(f"| `{case.name}` | {case.what} | {case.expect} | not submitted (no sandbox here) | |")
            continue
        row = rows[0]
        observed = f"{float(row['score']):g}/{float(row['max_score']):g}" if row["score"] != "" else \
            f"not graded: {row['problem'].split(' (')[0]}"
        expected = "not graded" if not case.graded else case.expect
        reason = (row["flags"] or row["review"]).replace("|", "\\|")
        lines.append(f"| `{case.name}` | {case.what} | {expected} | {observed} | {reason} |")
    return "\n".join(lines) + "\n"


def test_the_hostile_table_in_the_docs_is_the_one_this_run_produces(graded_class):
    fresh = hostile_table(graded_class)
    (ROOT / "build").mkdir(exist_ok=True)
    (ROOT / "build" / "hostile.md").write_text(fresh, encoding="utf-8")
    docs = ROOT / "docs" / "hostile.md"
    assert docs.exists() and docs.read_text(encoding="utf-8") == fresh, (
        "docs/hostile.md differs from this run's outcomes: review build/hostile.md and copy it to docs/")
