"""The mutation catalogue: plausible wrong implementations of every graded exercise, graded for real.

    python -m autograder.mutation [--chapter 04_masking ...] [--quick] [--jobs N] [--table docs/mutation.md]

`autograder/mutants/<chapter>.py` lists, per chapter, wrong implementations (`MUTANTS`: exercise = the grade_id of
a solution cell, a name, why it is wrong, and (old, new) edits of that cell). For each chapter this builds one
submission per mutant (the released notebook answered with the solutions, one cell edited) plus the control (the
solutions unedited), grades them all in ONE `make grade` run (real `nbgrader autograde`, hidden tests included) and
reports the points each mutant loses. It fails when a mutant keeps full marks or the control loses a point: a
graded test is only as good as the wrong answers it rejects.

`--quick` skips nbgrader: it runs each mutated solution notebook (hidden tests in place) through the same sealed
executor the grader uses, and reads the failing test cells. For a fast check while writing tests.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from minibert_course.chapters import stems

ROOT = Path(__file__).resolve().parents[1]
MUTANTS_DIR = ROOT / "autograder" / "mutants"
CONTROL = "control"
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")


@dataclass
class Mutant:
    chapter: str
    exercise: str  # grade_id of the solution cell
    name: str
    why: str
    edits: list[tuple[str, str]]

    @property
    def student(self) -> str:
        return f"mutant-{self.name}"


@dataclass
class Outcome:
    student: str
    score: float | None
    max_score: float
    failed: list[str] = field(default_factory=list)  # grade_ids of the test cells that lost points
    problem: str = ""


def chapters() -> list[str]:
    return stems(ROOT)


def load_catalogue(chapter: str) -> list[Mutant]:
    path = MUTANTS_DIR / f"{chapter}.py"
    if not path.exists():
        return []
    spec = importlib.util.spec_from_file_location(f"mutants_{chapter}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    mutants = [Mutant(chapter, m["exercise"], m["name"], m["why"], [tuple(e) for e in m["edits"]])
               for m in module.MUTANTS]
    names = [m.name for m in mutants]
    bad = [n for n in names if not _NAME.match(n) or names.count(n) > 1]
    if bad:
        raise SystemExit(f"{path}: mutant names must be unique and [a-z0-9-]+: {sorted(set(bad))}")
    return mutants


def solution_cells(nb) -> dict[str, nbformat.NotebookNode]:
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("solution")}


def mutate(source: str, mutant: Mutant) -> str:
    """The solution cell's source with the mutant's edits; each `old` must occur exactly once."""
    for old, new in mutant.edits:
        count = source.count(old)
        if count != 1:
            raise SystemExit(
                f"mutant {mutant.chapter}/{mutant.name}: {old!r} occurs {count} times in {mutant.exercise} "
                "(must be exactly once): update autograder/mutants/ to the current solution."
            )
        if old == new:
            raise SystemExit(f"mutant {mutant.chapter}/{mutant.name}: an edit changes nothing")
        source = source.replace(old, new)
    return source


def strip_markers(source: str) -> str:
    from minibert_course.export import strip_solution_markers

    return strip_solution_markers(source)


def submission(chapter: str, mutant: Mutant | None) -> nbformat.NotebookNode:
    """The released notebook answered with the solutions (markers dropped), the mutant's cell edited."""
    release = nbformat.read(ROOT / "notebooks" / f"{chapter}.ipynb", as_version=4)
    answers = solution_cells(nbformat.read(ROOT / "solutions" / f"{chapter}.ipynb", as_version=4))
    if mutant is not None and mutant.exercise not in answers:
        raise SystemExit(f"mutant {chapter}/{mutant.name}: no solution cell {mutant.exercise!r} "
                         f"(solution cells: {sorted(answers)})")
    for cell in release.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.metadata.get("nbgrader", {}).get("solution"):
            source = answers[gid].source
            if mutant is not None and gid == mutant.exercise:
                source = mutate(source, mutant)
            cell.source = strip_markers(source)
    return release


