"""Hostile and broken submissions (autograder/hostile.py) in the session's one class run (conftest.graded_class).

For each case: the score it must get (0 for every attack: its answers are wrong), whether it is flagged for review,
or reported as not gradable with the reason. For the class: the batch completes, honest students keep their grades,
the gradebook holds exactly the expected rows, nothing of the instructor's changes (reference package, solutions,
installed environment), no process of a submission outlives grading, no feedback page leaks a hidden test, nothing
the student's functions print during the tests reaches feedback or the autograded notebooks, no payload a result
carries ran where the grader runs, and no active HTML of a markdown answer reaches the autograded notebook.
"""

from __future__ import annotations

import html
import json
import re
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


def full_marks(chapter: str = hostile.CHAPTER) -> float:
    """Every autograded point of the chapter (a manually graded answer scores 0 until a grader marks it)."""
    nb = read(ROOT / "solutions" / f"{chapter}.ipynb")
    return sum(c.metadata["nbgrader"].get("points", 0) for c in nb.cells
               if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code")


def row_of(graded_class, name: str) -> dict:
    rows = [r for r in graded_class.report.rows if r["student"] == f"h-{name}"]
    assert len(rows) == 1, f"h-{name}: {len(rows)} rows in the report"
    return rows[0]


def test_there_are_at_least_74_cases():
    assert len(CASES) >= 74
    assert len({c.name for c in CASES}) == len(CASES)
    assert all(c.expect in ("zero", "full", "all-but-count") for c in CASES)
    assert all(c.expect != "all-but-count" or c.chapter == hostile.CHAPTER for c in CASES)


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
    expected = {"zero": 0.0, "full": full_marks(case.chapter),
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
            assert f"FLAGGED h-{case.name} {case.chapter} (a run-time fault)" in summary, case.name
        elif row["review"]:
            assert f"FLAGGED h-{case.name} {case.chapter} (review note)" in summary, case.name
        if not case.graded:
            assert f"NOT GRADED h-{case.name} {case.chapter}" in summary, case.name
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
    chapters = {c.chapter for c in CASES}
    secrets = {ch: secret_lines(read(ROOT / "solutions" / f"{ch}.ipynb")) for ch in chapters}
    pages = [p for ch in sorted(chapters) for p in (graded_class.course / "feedback").glob(f"h-*/{ch}/*.html")]
    submitted = {s for s, v in graded_class.students.items() if v[0] == "hostile"}
    graded = [c for c in CASES if c.graded and f"h-{c.name}" in submitted]
    assert len(pages) == len(graded), sorted(p.parent.parent.name for p in pages)
    for page in pages:
        text = html.unescape(page.read_text(encoding="utf-8"))
        assert "BEGIN HIDDEN TESTS" not in text, page
        leaked = [s for s in secrets[page.parent.name] if s in text]
        assert not leaked, (page.parent.parent.name, leaked[:3])
        assert len(text) < 5 * 2**20, f"{page}: {len(text)} characters (the 50 MB output must not reach feedback)"


def _test_cells(path: Path) -> list:
    """The test cells (visible and hidden tests) of an autograded notebook."""
    return [c for c in read(path).cells
            if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")]


def test_what_the_students_functions_print_during_the_tests_never_reaches_feedback(graded_class):
    """print-leak: honest answers whose functions print LEAK-MARKER and the hidden tests' arguments when a hidden
    test calls them. No feedback page of the class and no test cell's output in any autograded notebook shows it."""
    case = next(c for c in CASES if c.name == "print-leak")
    cells = json.loads(hostile.build(case))["cells"]
    built = "\n".join("".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in cells)
    assert '"LEAK" + "-MARKER ' in built and hostile.LEAK_MARKER not in built  # it prints it; its source never holds it
    course = graded_class.course
    pages = sorted((course / "feedback").rglob("*.html"))
    assert any(p.parent.parent.name == f"h-{case.name}" for p in pages), "print-leak has no feedback page"
    leaking = [str(p) for p in pages if hostile.LEAK_MARKER in html.unescape(p.read_text(encoding="utf-8"))]
    assert not leaking, leaking
    notebooks = sorted((course / "autograded").rglob("*.ipynb"))
    assert any(p.parts[-3] == f"h-{case.name}" for p in notebooks), "print-leak has no autograded notebook"
    for path in notebooks:
        for c in _test_cells(path):
            outputs = json.dumps(c.get("outputs", []))
            assert hostile.LEAK_MARKER not in outputs, (str(path), c.metadata["nbgrader"]["grade_id"])


def test_no_payload_carried_by_a_result_ran_where_the_grader_runs(graded_class):
    """reduce-result and stand-in-callback-abuse hand the grader objects whose __reduce__ runs a payload that
    leaves a file next to the course folder, which the sandboxed worker cannot reach: nothing may be there."""
    marks = hostile.evidence_dir(graded_class.course)
    found = sorted(p.name for p in marks.iterdir()) if marks.exists() else []
    assert not found, f"payloads ran outside the sandbox: {found}"


def test_active_html_in_a_markdown_answer_never_reaches_the_autograded_notebook(graded_class):
    """markdown-active-html (chapter 07): its manually graded answer holds <script>, <img onerror=...> and
    <iframe src=javascript:...>. The graders still get the answer's text; no markdown cell of its autograded
    notebook keeps anything active."""
    case = next(c for c in CASES if c.name == "markdown-active-html")
    path = graded_class.course / "autograded" / f"h-{case.name}" / case.chapter / f"{case.chapter}.ipynb"
    assert path.exists(), path
    markdown = [c.source for c in read(path).cells if c.cell_type == "markdown"]
    assert any(hostile.MARKDOWN_PROSE in m for m in markdown), "the answer's text did not reach the graders"
    active_forms = [re.compile(r"<\s*script", re.I), re.compile(r"<[^>]*\son\w+\s*=", re.I),
                    re.compile(r"<[^>]*\b(?:href|src|action|data)\s*=\s*[\"']?\s*(?:java|vb)script:", re.I),
                    re.compile(r"\]\(\s*(?:java|vb)script:", re.I)]  # tags and markdown links that would run
    for source in markdown:
        active = [p.pattern for p in active_forms if p.search(source)]
        assert not active, (active, source[:300])  # escaped text such as &lt;script&gt; is inert and may stay


def test_honest_students_keep_their_grades(graded_class):
    rows = {(r["student"], r["assignment"]): r for r in graded_class.report.rows}
    assert float(rows[("control", hostile.CHAPTER)]["score"]) == full_marks()


def hostile_table(graded_class) -> str:
    lines = ["# Hostile and broken submissions", "",
             "Generated by tests/course/test_hostile.py from the suite's class run (autograder/hostile.py, chapter 02, "
             f"{full_marks():g} points, unless a case names another chapter). Every attack answers the exercises "
             "wrongly, so any point it got would be undeserved.", "",
             "| case | what it does | expected | observed | flagged for review (reason) |", "|---|---|---|---|---|"]
    for case in CASES:
        rows = [r for r in graded_class.report.rows if r["student"] == f"h-{case.name}"]
        name = f"`{case.name}`" + ("" if case.chapter == hostile.CHAPTER else f" ({case.chapter})")
        what = case.what.replace("|", "\\|")
        if not rows:
            lines.append(f"| {name} | {what} | {case.expect} | not submitted (no sandbox here) | |")
            continue
        row = rows[0]
        observed = f"{float(row['score']):g}/{float(row['max_score']):g}" if row["score"] != "" else \
            f"not graded: {row['problem'].split(' (')[0]}"
        expected = "not graded" if not case.graded else case.expect
        reason = (row["flags"] or row["review"]).replace("|", "\\|")
        lines.append(f"| {name} | {what} | {expected} | {observed} | {reason} |")
    return "\n".join(lines) + "\n"


def test_the_hostile_table_in_the_docs_is_the_one_this_run_produces(graded_class):
    fresh = hostile_table(graded_class)
    (ROOT / "build").mkdir(exist_ok=True)
    (ROOT / "build" / "hostile.md").write_text(fresh, encoding="utf-8")
    docs = ROOT / "docs" / "hostile.md"
    assert docs.exists() and docs.read_text(encoding="utf-8") == fresh, (
        "docs/hostile.md differs from this run's outcomes: review build/hostile.md and copy it to docs/")
