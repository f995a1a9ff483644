"""The student's "Check" button in JupyterLab, server side: a Jupyter server extension that sends a saved notebook to
the course's checking service and hands the answer back to the page.

Why a server extension and not a request from the page itself: the token stays in `course-check.json` on the
student's disk (the page never holds it), the service needs no cross-origin rules for every student's lab, and the
terminal command (`python -m minibert_course.check`) and the button go through the same code, `check.check_notebook`.

Two routes, both behind the lab's own login (its token or password):

    GET  /minibert-check/config   {"configured": bool, "url": ..., "message": one line for the student}
    POST /minibert-check/check    {"path": "04_masking.ipynb"} -> the service's answer, plus "text" (as the terminal
                                  prints it); a check that did not happen -> {"status": "refused", "error": why}

`make lab` turns the extension on (`labconfig.write_student_config`) and the lab side (the button and its panel) is
the prebuilt JupyterLab extension in `labextension/minibert-check`, built from `labextension/` at the repository root.
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


class ConfigHandler(APIHandler):
    @web.authenticated
    def get(self) -> None:
        self.finish(json.dumps(service_status()))


class CheckHandler(APIHandler):
    @web.authenticated
    async def post(self) -> None:
        body = self.get_json_body() or {}
        try:
            path = notebook_under(self.settings["server_root_dir"], body.get("path"))
            # the check waits on the service (a minute or more): in a thread, so the lab stays responsive
            answer = await asyncio.get_running_loop().run_in_executor(None, check.check_notebook, path,
                                                                      body.get("chapter"))
        except check.CheckError as exc:
            self.finish(json.dumps({"status": "refused", "error": str(exc)}))
            return
        answer["text"] = check.describe(answer)
        self.finish(json.dumps(answer))


def _jupyter_server_extension_points() -> list[dict]:
    return [{"module": "minibert_course.lab_check"}]


def _load_jupyter_server_extension(serverapp) -> None:
    web_app = serverapp.web_app
    base = web_app.settings["base_url"]
    web_app.add_handlers(".*$", [(url_path_join(base, ROUTE, "config"), ConfigHandler),
                                 (url_path_join(base, ROUTE, "check"), CheckHandler)])
    serverapp.log.info("minibert check: %s", service_status()["message"])
