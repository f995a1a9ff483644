"""Notebooks build the package: an nbdev-style exporter that keeps nbgrader's metadata intact.

Directives are comment lines at the top of a code cell:

    #| default_exp tokenization   this notebook's default module: src/minibert/tokenization.py
    #| export                     append this cell to the default module
    #| export corpus              append this cell to src/minibert/corpus.py
    #| export __init__            append this cell to the package's __init__.py (assembled from all notebooks)

nbgrader's solution markers (`### BEGIN SOLUTION` / `### END SOLUTION`) are dropped from the export, so the
reference package is exactly the code of `solutions/`. The student-side route (`export_notebook`, called
from a notebook's last cell) refuses a notebook file that is older than what the kernel ran: JupyterLab
saves on its own schedule, and exporting a stale file would silently lose the student's latest code.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
import time
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # nbformat takes seconds to import: only the export itself needs it (see read_notebook)
    import nbformat

PACKAGE = "minibert"
INIT = "__init__"
BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"
KIT_MARKER = ".minibert-kit"  # present at the root of a student kit: exports go into its own package
_DIRECTIVE = re.compile(r"^\s*#\|\s*([\w-]+)\s*(.*?)\s*$")


class ExportError(RuntimeError):
    """An export that would write the wrong code; the message says what to do instead."""


@dataclass
class ExportCell:
    index: int  # position among the notebook's cells, 0-based
    cell_id: str | None
    module: str  # "tokenization", "corpus", "__init__", ...
    source: str  # the cell as saved, directives included
    body: str  # the code that goes into the module
    section: str | None = None  # the heading above it, as the student sees it ("Exercise: the attention formula")

    def describe(self) -> str:
        """How a student finds the cell: JupyterLab shows no cell numbers, so its first line and its section."""
        first = next((line for line in self.body.split("\n") if line.strip() and not line.lstrip().startswith("#")),
                     self.body.split("\n", 1)[0])
        return f"the cell starting `{first.strip()[:60]}`" + (f" (under \"{self.section}\")" if self.section else "")


def parse_directives(source: str) -> tuple[dict[str, str], str]:
    """Split a cell into its leading `#| name value` directives and the remaining code."""
    lines = source.split("\n")
    directives: dict[str, str] = {}
    n = 0
    for line in lines:
        match = _DIRECTIVE.match(line)
        if not match:
            break
        directives[match.group(1)] = match.group(2)
        n += 1
    return directives, "\n".join(lines[n:]).strip("\n")


def export_cells(nb: nbformat.NotebookNode) -> list[ExportCell]:
    """The cells a notebook exports, in notebook order, each with its target module."""
    default: str | None = None
    section: str | None = None
    cells: list[ExportCell] = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            headings = [line.lstrip("#").strip() for line in cell.source.split("\n") if line.startswith("#")]
            section = headings[-1] if headings else section
        if cell.cell_type != "code":
            continue
        directives, body = parse_directives(cell.source)
        if "default_exp" in directives:
            default = directives["default_exp"]
        if "export" not in directives:
            continue
        module = directives["export"] or default
        if not module:
            raise ExportError(
                f"cell {index} says '#| export' but the notebook has no '#| default_exp MODULE' above it: "
                "add one, or name the module ('#| export MODULE')."
            )
        if not module.isidentifier() and module != INIT:
            raise ExportError(f"cell {index}: '{module}' is not a module name.")
        cells.append(ExportCell(index, cell.get("id"), module, cell.source, body, section))
    return cells


def default_module(nb: nbformat.NotebookNode) -> str | None:
    for cell in nb.cells:
        if cell.cell_type == "code":
            directives, _ = parse_directives(cell.source)
            if "default_exp" in directives:
                return directives["default_exp"]
    return None


def strip_solution_markers(code: str) -> str:
    """Drop nbgrader's solution marker lines, keeping the solution between them."""
    return "\n".join(
        line for line in code.split("\n") if BEGIN_SOLUTION not in line and END_SOLUTION not in line
    )


def header(notebook_name: str) -> str:
    return f"# Generated from notebook {notebook_name} by minibert_course.export: edit the notebook, not this file.\n"


def render_modules(nb: nbformat.NotebookNode, notebook_name: str) -> dict[str, list[str]]:
    """Module name -> the code chunks this notebook contributes to it (markers stripped)."""
    modules: dict[str, list[str]] = {}
    for cell in export_cells(nb):
        modules.setdefault(cell.module, []).append(strip_solution_markers(cell.body))
    return modules


def module_text(chunks: list[str], notebook_names: list[str]) -> str:
    head = "".join(header(name) for name in notebook_names)
    return head + "\n\n\n".join(chunk.strip("\n") for chunk in chunks) + "\n"


