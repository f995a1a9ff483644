"""The course's chapters, read from the notebooks: the one registry behind the course map, the README's chapter
table, the student kit and its certificate, the grader, the mutation catalogue and the lecture coverage.

A chapter is a notebook `NN_name.ipynb` (NN from 01: notebook 00 is the course map). Everything the registry says
comes from it:

- number, stem and name from the file name; the title from its first heading (`# Chapter NN · Title: more`, the
  part before the colon);
- the modules it builds from its `#| export` cells (in order, `__init__` left out);
- its points from the nbgrader metadata (autograded code cells, manually graded markdown cells) and its exercises
  from the solution cells;
- what the cells cannot say, under the notebook's metadata key `minibert`: `needs` (the chapters whose ideas it
  uses) and `tests` (the package tests of its modules, which the student kit ships and its certificate runs).

The instructor's repository reads `solutions/`; a student kit, which has none, reads the release notebooks
(`notebooks/`, which keep the same metadata and the same points).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PATTERN = "[0-9][0-9]_*.ipynb"
_DIRECTIVE = re.compile(r"^#\|\s*(\w+)\s*(.*?)\s*$")
_TITLE = re.compile(r"^#\s+Chapter\s+\d+\s*·\s*(.+?)\s*$")


@dataclass(frozen=True)
class Chapter:
    number: str  # "06"
    stem: str  # "06_pretraining": the notebook, the nbgrader assignment, the judge package
    title: str  # "Pretraining heads and loss"
    modules: tuple[str, ...]  # what its export cells write into src/minibert, in order
    tests: tuple[str, ...]  # the package tests of those modules (tests/<name>)
    needs: tuple[str, ...]  # the chapters whose ideas it uses
    auto_points: float  # autograded points
    manual_points: float  # manually graded points (markdown answers)
    exercises: int  # cells the student writes

    @property
    def name(self) -> str:  # "pretraining"
        return self.stem[3:]

    @property
    def points(self) -> float:
        return self.auto_points + self.manual_points


def folder(root: Path = ROOT) -> Path:
    """Where the chapters are read from: the solutions where there are any (the repository), else the release
    notebooks (a student kit)."""
    solutions = root / "solutions"
    return solutions if any(solutions.glob(PATTERN)) else root / "notebooks"


def read(path: Path) -> Chapter:
    """One chapter, from its notebook. A notebook without the `minibert` metadata or a title says so, naming the
    key to add: every list the course prints would otherwise miss the chapter silently."""
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not a readable notebook ({exc}): restore it (git checkout, or the copy your "
                         "course gave you)") from exc
    meta = nb.get("metadata", {}).get("minibert")
    if not isinstance(meta, dict) or not isinstance(meta.get("tests"), list):
        raise ValueError(f"{path.name}: the notebook's metadata has no 'minibert' entry with 'tests' (and 'needs'): "
                         "add {\"minibert\": {\"needs\": [...], \"tests\": [...]}} to its metadata")
    title: str | None = None
    first_markdown = True
    modules: list[str] = []
    auto = manual = 0.0
    exercises = 0
    for cell in nb["cells"]:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if first_markdown and cell["cell_type"] == "markdown":
            match = _TITLE.match(source.split("\n", 1)[0])
            title, first_markdown = (match.group(1).split(": ")[0] if match else None), False
        grading = cell.get("metadata", {}).get("nbgrader", {})
        if grading.get("grade"):
            if cell["cell_type"] == "markdown":
                manual += float(grading.get("points", 0))
            else:
                auto += float(grading.get("points", 0))
        if grading.get("solution"):
            exercises += 1
        if cell["cell_type"] == "code":
            module = _export_target(source, nb)
            if module and module != "__init__" and module not in modules:
                modules.append(module)
    if title is None:
        raise ValueError(f"{path.name}: its first markdown cell must start with '# Chapter NN · Title'")
    return Chapter(path.stem[:2], path.stem, title, tuple(modules), tuple(meta["tests"]),
                   tuple(meta.get("needs", [])), auto, manual, exercises)


def _export_target(source: str, nb: dict) -> str | None:
    directives = {}
    for line in source.split("\n"):
        match = _DIRECTIVE.match(line)
        if not match:
            break
        directives[match.group(1)] = match.group(2)
    if "export" not in directives:
        return None
    return directives["export"] or _default_module(nb)


def _default_module(nb: dict) -> str | None:
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            for line in source.split("\n"):
                match = _DIRECTIVE.match(line)
                if not match:
                    break
                if match.group(1) == "default_exp":
                    return match.group(2)
    return None


@functools.lru_cache(maxsize=4)
def _chapters(where: Path) -> tuple[Chapter, ...]:
    return tuple(read(p) for p in sorted(where.glob(PATTERN)) if not p.stem.startswith("00_"))  # 00: the map


def chapters(root: Path = ROOT) -> tuple[Chapter, ...]:
    """Every chapter, in order."""
    return _chapters(folder(root))


def stems(root: Path = ROOT) -> list[str]:
    return [c.stem for c in chapters(root)]


def chapter(key: str, root: Path = ROOT) -> Chapter:
    """A chapter by number ("06") or stem ("06_pretraining"); an unknown one names the chapters there are."""
    for c in chapters(root):
        if key in (c.number, c.stem):
            return c
    raise KeyError(f"no chapter {key!r}: the chapters are {', '.join(stems(root))}")


def package_tests(root: Path = ROOT) -> tuple[str, ...]:
    """The package tests of every chapter (the student kit's tests/)."""
    return tuple(t for c in chapters(root) for t in c.tests)
