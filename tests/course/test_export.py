"""The exporter: directives, marker stripping, the reference package = export of solutions/, the stale-file guard,
where exports go (never into the reference package from a student notebook), and nbgrader's named stubs."""

from __future__ import annotations

import os
import sys
import time

import nbformat
import pytest
from conftest import ROOT, SOLUTIONS
from IPython.core.interactiveshell import InteractiveShell
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from minibert_course import export
from minibert_course.export import (
    ExportError,
    build_package,
    export_cells,
    export_notebook,
    parse_directives,
    strip_solution_markers,
    track_cells,
)
from minibert_course.nbgrader_ext import enclosing_name, secret_lines, stub_message


def make_nb(*sources: str) -> nbformat.NotebookNode:
    nb = new_notebook(cells=[new_code_cell(s) for s in sources])
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i}"
    return nb


def test_parse_directives_reads_only_leading_lines():
    directives, body = parse_directives("#| export corpus\n#|hide\nx = 1\n#| export\ny = 2")
    assert directives == {"export": "corpus", "hide": ""}
    assert body == "x = 1\n#| export\ny = 2"


def test_export_cells_use_default_and_named_modules():
    nb = make_nb("#| default_exp tokenization\nimport os", "#| export\na = 1", "b = 2", "#| export corpus\nc = 3")
    cells = export_cells(nb)
    assert [(c.index, c.module, c.body) for c in cells] == [(1, "tokenization", "a = 1"), (3, "corpus", "c = 3")]


def test_export_without_default_module_is_an_error():
    with pytest.raises(ExportError, match="default_exp"):
        export_cells(make_nb("#| export\na = 1"))


def test_solution_markers_are_dropped_but_the_solution_kept():
    code = "def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION"
    assert strip_solution_markers(code) == "def f():\n    return 1"


def test_reference_package_is_exactly_the_export_of_solutions():
    generated = build_package(SOLUTIONS)
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in (ROOT / "src" / "minibert").glob("*.py")}
    assert generated == on_disk, "src/minibert drifted from solutions/: run `make release`"
    for text in generated.values():
        assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text and "HIDDEN TESTS" not in text
        assert text.startswith("# Generated from notebook ")


def test_a_module_belongs_to_one_notebook(tmp_path):
    for name in ("01_a.ipynb", "02_b.ipynb"):
        nbformat.write(make_nb("#| default_exp same", "#| export\nx = 1"), tmp_path / name)
    with pytest.raises(ExportError, match="exported by both"):
        build_package(sorted(tmp_path.glob("*.ipynb")))


def test_malformed_notebook_gives_a_clear_error(tmp_path):
    bad = tmp_path / "01_bad.ipynb"
    bad.write_text('{"cells": [', encoding="utf-8")
    with pytest.raises(ExportError, match="not a readable notebook"):
        export.read_notebook(bad)


@pytest.fixture
def shell(monkeypatch):
    """A fresh IPython shell with the tracker registered, as in a notebook's first cell."""
    monkeypatch.setattr(export, "_tracker", None)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.delenv("MINIBERT_EXPORT_DIR", raising=False)
    sh = InteractiveShell()
    track_cells(sh)
    yield sh
    InteractiveShell.clear_instance()


def test_the_first_cells_track_cells_shows_one_friendly_line(monkeypatch, capsys):
    """`track_cells()` ends every chapter's first cell, so JupyterLab shows its value: one short line, not the
    tracker's fields (`CellTracker(by_id={...}, ...)`)."""
    monkeypatch.setattr(export, "_tracker", None)
    sh = InteractiveShell.instance()  # what get_ipython() returns in the cell, as in a kernel
    try:
        result = sh.run_cell("from minibert_course import track_cells\ntrack_cells()", store_history=True,
                             cell_id="first")
        printed = capsys.readouterr().out  # IPython's display hook: `Out[1]: <the line>`
        assert result.success, result.error_in_exec
        assert result.result is export._tracker is not None  # the value is still the tracker
        shown, _ = sh.display_formatter.format(result.result)  # what the kernel sends to JupyterLab
    finally:
        InteractiveShell.clear_instance()
    assert set(shown) == {"text/plain"}, shown
    text = shown["text/plain"]
    assert "\n" not in text and len(text) <= 120, text
    assert "CellTracker" not in text and "by_id" not in text and "{" not in text, text
    assert text.startswith("Cell tracking is on") and "export" in text, text
    assert repr(export._tracker) == text and str(export._tracker) == text
    assert printed.strip().endswith(text) and printed.count("\n") == 1, printed