def build_package(notebooks: list[Path]) -> dict[str, str]:
    """File name -> text for every module of the package, from notebooks in chapter order.

    Each module belongs to one notebook, except `__init__.py`, which every notebook may add imports to.
    """
    owners: dict[str, str] = {}
    chunks: dict[str, list[str]] = {}
    init_sources: list[str] = []
    for path in notebooks:
        nb = read_notebook(path)
        for module, parts in render_modules(nb, path.name).items():
            if module == INIT:
                init_sources.append(path.name)
            elif module in owners and owners[module] != path.name:
                raise ExportError(
                    f"module '{module}' is exported by both {owners[module]} and {path.name}: "
                    "a module belongs to one notebook."
                )
            owners.setdefault(module, path.name)
            chunks.setdefault(module, []).extend(parts)
    files = {}
    for module, parts in chunks.items():
        names = sorted(set(init_sources)) if module == INIT else [owners[module]]
        files[f"{module}.py"] = module_text(parts, names)
    return files


def read_notebook(path: Path) -> nbformat.NotebookNode:
    """Read a notebook, turning a broken file into an error that names it."""
    import nbformat

    try:
        return nbformat.read(path, as_version=4)
    except FileNotFoundError:
        raise
    except (json.JSONDecodeError, nbformat.reader.NotJSONError, UnicodeDecodeError) as exc:
        raise ExportError(
            f"{path} is not a readable notebook ({exc.__class__.__name__}). "
            "Restore it from JupyterLab's File > Revert or from your last checkpoint."
        ) from exc


# --- the student-side route: track what the kernel ran, export only a fresh file ------------------------


@dataclass(repr=False)
class CellTracker:
    """Records the source of every cell the kernel runs, by cell id when the frontend sends one.

    It also keeps the package in step with the notebook: after an export cell runs, its code is executed into a
    live `minibert.<module>`, so a later cell's `from minibert.attention import ...` gets the code you just ran,
    not the stub in your kit. While nbgrader grades, this is off: later cells then import the reference package,
    and a mistake in one exercise costs no points in the next.
    """

    by_id: dict[str, str] = field(default_factory=dict)
    ran_at: dict[str, float] = field(default_factory=dict)  # cell id -> when it last ran (time.time())
    sources: set[str] = field(default_factory=set)
    default_module: str | None = None
    live: dict[str, types.ModuleType] = field(default_factory=dict)

    def __repr__(self) -> str:
        # The first cell of every chapter ends with `track_cells()`: this line is what JupyterLab shows under it.
        return "Cell tracking is on: the chapter's last cell will export the code you run into your package."

    def _repr_pretty_(self, printer, cycle) -> None:  # IPython's display: the same one line
        printer.text(repr(self))

    def pre_run_cell(self, info) -> None:  # IPython's ExecutionInfo
        cell_id = getattr(info, "cell_id", None)
        if cell_id:
            self.by_id[cell_id] = info.raw_cell
            self.ran_at[cell_id] = time.time()
        self.sources.add(info.raw_cell)

    def post_run_cell(self, result) -> None:  # IPython's ExecutionResult
        directives, body = parse_directives(result.info.raw_cell)
        self.default_module = directives.get("default_exp") or self.default_module
        module = directives.get("export", None)
        module = (module or self.default_module) if module is not None else None
        if not result.success or not module or module == INIT or os.environ.get("NBGRADER_EXECUTION"):
            return
        name = f"{PACKAGE}.{module}"
        live = self.live.get(module)
        if live is None or sys.modules.get(name) is not live:
            live = self.live[module] = types.ModuleType(name, f"{name}, live from the notebook's cells")
            sys.modules[name] = live
            try:
                setattr(importlib.import_module(PACKAGE), module, live)  # `minibert.<module>` as an attribute too
            except Exception:  # noqa: BLE001 (a broken package must not break the notebook; imports still work)
                pass
        exec(compile(strip_solution_markers(body), f"<{name} cell>", "exec"), live.__dict__)


_tracker: CellTracker | None = None


def track_cells(shell=None) -> CellTracker | None:
    """Start recording the cells this kernel runs (idempotent). Outside IPython there is nothing to track."""
    global _tracker
    if shell is None:
        if "IPython" not in sys.modules:  # a kernel has imported IPython long before; a plain interpreter (the
            return None  # grader) has no cells to track, and need not pay for importing IPython
        from IPython import get_ipython

        shell = get_ipython()
    if shell is None:
        return None
    if _tracker is None or getattr(shell, "_minibert_tracker", None) is not _tracker:
        _tracker = CellTracker()
        shell.events.register("pre_run_cell", _tracker.pre_run_cell)
        shell.events.register("post_run_cell", _tracker.post_run_cell)
        shell.set_custom_exc((NotImplementedError,), _explain_stub)
        shell._minibert_tracker = _tracker
    return _tracker


_STUB = re.compile(r"^(minibert\.(\w+)\.[\w.]+) -- complete chapter (\d+) and run its export cell")


