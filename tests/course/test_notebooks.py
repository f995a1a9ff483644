"""Every solution notebook runs top to bottom without an error, and its export cell (the student-side route)
writes exactly the modules of the reference package (the instructor-side route)."""

from __future__ import annotations

import os
import re
import time

import nbformat
import pytest
from conftest import ROOT, SOLUTIONS
from nbclient import NotebookClient

from minibert_course.export import INIT, render_modules

pytestmark = pytest.mark.slow


def execute(path, cwd, env: dict[str, str]) -> tuple[nbformat.NotebookNode, float]:
    nb = nbformat.read(path, as_version=4)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        start = time.perf_counter()
        NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()
        return nb, time.perf_counter() - start
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.mark.parametrize("solution", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_solution_notebook_runs_and_exports_the_reference_package(solution, tmp_path):
    nb, seconds = execute(solution, solution.parent, {"MINIBERT_EXPORT_DIR": str(tmp_path)})
    print(f"{solution.name}: {seconds:.1f} s")
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, errors[0]
    modules = [m for m in render_modules(nb, solution.name) if m != INIT]
    assert modules, f"{solution.name} exports nothing"
    for module in modules:
        exported = (tmp_path / f"{module}.py").read_text(encoding="utf-8")
        reference = (ROOT / "src" / "minibert" / f"{module}.py").read_text(encoding="utf-8")
        assert exported == reference, f"the export cell of {solution.name} and `make release` disagree on {module}"
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    for claim in DEMO_CLAIMS.get(solution.stem, []):
        claim(printed)


def real_weights_match_transformers(printed: str) -> None:
    """Chapter 03 section 7 says the real weights give transformers' numbers: it must print the differences."""
    diffs = [float(x) for x in re.findall(r"max \|minibert - transformers\| [^:]+: (\S+)", printed)]
    assert len(diffs) == 3 and max(diffs) < 1e-4, f"chapter 03's comparison with transformers printed {diffs}"


DEMO_CLAIMS = {"03_attention": [real_weights_match_transformers]}  # what a chapter's demos must print


def test_visible_test_names_what_is_wrong_with_labels_filled_with_zero():
    """Chapter 04: labels filled with 0 instead of -100 at non-targets used to fail with "special tokens and padding
    must never be targets", which points at the wrong mistake. The visible test must name -100 and what it got."""
    import importlib.util

    import torch

    import minibert.masking

    spec = importlib.util.spec_from_file_location("mutants04", ROOT / "autograder" / "mutants" / "04_masking.py")
    catalogue = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(catalogue)
    mutant = next(m for m in catalogue.MUTANTS if m["name"] == "labels-zero-elsewhere")
    nb = nbformat.read(ROOT / "solutions" / "04_masking.ipynb", as_version=4)
    cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c.source for c in nb.cells}
    answer = cells[mutant["exercise"]]
    for old, new in mutant["edits"]:
        answer = answer.replace(old, new)
    namespace = {**vars(minibert.masking), "torch": torch}
    exec(answer, namespace)
    visible = cells["test-mask-tokens"].split("### BEGIN HIDDEN TESTS")[0] + cells["test-mask-tokens"].split(
        "### END HIDDEN TESTS")[1]
    with pytest.raises(AssertionError) as failed:
        exec(visible, namespace)
    message = str(failed.value)
    assert "-100" in message and "[0, 0, 0]" in message, message
    assert "special tokens" not in message, message


def test_visible_asserts_are_not_inside_try_finally():
    """CPython reports an exception that leaves a `try:` block through its `finally:` at the finally's last line: a
    student whose visible test fails would see an arrow at `corrupt = _your_corrupt` instead of at the assert that
    says what is wrong. Visible asserts run outside try/finally (a `with` block restores the student's functions)."""
    import ast

    checked = 0
    for path in SOLUTIONS:
        for cell in nbformat.read(path, as_version=4).cells:
            meta = cell.metadata.get("nbgrader", {})
            if not meta.get("grade") or meta.get("solution"):
                continue
            lines = cell.source.split("\n")
            hidden, inside = set(), False
            for number, line in enumerate(lines, 1):
                if "BEGIN HIDDEN TESTS" in line or "END HIDDEN TESTS" in line:
                    inside = "BEGIN" in line
                elif inside:
                    hidden.add(number)
            for node in ast.walk(ast.parse(cell.source)):
                if isinstance(node, ast.Try) and node.finalbody:
                    visible = [a.lineno for part in node.body for a in ast.walk(part)
                               if isinstance(a, ast.Assert) and a.lineno not in hidden]
                    assert not visible, (f"{path.name} {meta['grade_id']}: the visible assert at line {visible[0]} "
                                         f"runs inside try/finally: its traceback would point at the finally block")
            checked += 1
    assert checked >= 20
