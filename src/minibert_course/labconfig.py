"""A student's JupyterLab: the nbgrader tool a student uses (Validate), none of the instructor's pages.

`make lab` runs `python -m minibert_course.labconfig $JUPYTER_CONFIG_DIR` before it starts JupyterLab, in this
repository and in a student kit. Without it, nbgrader's formgrader, course list and assignment list load in every
lab and complain that there is no nbgrader_config.py: those are instructor pages (and an exchange this course does
not use). `make formgrader` runs with a config folder of its own, where every nbgrader tool is on
(`make formgrader` runs `python -m minibert_course.labconfig --instructor FOLDER` first).

The student's lab also gets the course's "Check" button (the prebuilt lab extension in
`src/minibert_course/labextension/minibert-check` and its server side, `minibert_course.lab_check`), and `make lab`
prints one line on the checking service: where checks go, or why there is none (no address or no token yet) and what
to do.

Both labs are quiet: JupyterLab 4 would ask "Would you like to get notified about official Jupyter news?" and then
fetch news and check for updates on the internet. Its announcements plugin is off, and its settings say never.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

SERVER_OFF = ("nbgrader.server_extensions.formgrader", "nbgrader.server_extensions.course_list",
              "nbgrader.server_extensions.assignment_list")
LAB_OFF = ("@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:course-list", "@jupyter/nbgrader:create-assignment",
           "@jupyter/nbgrader:assignment-list")
# JupyterLab 4's news prompt, news feed and update check (jupyterlab 4.x, @jupyterlab/apputils-extension)
NEWS_OFF = ("@jupyterlab/apputils-extension:announcements",)
CHECK_SERVER = "minibert_course.lab_check"
LABEXTENSIONS = Path(__file__).resolve().parent / "labextension"  # the Check button, prebuilt (labextension/)
QUIET_SETTINGS = {"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False}}


def _update(path: Path, change) -> None:
    """Apply `change` to the JSON object in `path` (created if missing), keeping every other setting. The file is
    replaced whole, so a server starting meanwhile never reads half of it."""
    data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    change(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(json.dumps(data, indent=2) + "\n")
    os.chmod(tmp, 0o644)  # as a plain write would leave it (mkstemp's file is private)
    os.replace(tmp, path)


def _merge_settings(data: dict) -> None:
    for plugin, settings in QUIET_SETTINGS.items():
        data.setdefault(plugin, {}).update(settings)


def write_quiet_config(folder: str | Path, also_off: tuple[str, ...] = ()) -> None:
    """No news prompt, no news, no update check in the lab of the Jupyter config folder `folder` (and the lab
    plugins `also_off` disabled, in the same write of page_config.json)."""
    folder = Path(folder)
    _update(folder / "labconfig" / "page_config.json", lambda d: d.setdefault("disabledExtensions", {}).update(
        dict.fromkeys((*also_off, *NEWS_OFF), True)))
    _update(folder / "labconfig" / "default_setting_overrides.json", _merge_settings)


def _student_server(data: dict) -> None:
    extensions = data.setdefault("ServerApp", {}).setdefault("jpserver_extensions", {})
    extensions.update(dict.fromkeys(SERVER_OFF, False))
    extensions[CHECK_SERVER] = True
    paths = data.setdefault("LabApp", {}).setdefault("extra_labextensions_path", [])
    if str(LABEXTENSIONS) not in paths:
        paths.append(str(LABEXTENSIONS))


def write_student_config(folder: str | Path) -> None:
    """Turn the instructor's nbgrader tools off in the Jupyter config folder `folder` (server and lab sides), and
    the course's Check button on."""
    folder = Path(folder)
    _update(folder / "jupyter_server_config.json", _student_server)
    write_quiet_config(folder, also_off=LAB_OFF)


def write_instructor_config(folder: str | Path) -> None:
    """The formgrader's Jupyter config folder: every nbgrader tool on (nothing to write), the lab quiet."""
    write_quiet_config(folder)


if __name__ == "__main__":
    args = sys.argv[1:]
    instructor = args[:1] == ["--instructor"]
    if instructor:
        args = args[1:]
    if len(args) != 1:
        raise SystemExit("usage: python -m minibert_course.labconfig [--instructor] JUPYTER_CONFIG_DIR")
    if instructor:
        write_instructor_config(args[0])
    else:
        write_student_config(args[0])
        from minibert_course.lab_check import service_status

        print(f"checking service: {service_status()['message']}")