def restart_hint(error: BaseException) -> str | None:
    """For a stub's NotImplementedError whose chapter has been exported since this kernel imported the module
    (its file no longer holds the stub): the advice to restart. A kernel keeps the modules it imported."""
    match = _STUB.match(str(error))
    module = sys.modules.get(f"{PACKAGE}.{match.group(2)}") if match else None
    path = Path(getattr(module, "__file__", "") or "")
    if not match or not path.is_file() or str(error) in path.read_text(encoding="utf-8", errors="replace"):
        return None
    return (f"Chapter {match.group(3)} has been exported since this kernel imported {match.group(1)}: restart this "
            f"kernel (Kernel > Restart) to use your chapter {match.group(3)} code.")


def _explain_stub(shell, etype, value, tb, tb_offset=None):
    """IPython's handler for NotImplementedError in a course kernel: the usual traceback, then the restart hint."""
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
    hint = restart_hint(value)
    if hint:
        print(hint)


def check_fresh(cells: list[ExportCell], tracker: CellTracker | None, saved_at: float | None = None) -> None:
    """Refuse to export a saved file whose export cells differ from what the kernel ran.

    `saved_at` (the file's modification time) tells the two cases apart: a file saved before the cell last ran
    lacks the code that ran (save it); a file saved after it holds an edit that has not run (run the cell)."""
    if tracker is None:
        raise ExportError(
            "Nothing was exported: the notebook's first code cell (it calls track_cells()) has not run in "
            "this kernel. Run all cells from the top (Run > Run All Cells), then this cell."
        )
    problems = []
    for cell in cells:
        ran = tracker.by_id.get(cell.cell_id) if cell.cell_id else None
        if ran is not None and ran != cell.source:
            ran_at = tracker.ran_at.get(cell.cell_id)
            if saved_at is not None and ran_at is not None and saved_at > ran_at:
                problems.append(f"{cell.describe()}: changed after it last ran (the saved file is newer than the "
                                "code you ran): run it again")
            else:
                problems.append(f"{cell.describe()}: the saved file is older than the code you ran: save the "
                                "notebook")
        elif ran is None and cell.source not in tracker.sources:
            problems.append(f"{cell.describe()}: not run in this kernel as saved: run it")
    if problems:
        raise ExportError(
            "Nothing was exported, because the saved notebook is not the code your kernel ran:\n  - "
            + "\n  - ".join(problems)
            + "\nSave the notebook (File > Save, Ctrl+S), run the cells listed above, then run this cell again."
        )


def find_course_root(start: Path) -> Path | None:
    for folder in [start, *start.parents]:
        if (folder / "pyproject.toml").exists() and (folder / "src" / PACKAGE).is_dir():
            return folder
    return None


def destination(notebook: Path) -> Path:
    """Where a notebook's export goes.

    - a notebook in `solutions/` of the course repository: the reference package `src/minibert`;
    - a notebook in a student kit (a folder with `.minibert-kit`): the kit's own `src/minibert`;
    - anywhere else in the repository (e.g. `notebooks/`): `build/my-minibert/minibert`, never the
      reference package, which the autograder and later chapters rely on.
    """
    override = os.environ.get("MINIBERT_EXPORT_DIR")
    if override:
        return Path(override)
    root = find_course_root(notebook.parent)
    if root is None:
        raise ExportError(
            f"Cannot find the course folder above {notebook}: open the notebook from the course "
            "(a folder with pyproject.toml and src/minibert), or pass export_notebook(..., to=FOLDER)."
        )
    if (root / KIT_MARKER).exists() or notebook.parent == root / "solutions":
        return root / "src" / PACKAGE
    return root / "build" / "my-minibert" / PACKAGE


def export_notebook(notebook: str | os.PathLike, to: str | os.PathLike | None = None) -> list[Path]:
    """Write this notebook's exported cells into your `minibert` package (the last cell of each chapter).

    Does nothing while nbgrader validates or autogrades (NBGRADER_EXECUTION is set): a submission never
    writes into the grader's package. `__init__.py` is left alone: it already imports every chapter.
    """
    if os.environ.get("NBGRADER_EXECUTION"):
        print("Export skipped: nbgrader is grading this notebook.")
        return []
    path = Path(notebook).resolve()
    if not path.exists():
        raise ExportError(
            f"{path} does not exist: pass the notebook's file name, e.g. export_notebook('01_wordpiece.ipynb')."
        )
    nb = read_notebook(path)
    cells = export_cells(nb)
    check_fresh(cells, _tracker, path.stat().st_mtime)
    target = Path(to) if to is not None else destination(path)
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for module, parts in render_modules(nb, path.name).items():
        if module == INIT:
            continue
        out = target / f"{module}.py"
        text = module_text(parts, [path.name])
        tmp = out.with_suffix(".py.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, out)  # atomic: an interrupted export never leaves half a module
        written.append(out)
        print(f"Exported {PACKAGE}.{module} ({len(parts)} cells) -> {out}")
    return written
