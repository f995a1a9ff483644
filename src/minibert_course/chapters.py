"""The course's chapters, read from the notebooks: the one registry behind the course map, the README's chapter
table, the student kit and its certificate, the grader, the mutation catalogue and the lecture coverage.

A chapter is a notebook `NN_name.ipynb` (NN from 01: notebook 00 is the course map). Everything the registry says
comes from it:

- number, stem and name from the file name; the title from its heading (`# Chapter NN · Title: more`, the part
  before the colon, unless the metadata gives a `title`);
- the modules it builds from its `#| export` cells (in order, `__init__` left out);
- its points from the nbgrader metadata (autograded code cells, manually graded markdown cells) and its exercises
  from the solution cells;
- what the cells cannot say, under the notebook's metadata key `minibert`: `needs` (the chapters whose ideas it
  uses) and `tests` (the package tests of its modules, which the student kit ships and its certificate runs).

The instructor's repository reads `solutions/` (or, where there are none, the release notebooks in `notebooks/`,
which keep the same metadata and points). A student kit reads neither: its notebooks are the student's own work,
which may be renamed, duplicated or edited above the title, so the kit builder freezes the registry into
`chapters.json` next to this file, and `chapters()` reads that.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from minibert_course.export import INIT, parse_directives

ROOT = Path(__file__).resolve().parents[2]
FROZEN = Path(__file__).with_name("chapters.json")  # a student kit's registry, written when the kit is built
PATTERN = "[0-9][0-9]_*.ipynb"
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
    title: str | None = meta.get("title")
    modules: list[str] = []
    default: str | None = None  # the module of a bare `#| export`, as the exporter reads it
    auto = manual = 0.0
    exercises = 0
    for cell in nb["cells"]:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if title is None and cell["cell_type"] == "markdown":
            match = next(filter(None, map(_TITLE.match, source.split("\n"))), None)
            title = match.group(1).split(": ")[0] if match else None
        grading = cell.get("metadata", {}).get("nbgrader", {})
        if grading.get("grade"):
            if cell["cell_type"] == "markdown":
                manual += float(grading.get("points", 0))
            else:
                auto += float(grading.get("points", 0))
        if grading.get("solution"):
            exercises += 1
        if cell["cell_type"] == "code":
            directives, _ = parse_directives(source)
            default = directives.get("default_exp", default)
            module = (directives["export"] or default) if "export" in directives else None
            if module and module != INIT and module not in modules:
                modules.append(module)
    if title is None:
        raise ValueError(f"{path.name}: no markdown cell has the chapter's heading '# Chapter NN · Title'")
    return Chapter(path.stem[:2], path.stem, title, tuple(modules), tuple(meta["tests"]),
                   tuple(meta.get("needs", [])), auto, manual, exercises)


@functools.lru_cache(maxsize=4)
def _chapters(where: Path) -> tuple[Chapter, ...]:
    found = tuple(read(p) for p in sorted(where.glob(PATTERN)) if not p.stem.startswith("00_"))  # 00: the map
    if not found:
        raise ValueError(f"no chapter notebooks (NN_name.ipynb) in {where}: run from the course's folder, with "
                         "minibert_course installed from it (pip install -e .)")
    numbers = [c.number for c in found]
    if numbers != [f"{i:02d}" for i in range(1, len(found) + 1)]:
        raise ValueError(f"the chapters in {where} are numbered {numbers}: each of 01, 02, ... once, in order")
    return found


@functools.lru_cache(maxsize=1)
def _frozen() -> tuple[Chapter, ...]:
    return tuple(Chapter(**{k: tuple(v) if isinstance(v, list) else v for k, v in c.items()})
                 for c in json.loads(FROZEN.read_text(encoding="utf-8")))


def chapters(root: Path = ROOT) -> tuple[Chapter, ...]:
    """Every chapter, in order: a kit's frozen registry, else the notebooks'."""
    if root == ROOT and FROZEN.exists():
        return _frozen()
    return _chapters(folder(root))


def freeze(dest: Path, root: Path = ROOT) -> Path:
    """Write the registry of `root` to `dest` (a kit's src/minibert_course/chapters.json)."""
    dest.write_text(json.dumps([asdict(c) for c in chapters(root)], indent=1) + "\n", encoding="utf-8")
    return dest


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