def kit(tmp_path):
    """A minimal student kit: pyproject, src/minibert, the marker, notebooks/."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'k'\n")
    (tmp_path / "src" / "minibert").mkdir(parents=True)
    (tmp_path / export.KIT_MARKER).write_text("")
    (tmp_path / "notebooks").mkdir()
    return tmp_path


def run_all(shell, nb):
    for cell in nb.cells:
        result = shell.run_cell(cell.source, cell_id=cell.id)
        assert result.success, result.error_in_exec


def test_export_writes_what_the_kernel_ran_into_the_kit(shell, tmp_path):
    root = kit(tmp_path)
    nb = make_nb("#| default_exp tiny", "#| export\ndef f():\n    return 41 + 1")
    path = root / "notebooks" / "01_tiny.ipynb"
    nbformat.write(nb, path)
    run_all(shell, nb)
    written = export_notebook(path)
    assert written == [root / "src" / "minibert" / "tiny.py"]
    assert written[0].read_text().endswith("def f():\n    return 41 + 1\n")


def test_stale_file_is_refused_and_nothing_written(shell, tmp_path):
    root = kit(tmp_path)
    nb = make_nb("#| default_exp tiny", "#| export\nx = 1")
    path = root / "notebooks" / "01_tiny.ipynb"
    nbformat.write(nb, path)  # saved with x = 1 ...
    shell.run_cell(nb.cells[0].source, cell_id="cell-0")
    shell.run_cell("#| export\nx = 2", cell_id="cell-1")  # ... but the kernel ran x = 2: the file is stale
    with pytest.raises(ExportError, match="older than the code you ran"):
        export_notebook(path)
    assert not (root / "src" / "minibert" / "tiny.py").exists()


def test_cell_never_run_is_refused(shell, tmp_path):
    root = kit(tmp_path)
    nb = make_nb("#| default_exp tiny", "#| export\nx = 1", "#| export\ny = 2")
    path = root / "notebooks" / "01_tiny.ipynb"
    nbformat.write(nb, path)
    shell.run_cell(nb.cells[0].source, cell_id="cell-0")
    shell.run_cell(nb.cells[1].source, cell_id="cell-1")
    with pytest.raises(ExportError, match=r"the cell starting `y = 2`: not run"):
        export_notebook(path)


def test_export_without_tracking_is_refused(monkeypatch, tmp_path):
    monkeypatch.setattr(export, "_tracker", None)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    root = kit(tmp_path)
    nbformat.write(make_nb("#| default_exp tiny", "#| export\nx = 1"), root / "notebooks" / "01_tiny.ipynb")
    with pytest.raises(ExportError, match="track_cells"):
        export_notebook(root / "notebooks" / "01_tiny.ipynb")


def test_export_does_nothing_while_nbgrader_grades(shell, tmp_path, monkeypatch, capsys):
    root = kit(tmp_path)
    nb = make_nb("#| default_exp tiny", "#| export\nx = 1")
    nbformat.write(nb, root / "notebooks" / "01_tiny.ipynb")
    run_all(shell, nb)
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert export_notebook(root / "notebooks" / "01_tiny.ipynb") == []
    assert not (root / "src" / "minibert" / "tiny.py").exists()
    assert "skipped" in capsys.readouterr().out


def test_student_notebooks_in_the_repository_never_write_the_reference_package():
    reference = ROOT / "src" / "minibert"
    assert export.destination(ROOT / "notebooks" / "01_wordpiece.ipynb") == ROOT / "build" / "my-minibert" / "minibert"
    assert export.destination(ROOT / "solutions" / "01_wordpiece.ipynb") == reference
    assert not (ROOT / export.KIT_MARKER).exists()


def test_enclosing_name_and_stub_message():
    lines = ["class A:", "    def f(self):", "        ### BEGIN SOLUTION", "def g():", "    ### BEGIN SOLUTION"]
    assert enclosing_name(lines, 2) == "A.f"
    assert enclosing_name(lines, 4) == "g"
    assert enclosing_name(["### BEGIN SOLUTION"], 0) is None
    msg = stub_message("03", "model", "BertModel.forward")
    assert msg == "minibert.model.BertModel.forward -- complete chapter 03 and run its export cell"


def test_release_stubs_name_function_and_chapter():
    release = nbformat.read(ROOT / "notebooks" / "01_wordpiece.ipynb", as_version=4)
    stubs = [c.source for c in release.cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert len(stubs) == 4
    for name in ["WordPieceTokenizer.tokenize_word", "build_inputs", "split_into_windows", "train_wordpiece"]:
        expected = f"NotImplementedError('minibert.tokenization.{name} -- complete chapter 01 and run its export cell')"
        assert any(expected in s for s in stubs), name


def test_secret_lines_exclude_lines_shown_elsewhere():
    nb = make_nb("x = 'visible line of code'\n### BEGIN SOLUTION\nx = 'visible line of code'\n"
                 "secret_value = compute_it()\n### END SOLUTION",
                 "assert f(1) == 2\n### BEGIN HIDDEN TESTS\nassert f(12345) == 24690\n### END HIDDEN TESTS")
    assert secret_lines(nb) == {"secret_value = compute_it()", "assert f(12345) == 24690"}


def test_export_cells_run_into_a_live_package_module(shell, monkeypatch):
    shell.run_cell("#| default_exp livedemo", cell_id="a")
    shell.run_cell("#| export\ndef f():\n    return 'from the notebook'", cell_id="b")
    result = shell.run_cell("from minibert.livedemo import f as g\ng()", cell_id="c")
    assert result.result == "from the notebook"
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")  # grading: later cells import the reference package
    shell.run_cell("#| export\ndef f():\n    return 'changed'", cell_id="b")
    assert shell.run_cell("import minibert.livedemo\nminibert.livedemo.f()", cell_id="d").result == "from the notebook"


def test_a_stub_names_the_function_a_student_can_find():
    from minibert_course.nbgrader_ext import enclosing_name

    lines = ["class A:", "    def f(self):", "        def g():", "            x = 1", "        y = 2", "def h():",
             "    z = 3", "w = 4"]
    assert [enclosing_name(lines, i) for i in (3, 4, 6, 7)] == ["A.f", "A.f", "h", None]


def test_saved_but_not_rerun_says_to_run_the_cell(shell, tmp_path):
    """The reverse of a stale file: the student edited a cell and saved, but did not run it again. The message must
    say that the saved file is the newer one and the cell needs running (it used to say the file was older)."""
    root = kit(tmp_path)
    nb = make_nb("#| default_exp tiny", "#| export\nx = 1")
    path = root / "notebooks" / "01_tiny.ipynb"
    run_all(shell, nb)  # the kernel ran x = 1 ...
    nb.cells[1].source = "#| export\nx = 2"
    nbformat.write(nb, path)  # ... then the cell was edited to x = 2 and saved, not run
    later = time.time() + 2
    os.utime(path, (later, later))
    with pytest.raises(ExportError, match="changed after it last ran") as refused:
        export_notebook(path)
    assert "older than the code you ran" not in str(refused.value)
    assert not (root / "src" / "minibert" / "tiny.py").exists()


def test_refusal_names_the_cell_by_its_first_line_and_section(shell, tmp_path):
    """JupyterLab shows no cell numbers: a message says which cell by its first code line and the heading above."""
    root = kit(tmp_path)
    nb = make_nb("#| default_exp tiny", "#| export\n### BEGIN SOLUTION\ndef answer():\n    return 1")
    nb.cells.insert(1, new_markdown_cell("## 2. Tiny things\n\n### Exercise: the answer\n\nWrite it."))
    path = root / "notebooks" / "01_tiny.ipynb"
    nbformat.write(nb, path)
    shell.run_cell(nb.cells[0].source, cell_id="cell-0")
    with pytest.raises(ExportError) as refused:
        export_notebook(path)
    message = str(refused.value)
    assert 'the cell starting `def answer():` (under "Exercise: the answer")' in message, message
    assert "cell 2" not in message and "cell 1" not in message


@pytest.mark.parametrize("notebook", [p.name for p in SOLUTIONS])
def test_export_cell_alone_in_a_fresh_kernel_says_run_from_the_top(notebook, monkeypatch):
    """Running only a chapter's last cell in a new kernel must explain what to do, not fail with a NameError."""
    monkeypatch.setattr(export, "_tracker", None)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.chdir(ROOT / "notebooks")
    last = [c for c in nbformat.read(ROOT / "notebooks" / notebook, as_version=4).cells if c.cell_type == "code"][-1]
    sh = InteractiveShell()
    try:
        result = sh.run_cell(last.source)
    finally:
        InteractiveShell.clear_instance()
    error = result.error_in_exec
    assert isinstance(error, ExportError), f"{notebook}'s export cell alone raised {error!r}"
    assert "from the top" in str(error)


