"""Shared fixtures: the repository paths, a sandboxed Jupyter environment, and submission builders."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from helpers import hf_config, max_diff, offline, padded_pair_batch  # noqa: F401 (fixtures and helpers of the package tests)

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb"))
BUILD = ROOT / "build" / "test-jupyter"

# Jupyter, IPython and matplotlib state stays in the build folder, never in the user's home.
for var, sub in [("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"), ("IPYTHONDIR", "ipython"),
                 ("MPLCONFIGDIR", "matplotlib")]:
    os.environ[var] = str(BUILD / sub)
    (BUILD / sub).mkdir(parents=True, exist_ok=True)
os.environ["MPLBACKEND"] = "Agg"
os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def grade_ids(nb) -> dict[str, nbformat.NotebookNode]:
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells if "nbgrader" in c.metadata}


def filled_submission(release: Path, solution: Path, replace: dict[str, str] | None = None):
    """The release notebook with every solution cell answered from the solution notebook (markers dropped),
    except the cells named in `replace` (grade_id -> source), as a student would submit it."""
    from minibert_course.export import strip_solution_markers

    nb = read(release)
    answers = grade_ids(read(solution))
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            gid = meta["grade_id"]
            cell.source = (replace or {}).get(gid, strip_solution_markers(answers[gid].source))
    return nb


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


# ---- one real `make grade` run of a whole class, shared by the grading tests -----------------------------------
# The class: for every chapter the solutions ("control") and the untouched release; every mutant of the mutation
# catalogue (autograder/mutants/); every honest variant (autograder/honest.py: correct answers in students' styles);
# the round-trip students; every hostile case (autograder/hostile.py). One grade.py run with two workers grades them
# all: no submission is graded twice in the suite.

GRADE_JOBS = 2
CELL_TIMEOUT = 40  # the infinite-loop case costs one worker this long


def _autograder(name: str):
    import importlib

    return importlib.import_module(f"autograder.{name}")


@dataclass
class GradedClass:
    course: Path
    drop: Path
    report: object
    students: dict  # student id -> (kind, payload): ("mutant", Mutant) | ("honest", Variant) | ("hostile", Case) ...
    before: dict  # digests taken before grading
    stdout: str
    catalogue_problems: dict  # chapter (or "honest/NAME") -> why its mutants (that variant) could not be built


def tree_digest(*paths: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    for path in paths:
        for f in sorted(p for p in Path(path).rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            h.update(str(f).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="session")
def graded_class(tmp_path_factory) -> GradedClass:
    import contextlib
    import io

    mutation = _autograder("mutation")
    hostile = _autograder("hostile")
    grade = _autograder("grade")
    drop = tmp_path_factory.mktemp("drop")
    course = tmp_path_factory.mktemp("class") / "course"
    students: dict = {}
    catalogue_problems: dict[str, str] = {}

    def submit(student: str, chapter: str, nb=None, raw: bytes | None = None, filename: str | None = None):
        folder = drop / student
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / (filename or f"{chapter}.ipynb")
        if raw is not None:
            target.write_bytes(raw)
        else:
            nbformat.write(nb, target)

    for chapter in mutation.chapters():
        submit("control", chapter, mutation.submission(chapter, None))
        submit("untouched", chapter, read(ROOT / "notebooks" / f"{chapter}.ipynb"))
        try:
            catalogue = mutation.load_catalogue(chapter)
        except SystemExit as exc:  # a stale catalogue fails its chapter's mutation test, not the whole session
            catalogue_problems[chapter] = str(exc)
            continue
        for m in catalogue:
            student = f"m{chapter[:2]}-{m.name}"
            submit(student, chapter, mutation.submission(chapter, m))
            students[student] = ("mutant", m)
    honest = _autograder("honest")
    try:
        variants = honest.variants()
    except SystemExit as exc:  # a malformed honest catalogue fails tests/course/test_honest.py, not the whole session
        catalogue_problems["honest"] = str(exc)
        variants = []
    for v in variants:
        try:
            nb = honest.submission(v)
        except SystemExit as exc:  # a stale edit fails that variant's test only
            catalogue_problems[f"honest/{v.name}"] = str(exc)
            continue
        submit(v.student, v.chapter, nb)
        students[v.student] = ("honest", v)
    students["control"] = ("control", None)
    students["untouched"] = ("untouched", None)
    wrong = mutation.submission("01_wordpiece", None)
    for cell in wrong.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "input-format-solution":
            cell.source = WRONG_INPUT_FORMAT
    submit("carol_one_wrong", "01_wordpiece", wrong)
    submit("dave_malformed", "01_wordpiece", raw=b'{"cells": [')
    from minibert_course.sealed import Sandbox

    sandboxed = Sandbox().works
    for case in hostile.cases(course):
        if case.needs_sandbox and not sandboxed:
            continue  # only bubblewrap stops it: never run it against this checkout without one
        student = f"h-{case.name}"
        submit(student, hostile.CHAPTER, raw=hostile.build(case), filename=case.filename)
        students[student] = ("hostile", case)
    site = Path(nbformat.__file__).parents[1]
    before = {"package": tree_digest(ROOT / "src" / "minibert"), "solutions": tree_digest(ROOT / "solutions"),
              "site_pth": sorted(p.name for p in site.glob("*.pth"))}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        report = grade.grade(course, drop, None, jobs=GRADE_JOBS, cell_timeout=CELL_TIMEOUT)
    return GradedClass(course, drop, report, students, before, out.getvalue(), catalogue_problems)


WRONG_INPUT_FORMAT = '''#| export
def build_inputs(tokens_a, tokens_b=None):
    tokens = ["[CLS]", *tokens_a, "[SEP]"]
    if tokens_b is not None:
        tokens += [*tokens_b, "[SEP]"]
    return tokens, [0] * len(tokens)  # wrong: B is segment 1
'''
