"""The student's "Check" button in JupyterLab, server side: a Jupyter server extension that sends a saved notebook to
the course's checking service and hands the answer back to the page.

Why a server extension and not a request from the page itself: the token stays in `course-check.json` on the
student's disk (the page never holds it), the service needs no cross-origin rules for every student's lab, and the
terminal command (`python -m minibert_course.check`) and the button go through the same code (`check.submit_notebook`,
`check.poll_answer`).

Three routes, all behind the lab's own login (its token or password, and its XSRF check for the page's POST):

    GET  /minibert-check/config          {"configured": bool, "url": ..., "message": one line for the student}
    POST /minibert-check/check           {"path": "04_masking.ipynb"} -> {"status": "waiting", "poll": ...} at once
    GET  /minibert-check/answer?poll=... the service's answer so far; once "done", with "text" (as the terminal
                                         prints it)

Each short: the page polls, so no request waits through a grade (a proxy in front of the lab would time it out).
A check that did not happen is answered {"status": "refused", "error": why}, whatever went wrong.

`make lab` turns the extension on (`labconfig.write_student_config`); the lab side (the button and its panel) is the
prebuilt JupyterLab extension in `src/minibert_course/labextension/minibert-check`, built from `labextension/` at the
repository root (`make labextension`).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

from minibert_course import check

ROUTE = "minibert-check"


def service_status() -> dict:
    """Whether checks can be sent, and one line that says so (or what is missing and how to add it)."""
    try:
        config = check.load_config()
    except check.CheckError as exc:
        return {"configured": False, "url": None, "message": str(exc)}
    if not config.get("url"):
        return {"configured": False, "url": None, "message": check.NOT_CONFIGURED}
    if not config.get("token"):
        return {"configured": False, "url": config["url"],
                "message": f"The checking service is {config['url']}, but you have no token yet: run `python -m "
                           "minibert_course.check --token TOKEN` with the token your instructor gave you."}
    return {"configured": True, "url": config["url"],
            "message": f"Checks go to {config['url']} (a few per chapter per hour)."}


def notebook_under(root: str | Path, relative: str) -> Path:
    """The notebook `relative` (a path as the lab names it) inside the lab's root folder, and nowhere else."""
    root = Path(root).resolve()
    if not isinstance(relative, str) or not relative.endswith(".ipynb"):
        raise check.CheckError(f"only a notebook (.ipynb) can be checked, not {relative!r}")
    path = (root / relative.lstrip("/")).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        raise check.CheckError(f"{relative} is not a saved notebook in this lab's folder")
    return path


def _refused(handler: APIHandler, exc: Exception) -> None:
    if not isinstance(exc, check.CheckError):  # a bug or a surprise: the lab's log has it, the student a sentence
        handler.log.exception("minibert check failed")
        exc = check.CheckError(f"the check did not happen ({type(exc).__name__}: {exc}); try again, or use "
                               "`python -m minibert_course.check` in a terminal")
    handler.finish(json.dumps({"status": "refused", "error": str(exc)}))


class ConfigHandler(APIHandler):
    @web.authenticated
    def get(self) -> None:
        self.finish(json.dumps(service_status()))


class CheckHandler(APIHandler):
    @web.authenticated
    async def post(self) -> None:
        try:
            body = self.get_json_body()
            if not isinstance(body, dict):
                raise check.CheckError('the page must send {"path": "..."}')
            path = notebook_under(self.settings["server_root_dir"], body.get("path"))
            # one request to the service (the upload): in a thread, so the lab stays responsive meanwhile
            queued = await asyncio.get_running_loop().run_in_executor(None, check.submit_notebook, path)
            self.finish(json.dumps({"status": "waiting", "attempt": queued.get("attempt"), "poll": queued["poll"]}))
        except Exception as exc:  # noqa: BLE001 - every failure becomes a sentence in the panel
            _refused(self, exc)


class AnswerHandler(APIHandler):
    @web.authenticated
    async def get(self) -> None:
        try:
            answer = await asyncio.get_running_loop().run_in_executor(None, check.poll_answer,
                                                                      self.get_argument("poll", ""))
            if answer["status"] == "done":
                answer["text"] = check.describe(answer)
            self.finish(json.dumps(answer))
        except Exception as exc:  # noqa: BLE001
            _refused(self, exc)


SOURCE_FILES = ("index.js", "style.css", "package.json", "package-lock.json")
STAMP = "source.sha256"


def build_stamp(source: Path, built: Path) -> str:
    """SHA-256 of the extension's source files and of what `make labextension` built from them, one per line: the
    stamp the build writes into `built/source.sha256` and a test recomputes, so that a source edited without a
    rebuild, or a bundle changed by hand, is caught."""
    import hashlib

    files = [(f"source/{name}", source / name) for name in SOURCE_FILES]
    files += [(f"built/{f.relative_to(built).as_posix()}", f) for f in sorted(built.rglob("*"))
              if f.is_file() and f.name != STAMP]
    return "".join(f"{hashlib.sha256(f.read_bytes()).hexdigest()}  {name}\n" for name, f in files)


def _jupyter_server_extension_points() -> list[dict]:
    return [{"module": "minibert_course.lab_check"}]


def _load_jupyter_server_extension(serverapp) -> None:
    web_app = serverapp.web_app
    base = web_app.settings["base_url"]
    web_app.add_handlers(".*$", [(url_path_join(base, ROUTE, "config"), ConfigHandler),
                                 (url_path_join(base, ROUTE, "check"), CheckHandler),
                                 (url_path_join(base, ROUTE, "answer"), AnswerHandler)])
    serverapp.log.info("minibert check: %s", service_status()["message"])


if __name__ == "__main__":  # make labextension: python -m minibert_course.lab_check --stamp SOURCE BUILT
    import sys

    if len(sys.argv) != 4 or sys.argv[1] != "--stamp":
        raise SystemExit("usage: python -m minibert_course.lab_check --stamp SOURCE_FOLDER BUILT_FOLDER")
    source, built = Path(sys.argv[2]), Path(sys.argv[3])
    (built / STAMP).write_text(build_stamp(source, built), encoding="utf-8")
