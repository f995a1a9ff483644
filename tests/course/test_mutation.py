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
