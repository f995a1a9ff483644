"""The mutation catalogue (autograder/mutants/): every plausible wrong implementation loses points under the real
nbgrader autograde, hidden tests included, and the control (the solutions) keeps full marks. Graded in the session's
one class run (conftest.graded_class); docs/mutation.md is the table this run produces."""

from __future__ import annotations

import pytest
from conftest import ROOT, SOLUTIONS, _autograder

pytestmark = pytest.mark.slow
CHAPTERS = [p.stem for p in SOLUTIONS]


def outcomes(graded_class, chapter):
    mutation = _autograder("mutation")
    ids = {"control": mutation.CONTROL}
    ids |= {s: v[1].student for s, v in graded_class.students.items() if v[0] == "mutant" and v[1].chapter == chapter}
    return mutation, mutation.outcomes_from(graded_class.report, chapter, ids)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_mutant_loses_points_and_the_control_keeps_full_marks(graded_class, chapter):
    assert chapter not in graded_class.catalogue_problems, graded_class.catalogue_problems.get(chapter)
    mutation, got = outcomes(graded_class, chapter)
    mutants = mutation.load_catalogue(chapter)
    assert mutants, f"no mutants for {chapter} in autograder/mutants/{chapter}.py"
    problems = mutation.verdict(chapter, mutants, got)
    assert not problems, "\n".join(problems)


def test_the_table_in_the_docs_is_the_one_this_run_produces(graded_class):
    mutation = _autograder("mutation")
    lines = []
    for chapter in CHAPTERS:
        _, got = outcomes(graded_class, chapter)
        lines += mutation.table(chapter, mutation.load_catalogue(chapter), got) + [""]
    fresh = mutation.document(lines)
    docs = ROOT / "docs" / "mutation.md"
    (ROOT / "build").mkdir(exist_ok=True)
    (ROOT / "build" / "mutation.md").write_text(fresh, encoding="utf-8")
    assert docs.exists() and docs.read_text(encoding="utf-8") == fresh, (
        "docs/mutation.md is not the table this run produced: run `make mutation` (or copy build/mutation.md)")


def test_the_signatures_are_the_ones_this_run_produces(graded_class):
    """autograder/mutants/signatures.json (what the diagnosis recognises a mistake by) is what this run graded."""
    mutation = _autograder("mutation")
    fresh = {}
    for chapter in CHAPTERS:
        _, got = outcomes(graded_class, chapter)
        fresh[chapter] = mutation.signatures_of(mutation.load_catalogue(chapter), got)
    assert _autograder("diagnosis").load_signatures() == fresh, (
        "autograder/mutants/signatures.json is not what this run produced: run `make mutation`")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_feedback_names_each_mutants_mistake_and_none_for_the_control(graded_class, chapter):
    """Each mutant's judge report and feedback page name its own mistake (with the others of the same signature);
    the control's name none."""
    import html
    import json

    mutation = _autograder("mutation")
    course = graded_class.course
    problems = []
    for student, (kind, m) in graded_class.students.items():
        if kind != "mutant" or m.chapter != chapter:
            continue
        report = json.loads((course / "judge-reports" / chapter / f"{student}.json").read_text(encoding="utf-8"))
        if m.why not in report["diagnosis"]:
            problems.append(f"{m.name}: the diagnosis {report['diagnosis']} does not name it")
        page = html.unescape((course / "feedback" / student / chapter / f"{chapter}.html").read_text(
            encoding="utf-8"))
        if "Diagnosis: this looks like" not in page or m.why not in page:
            problems.append(f"{m.name}: the feedback page does not name it")
    control = json.loads((course / "judge-reports" / chapter / f"{mutation.CONTROL}.json").read_text(
        encoding="utf-8"))
    if control["diagnosis"]:
        problems.append(f"the control is diagnosed: {control['diagnosis']}")
    assert not problems, "\n".join(problems[:10])
