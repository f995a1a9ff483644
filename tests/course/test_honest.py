"""The honest suite (autograder/honest.py): correct answers written in the styles real students use keep full marks
under the real nbgrader autograde, hidden tests included. Graded in the session's one class run
(conftest.graded_class, students `o<chapter[:2]>-<name>`); docs/honest.md is the table this run produces.

That each variant IS correct is proven apart, by running the solution notebook with it in a plain Jupyter kernel:
`python -m autograder.honest --check` (minutes; not part of this module)."""

from __future__ import annotations

import pytest
from conftest import ROOT, _autograder

honest = _autograder("honest")
VARIANTS = honest.variants()


def test_there_are_at_least_40_variants_over_6_chapters():
    assert len(VARIANTS) >= 40, f"{len(VARIANTS)} honest variants"
    chapters = {v.chapter for v in VARIANTS}
    assert len(chapters) >= 6, sorted(chapters)
    for chapter in ("02_embeddings", "04_masking", "07_task_heads", "10_beyond_bert"):
        n = sum(v.chapter == chapter for v in VARIANTS)
        assert n >= 3, f"{chapter}: {n} honest variants (at least 3 needed)"
    assert len({v.student for v in VARIANTS}) == len(VARIANTS)


def test_every_variant_builds_against_the_current_solutions():
    for v in VARIANTS:  # a stale (old, new) edit stops with the reason
        nb = honest.submission(v)
        released = {c.id for c in honest.mutation.submission(v.chapter, None).cells}
        added = [c for c in nb.cells if c.id not in released]
        assert [c.source for c in added] == v.added_before + v.added_cells, v.name
        assert all(c.cell_type == "code" and "nbgrader" not in c.metadata for c in added), v.name
        assert len({c.id for c in nb.cells}) == len(nb.cells), f"{v.name}: duplicate cell ids"


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS, ids=[v.student for v in VARIANTS])
def test_honest_variant_keeps_full_marks(graded_class, variant):
    problem = graded_class.catalogue_problems.get("honest") or graded_class.catalogue_problems.get(
        f"honest/{variant.name}")
    assert not problem, problem
    assert graded_class.students.get(variant.student) == ("honest", variant), f"{variant.student} was not submitted"
    got = honest.outcomes(graded_class.report, variant.chapter)
    control, mine = got.get(honest.CONTROL), got.get(variant.student)
    full = sum(honest.mutation.points(variant.chapter).values())
    assert control is not None and control.score == full, (
        f"{variant.chapter}: the control scored {control.score if control else None} of {full}")
    assert mine is not None and mine.score is not None, (
        f"{variant.student} was not graded: {mine.problem if mine else 'no row in the report'}")
    assert mine.score == control.score, (
        f"{variant.student} ({variant.exercise}: {variant.why}) is correct but scored {mine.score:g} of "
        f"{control.score:g}; failing test cells: {', '.join(mine.failed) or 'none'}"
        + (f"; flagged: {mine.problem}" if mine.problem else ""))


@pytest.mark.slow
def test_the_honest_table_in_the_docs_is_the_one_this_run_produces(graded_class):
    fresh = honest.document(graded_class.report)
    (ROOT / "build").mkdir(exist_ok=True)
    (ROOT / "build" / "honest.md").write_text(fresh, encoding="utf-8")
    docs = ROOT / "docs" / "honest.md"
    assert docs.exists() and docs.read_text(encoding="utf-8") == fresh, (
        "docs/honest.md is not the table this run produced: review build/honest.md and copy it to docs/")
