"""`make release` and `make check-sync`: solutions/ is the single source of notebooks/ and src/minibert/.

- src/minibert/<module>.py = the export of solutions/*.ipynb with nbgrader's solution markers dropped;
- notebooks/<chapter>.ipynb = nbgrader's `generate_assignment` of each solution notebook (real nbgrader,
  with the course's nbgrader_config.py): solutions replaced by named stubs, hidden tests removed, outputs
  cleared, cells locked and checksummed;
- notebooks/00_course_map.ipynb = the course map (`minibert_course.course_map`): no exercises, not graded.

`--check` regenerates both in a temporary folder and fails, listing the files, when the committed trees
differ (TinyTorch's lesson: copies of the same code drift apart unless a check fails on drift).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import shutil
import sys
import tempfile
from pathlib import Path

from traitlets.config import Config, PyFileConfigLoader

from minibert_course.export import PACKAGE, build_package

ROOT = Path(__file__).resolve().parents[2]


def solution_notebooks(root: Path) -> list[Path]:
    notebooks = sorted((root / "solutions").glob("[0-9][0-9]_*.ipynb"))
    if not notebooks:
        raise SystemExit(f"no solution notebooks (NN_name.ipynb) in {root / 'solutions'}")
    return notebooks


def nbgrader_config(root: Path) -> Config:
    loader = PyFileConfigLoader("nbgrader_config.py", path=str(root / "autograder"))
    return loader.load_config()


@contextlib.contextmanager
def venv_on_path():
    """nbgrader runs `alembic` from PATH: this interpreter's bin folder comes first while it runs, and PATH is as it
    was afterwards (a caller's environment is not changed behind its back)."""
    saved = os.environ.get("PATH")
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + (saved or "")
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("PATH", None)
        else:
            os.environ["PATH"] = saved


def generate_assignments(notebooks: list[Path], course: Path, config: Config) -> dict[str, Path]:
    """Run nbgrader generate_assignment on each notebook (one assignment per chapter) in `course`.

    Returns notebook file name -> path of its release version.
    """
    config = Config(config)  # a copy: do not leak the course root into the caller's config
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.db_url = f"sqlite:///{course / 'gradebook.db'}"
    released = {}
    with venv_on_path():
        for nb in notebooks:
            released[nb.name] = _generate_one(nb, course, config)
    return released


def _generate_one(nb: Path, course: Path, config: Config) -> Path:
    """nbgrader generate_assignment on one notebook; returns its release version."""
    from nbgrader.converters import GenerateAssignment
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.utils import capture_log

    source = course / "source" / nb.stem
    source.mkdir(parents=True, exist_ok=True)
    shutil.copy2(nb, source / nb.name)
    coursedir = CourseDirectory(config=config)
    coursedir.assignment_id = nb.stem
    app = GenerateAssignment(coursedir=coursedir, config=config)
    app.force = True
    result = capture_log(app)
    if not result["success"]:
        detail = f"{result['log']}\n{result.get('error', '')}"
        raise RuntimeError(f"nbgrader generate_assignment failed on {nb.name}:\n{detail}")
    out = course / "release" / nb.stem / nb.name
    if not out.exists():
        raise RuntimeError(f"nbgrader generate_assignment wrote no {out}")
    return out


def generate(root: Path = ROOT) -> dict[str, str]:
    """Relative path -> text of every generated file (notebooks/ and src/minibert/)."""
    notebooks = solution_notebooks(root)
    files = {f"src/{PACKAGE}/{name}": text for name, text in build_package(notebooks).items()}
    with tempfile.TemporaryDirectory(prefix="minibert-release-") as tmp:
        released = generate_assignments(notebooks, Path(tmp), nbgrader_config(root))
        for name, path in released.items():
            files[f"notebooks/{name}"] = path.read_text(encoding="utf-8")
    from minibert_course.course_map import MAP_NOTEBOOK, notebook_text  # notebook 00: from the chapters' data

    files[f"notebooks/{MAP_NOTEBOOK}"] = notebook_text(root)
    return files


def current(root: Path) -> dict[str, str]:
    paths = [*(root / "notebooks").glob("*.ipynb"), *(root / "src" / PACKAGE).glob("*.py")]
    return {str(p.relative_to(root)): p.read_text(encoding="utf-8") for p in paths}


def drift(root: Path, files: dict[str, str]) -> list[str]:
    have = current(root)
    problems = []
    for rel in sorted(set(files) | set(have)):
        if rel not in have:
            problems.append(f"missing: {rel}")
        elif rel not in files:
            problems.append(f"not generated from solutions/ (remove it): {rel}")
        elif have[rel] != files[rel]:
            diff = difflib.unified_diff(have[rel].splitlines(), files[rel].splitlines(), lineterm="", n=0)
            sample = "\n      ".join(list(diff)[2:8])
            problems.append(f"differs: {rel}\n      {sample}")
    return problems


def write(root: Path, files: dict[str, str]) -> None:
    for rel in set(current(root)) - set(files):
        (root / rel).unlink()
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="fail when the committed trees drift")
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args(argv)
    files = generate(args.root)
    if args.check:
        problems = drift(args.root, files)
        if problems:
            print("notebooks/ or src/minibert/ differ from what solutions/ generate:", file=sys.stderr)
            print("  " + "\n  ".join(problems), file=sys.stderr)
            print("Run `make release` and commit the result.", file=sys.stderr)
            return 1
        print(f"in sync: {len(files)} generated files match solutions/")
        return 0
    write(args.root, files)
    print(f"released {len(files)} files from solutions/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