def test_a_stub_reached_after_its_chapter_was_exported_says_to_restart(shell, tmp_path, monkeypatch, capsys):
    """A kernel that imported chapter 01's stubs keeps them after chapter 01 is exported from another notebook:
    the stub's own message ("complete chapter 01") would then be wrong. The course kernel adds the right advice."""
    root = kit(tmp_path)
    package = root / "src" / "minibert"
    (package / "__init__.py").write_text("")
    message = "minibert.tiny.f -- complete chapter 01 and run its export cell"
    (package / "tiny.py").write_text(f'def f():\n    raise NotImplementedError("{message}")\n')
    saved = {name: module for name, module in sys.modules.items() if name.split(".")[0] == "minibert"}
    for name in saved:
        del sys.modules[name]
    monkeypatch.syspath_prepend(str(root / "src"))
    try:
        shell.run_cell("from minibert.tiny import f")
        shell.run_cell("f()")
        first = capsys.readouterr().out
        assert message in first and "restart this kernel" not in first, "not exported yet: the stub is right"
        (package / "tiny.py").write_text("def f():\n    return 42\n")  # chapter 01 exported from another kernel
        shell.run_cell("f()")
        second = capsys.readouterr().out
        assert message in second, "the traceback itself is still shown"
        assert "restart this kernel (Kernel > Restart) to use your chapter 01 code" in second, second
        shell.run_cell("raise NotImplementedError('something else')")
        assert "restart this kernel" not in capsys.readouterr().out
    finally:
        for name in [n for n in sys.modules if n.split(".")[0] == "minibert"]:
            del sys.modules[name]
        sys.modules.update(saved)