def points(chapter: str) -> dict[str, float]:
    nb = nbformat.read(ROOT / "solutions" / f"{chapter}.ipynb", as_version=4)
    return {c.metadata["nbgrader"]["grade_id"]: float(c.metadata["nbgrader"].get("points", 0)) for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"}


def run_quick(chapter: str, mutants: list[Mutant]) -> dict[str, Outcome]:
    from minibert_course.sealed import plan_submission, run_cells

    pts = points(chapter)
    outcomes = {}
    source = nbformat.read(ROOT / "solutions" / f"{chapter}.ipynb", as_version=4)
    for mutant in [None, *mutants]:
        student = CONTROL if mutant is None else mutant.student
        # planned as nbgrader's autograde plans a submission: given cells, tests and the answers' imports and
        # names from the instructor's notebook, only the answer cells from the mutant
        plan = plan_submission(source, nbformat.from_dict(submission(chapter, mutant)))
        result = run_cells(plan, chapter=chapter)
        failed = [c.grade_id for c in result.cells if c.grade_id in pts and not c.passed]
        total = sum(pts.values())
        outcomes[student] = Outcome(student, total - sum(pts[g] for g in failed), total, failed,
                                    "; ".join(result.flags))
        print(f"  {chapter} {student:40s} {outcomes[student].score:g}/{total:g} failed: {failed}", flush=True)
    return outcomes


def run_real(chapter: str, mutants: list[Mutant], work: Path, jobs: int) -> dict[str, Outcome]:
    from autograder import grade

    subs = work / "submissions"
    shutil.rmtree(work, ignore_errors=True)
    for mutant in [None, *mutants]:
        student = CONTROL if mutant is None else mutant.student
        folder = subs / student / chapter
        folder.mkdir(parents=True)
        nbformat.write(submission(chapter, mutant), folder / f"{chapter}.ipynb")
    course = work / "course"
    report = grade.grade(course, subs, [chapter], jobs=jobs, quiet=True)
    return outcomes_from(report, chapter)


def outcomes_from(report, chapter: str, students: dict[str, str] | None = None) -> dict[str, Outcome]:
    """Outcomes of a `grade.grade` report for one chapter; `students` maps the report's student ids to the
    mutation ids (CONTROL, mutant-NAME) when the run graded other submissions too."""
    pts = points(chapter)
    outcomes = {}
    for row in report.rows:
        if row["assignment"] != chapter or (students is not None and row["student"] not in students):
            continue
        key = students[row["student"]] if students is not None else row["student"]
        score = float(row["score"]) if row["score"] != "" else None
        failed = [gid for gid, got in report.cell_scores.get((row["student"], chapter), {}).items()
                  if gid in pts and got < pts[gid]]
        outcomes[key] = Outcome(key, score, sum(pts.values()), failed, row["problem"] or row["flags"])
    return outcomes


def table(chapter: str, mutants: list[Mutant], outcomes: dict[str, Outcome]) -> list[str]:
    control = outcomes.get(CONTROL)
    lines = [f"### {chapter}", "",
             f"Control (the solutions): {control.score:g}/{control.max_score:g}." if control and control.score
             is not None else "Control: NOT GRADED", "",
             "| exercise | mutant | what is wrong | score | points lost | failing tests |",
             "|---|---|---|---|---|---|"]
    for m in mutants:
        o = outcomes.get(m.student)
        if o is None or o.score is None:
            lines.append(f"| `{m.exercise}` | `{m.name}` | {m.why} | not graded | - | {o.problem if o else ''} |")
            continue
        lines.append(f"| `{m.exercise}` | `{m.name}` | {m.why} | {o.score:g}/{o.max_score:g} | "
                     f"{o.max_score - o.score:g} | {', '.join(f'`{g}`' for g in o.failed)} |")
    return lines


def document(lines: list[str]) -> str:
    head = ["# The mutation catalogue", "",
            "Generated by `make mutation` (autograder/mutation.py), checked by tests/course/test_mutation.py. Each row "
            "is a plausible wrong implementation of a graded exercise (autograder/mutants/), submitted and graded by "
            "the real `nbgrader autograde`, hidden tests included; every one must lose points while the solutions keep "
            "full marks.", ""]
    return "\n".join(head + lines).rstrip("\n") + "\n"


def signatures_of(mutants: list[Mutant], outcomes: dict[str, Outcome]) -> dict[str, list[str]]:
    """{mutant name: the test cells it fails}: what autograder/diagnosis.py recognises a mistake by."""
    return {m.name: sorted(outcomes[m.student].failed) for m in mutants
            if m.student in outcomes and outcomes[m.student].score is not None}


def verdict(chapter: str, mutants: list[Mutant], outcomes: dict[str, Outcome]) -> list[str]:
    problems = []
    control = outcomes.get(CONTROL)
    if control is None or control.score is None or control.score < control.max_score:
        problems.append(f"{chapter}: the control (solutions) lost points: "
                        f"{control.score if control else None}, failing {control.failed if control else '?'}")
    for m in mutants:
        o = outcomes.get(m.student)
        if o is None or o.score is None:
            problems.append(f"{chapter}/{m.name}: not graded ({o.problem if o else 'missing'})")
        elif o.score >= o.max_score:
            problems.append(f"{chapter}/{m.name} ({m.exercise}) keeps full marks: {m.why}")
    exercises = {gid for gid, c in solution_cells(nbformat.read(ROOT / "solutions" / f"{chapter}.ipynb",
                                                             as_version=4)).items()
                 if c.cell_type == "code"}  # a manually graded answer (markdown) is graded by a person
    for ex in sorted(exercises):
        n = sum(m.exercise == ex for m in mutants)
        if n < 3:
            problems.append(f"{chapter}: exercise {ex} has {n} mutants (at least 3 needed)")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.mutation", description=__doc__.split("\n")[0])
    parser.add_argument("--chapter", action="append", help="chapters (default: all)")
    parser.add_argument("--quick", action="store_true", help="no nbgrader: the sealed grader on each submission")
    parser.add_argument("--jobs", type=int, default=1, help="parallel grading workers")
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "mutation")
    parser.add_argument("--table", type=Path, help="write the markdown table here")
    parser.add_argument("--signatures", type=Path, help="write the mutants' signatures (autograder/diagnosis.py) "
                                                         "here, keeping the chapters not run")
    args = parser.parse_args(argv)
    selected = args.chapter or chapters()
    lines, problems, signatures = [], [], {}
    for chapter in selected:
        mutants = load_catalogue(chapter)
        start = time.perf_counter()
        print(f"{chapter}: control + {len(mutants)} mutants ({'quick' if args.quick else 'nbgrader autograde'})",
              flush=True)
        if args.quick:
            outcomes = run_quick(chapter, mutants)
        else:
            outcomes = run_real(chapter, mutants, args.work / chapter, args.jobs)
        print(f"{chapter}: {time.perf_counter() - start:.0f} s", flush=True)
        lines += table(chapter, mutants, outcomes) + [""]
        problems += verdict(chapter, mutants, outcomes)
        signatures[chapter] = signatures_of(mutants, outcomes)
    text = document(lines)
    print(text)
    if args.table:
        args.table.parent.mkdir(parents=True, exist_ok=True)
        args.table.write_text(text, encoding="utf-8")
    if args.signatures:
        from autograder.diagnosis import load_signatures, write_signatures

        write_signatures({**load_signatures(args.signatures), **signatures}, args.signatures)
    if problems:
        print("PROBLEMS:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    print("every mutant loses points; the control keeps full marks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
