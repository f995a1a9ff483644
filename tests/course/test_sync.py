"""notebooks/ and src/minibert/ are exactly what solutions/ generate (what `make check-sync` checks), and no
solution or hidden-test text is in notebooks/."""

from __future__ import annotations

import subprocess
import sys

import nbformat
import pytest
from conftest import ROOT, SOLUTIONS

from minibert_course.nbgrader_ext import secret_lines
from minibert_course.release import drift, generate


@pytest.fixture(scope="module")
def generated():
    return generate(ROOT)


def test_every_solution_has_a_release_notebook(generated):
    """One release per solution notebook, plus the course map (notebook 00, generated from the chapters' data)."""
    assert {f"notebooks/{p.name}" for p in SOLUTIONS} | {"notebooks/00_course_map.ipynb"} == \
        {k for k in generated if k.startswith("notebooks/")}


def test_drift_is_detected(generated, tmp_path):
    files = dict(generated)
    key = next(k for k in files if k.startswith("src/"))
    files[key] += "# edited by hand\n"
    assert any(p.startswith(f"differs: {key}") for p in drift(ROOT, files))
    files.pop(key)
    assert any(p.startswith("not generated") for p in drift(ROOT, files))


def test_no_solution_text_in_release_notebooks():
    for solution in SOLUTIONS:
        secrets = secret_lines(nbformat.read(solution, as_version=4))
        assert len(secrets) >= 10, f"{solution.name}: too few solution lines found to make this check meaningful"
        release = (ROOT / "notebooks" / solution.name).read_text(encoding="utf-8")
        released_nb = nbformat.reads(release, as_version=4)
        text = "\n".join(c.source for c in released_nb.cells)
        leaked = sorted(s for s in secrets if s in text)
        assert not leaked, f"{solution.name} leaks: {leaked[:5]}"
        assert "BEGIN SOLUTION" not in release and "HIDDEN TESTS" not in release
        assert all(not c.get("outputs") for c in released_nb.cells if c.cell_type == "code")


def test_committed_notebooks_have_no_outputs():
    for path in [*SOLUTIONS, *(ROOT / "notebooks").glob("*.ipynb")]:
        nb = nbformat.read(path, as_version=4)
        assert all(not c.get("outputs") and c.get("execution_count") is None
                   for c in nb.cells if c.cell_type == "code"), path


def test_check_sync_command_passes():
    """The committed trees match solutions/ (the CLI behind `make check-sync`; it prints the drift)."""
    run = subprocess.run([sys.executable, "-m", "minibert_course.release", "--check"], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "in sync" in run.stdout


def test_every_released_code_cell_is_valid_python():
    """A stub left inside an expression (a `raise` in a dict literal) is a SyntaxError the student meets first."""
    import ast

    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                lines = cell.source.splitlines()
                source = "\n".join(line for line in lines if not line.lstrip().startswith(("%", "!")))
                try:
                    ast.parse(source)
                except SyntaxError as exc:
                    raise AssertionError(f"{path.name}, cell {cell.get('id')}: {exc}\n{cell.source[:500]}") from None


def test_named_stubs_use_only_nbgrader_public_hooks():
    """NamedStubs keeps ClearSolutions' rules without overriding its private `_replace_solution_region`: a region
    becomes a stub that names the function, a solution cell without a region becomes the configured stub, and a
    region outside a solution cell is refused."""
    from minibert_course.nbgrader_ext import NamedStubs

    assert "_replace_solution_region" not in vars(NamedStubs), "overrides nbgrader's private method"
    solution = {"nbgrader": {"solution": True, "grade": False, "grade_id": "f", "locked": False, "schema_version": 3}}
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"language": "python", "name": "python3"}
    region = "#| export\ndef f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION"
    nb.cells = [nbformat.v4.new_code_cell("#| default_exp masking"),
                nbformat.v4.new_code_cell(region, metadata=solution),
                nbformat.v4.new_code_cell("whole = 1", metadata=solution)]
    out, _ = NamedStubs().preprocess(nb, {"unique_key": "04_masking"})
    assert "return x" not in out.cells[1].source and "minibert.masking.f -- complete chapter 04" in out.cells[1].source
    assert out.cells[2].source == NamedStubs().code_stub["python"]
    bad = nbformat.v4.new_notebook()
    bad.metadata["kernelspec"] = nb.metadata["kernelspec"]
    bad.cells = [nbformat.v4.new_code_cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION")]
    with pytest.raises(RuntimeError, match="non-solution cell"):
        NamedStubs(enforce_metadata=True).preprocess(bad, {"unique_key": "04_masking"})
