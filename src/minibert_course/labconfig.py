"""A student's JupyterLab: the nbgrader tool a student uses (Validate), none of the instructor's pages.

`make lab` runs `python -m minibert_course.labconfig $JUPYTER_CONFIG_DIR` before it starts JupyterLab, in this
repository and in a student kit. Without it, nbgrader's formgrader, course list and assignment list load in every
lab and complain that there is no nbgrader_config.py: those are instructor pages (and an exchange this course does
not use). `make formgrader` runs with a config folder of its own, where every nbgrader tool is on.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SERVER_OFF = ("nbgrader.server_extensions.formgrader", "nbgrader.server_extensions.course_list",
              "nbgrader.server_extensions.assignment_list")
LAB_OFF = ("@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:course-list", "@jupyter/nbgrader:create-assignment",
           "@jupyter/nbgrader:assignment-list")


def _update(path: Path, change) -> None:
    """Apply `change` to the JSON object in `path` (created if missing), keeping every other setting."""
    data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    change(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def write_student_config(folder: str | Path) -> None:
    """Turn the instructor's nbgrader tools off in the Jupyter config folder `folder` (server and lab sides)."""
    folder = Path(folder)
    _update(folder / "jupyter_server_config.json", lambda d: d.setdefault("ServerApp", {}).setdefault(
        "jpserver_extensions", {}).update(dict.fromkeys(SERVER_OFF, False)))
    _update(folder / "labconfig" / "page_config.json", lambda d: d.setdefault("disabledExtensions", {}).update(
        dict.fromkeys(LAB_OFF, True)))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m minibert_course.labconfig JUPYTER_CONFIG_DIR")
    write_student_config(sys.argv[1])
