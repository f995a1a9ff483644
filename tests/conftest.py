"""Shared fixtures: the repository paths, a sandboxed Jupyter environment, and submission builders."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest

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


def hf_config(cfg, **extra):
    """The transformers.BertConfig with the same fields as a minibert BertConfig."""
    import dataclasses

    import transformers

    return transformers.BertConfig(**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}, **extra)


def max_diff(a, b) -> float:
    return (a - b).abs().max().item()


@pytest.fixture(scope="module")
def offline():
    """No network: the Hugging Face hub is switched to offline mode while a module's models load."""
    import huggingface_hub.constants

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # read once at import time
        yield
