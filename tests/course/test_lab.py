"""`make lab` starts a working JupyterLab on the course notebooks.

The server is started through the Makefile's `lab` target (with the current interpreter's venv as BIN, so nothing is
reinstalled) on a free port of 127.0.0.1 with a random token, and HOME pointed at an empty folder. Checked over HTTP:
the token is required; every notebooks/*.ipynb is listed as a notebook and opens; /lab serves the JupyterLab page
and its main script; the python3 kernel is offered; Jupyter state goes where the Makefile says (build/jupyter); and
after the server has stopped, nothing was written into HOME.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]  # tests/course/ -> the repository
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
STARTUP_TIMEOUT_S = 90
# No proxy for 127.0.0.1, whatever http_proxy says.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
# A headless browser for the rendering check: $CHROMIUM if set, else Debian's chromium.
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


class Lab:
    """A `make lab` server in its own process group; `stop()` ends the whole group."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.home = tmp / "home"
        self.home.mkdir()
        self.log = tmp / "lab.log"
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def command(self) -> list[str]:
        # Not .resolve(): that would leave the venv for the interpreter it was made from.
        bin_dir = Path(sys.executable).absolute().parent
        # A stamp that exists and is newer than pyproject.toml, and `-o` so make never runs the install recipe for it.
        stamp = self.tmp / "installed.stamp"
        stamp.touch()
        lab_args = [f"--port={self.port}", "--ServerApp.ip=127.0.0.1", "--ServerApp.port_retries=0",
                    "--no-browser", "--ServerApp.open_browser=False", f"--ServerApp.token={self.token}"]
        # No --allow-root here: as root (containers, CI) the Makefile must add it itself, as a user running
        # `make lab` needs.
        return ["make", "--no-print-directory", "-o", str(stamp), "lab", f"BIN={bin_dir}", f"STAMP={stamp}",
                f"LAB_ARGS={' '.join(lab_args)}"]

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        # A make running this suite (`make test`) must not pass its flags, level or jobserver to this one.
        for var in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "JUPYTER_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME",
                    "XDG_DATA_HOME", "XDG_STATE_HOME"):
            env.pop(var, None)
        # The Makefile exports its own (build/jupyter/...), which win; these are a fallback that keeps HOME clean.
        for var, sub in [("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"), ("IPYTHONDIR", "ipython"),
                         ("MPLCONFIGDIR", "matplotlib")]:
            env[var] = str(self.tmp / "jupyter" / sub)
        env["HOME"] = str(self.home)
        env["PATH"] = str(Path(sys.executable).absolute().parent) + os.pathsep + env.get("PATH", "")
        return env

    def start(self, tries: int = 3) -> None:
        for _ in range(tries):
            if self._launch():
                return
            # Another process took the free port between free_port() and the server's bind: another port.
            self.port = free_port()
            self.base = f"http://127.0.0.1:{self.port}"
        pytest.fail(f"`make lab` found its port taken {tries} times:\n{self.log_tail()}")

    def _launch(self) -> bool:
        """Start `make lab` and wait until it serves; False when its port was taken."""
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(self.command(), cwd=ROOT, env=self.environment(), stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                if "already in use" in self.log_tail():
                    return False
                pytest.fail(f"`make lab` exited with {self.proc.returncode} before serving:\n{self.log_tail()}")
            try:
                status, _, _ = self.get("/api/status")
                if status == 200:
                    # jupyter-lsp looks for language servers (running npm) in the background after startup;
                    # /lsp/status answers once that is done, so what it writes is seen by the HOME check.
                    status, _, body = self.get("/lsp/status")
                    assert status in (200, 404), f"/lsp/status: {status} {body[:300]}"
                    return True
            except OSError:  # not listening yet
                pass
            time.sleep(0.5)
        pytest.fail(f"JupyterLab did not answer /api/status within {STARTUP_TIMEOUT_S} s:\n{self.log_tail()}")

    def stop(self) -> None:
        """SIGTERM to the whole process group (make and the server), then SIGKILL to whatever is left."""
        for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
            if not self._group_alive():
                return
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and self._group_alive():
                time.sleep(0.2)

    def _group_alive(self) -> bool:
        if self.proc is None:
            return False
        self.proc.poll()  # reap make once it exits, so that an emptied group disappears
        try:
            os.killpg(self.proc.pid, 0)
        except ProcessLookupError:
            return False
        return True

    def log_tail(self, n: int = 4000) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-n:] if self.log.exists() else "(no log)"

    def get(self, path: str, token: bool = True, **params: str) -> tuple[int, str, str]:
        """GET path; returns (status, content type, body). HTTP errors are returned, not raised."""
        if token:
            params["token"] = self.token
        url = self.base + path + ("?" + urllib.parse.urlencode(params) if params else "")
        try:
            with OPENER.open(url, timeout=30) as r:
                return r.status, r.headers.get("Content-Type", ""), r.read().decode("utf-8", errors="replace")
        except urllib.error.HTTPError as e:
            return e.code, e.headers.get("Content-Type", ""), e.read().decode("utf-8", errors="replace")

    def get_json(self, path: str, **params: str):
        status, _, body = self.get(path, **params)
        assert status == 200, f"GET {path}: {status}\n{body[:500]}\n{self.log_tail()}"
        return json.loads(body)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    server = Lab(tmp_path_factory.mktemp("lab"))
    try:
        server.start()
        yield server
    finally:
        server.stop()


def test_token_is_required(lab):
    status, _, _ = lab.get("/api/contents", token=False)
    assert status == 403, f"/api/contents without the token answered {status}"


def test_every_course_notebook_is_listed_and_opens(lab):
    assert "01_wordpiece.ipynb" in [p.name for p in NOTEBOOKS]
    listing = lab.get_json("/api/contents")
    assert listing["type"] == "directory"
    served = {item["name"]: item["type"] for item in listing["content"]}
    for nb in NOTEBOOKS:
        assert served.get(nb.name) == "notebook", f"{nb.name} not listed as a notebook by the server: {served}"
        model = lab.get_json(f"/api/contents/{urllib.parse.quote(nb.name)}", content="1")
        assert model["type"] == "notebook" and model["format"] == "json"
        assert model["content"]["nbformat"] == 4 and model["content"]["cells"], f"{nb.name} opened empty"


def test_lab_page_and_its_script_are_served(lab):
    status, ctype, html = lab.get("/lab")
    assert status == 200 and ctype.startswith("text/html"), f"/lab: {status} {ctype}"
    assert "<title>JupyterLab</title>" in html
    config = json.loads(re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', html,
                                  re.S).group(1))
    assert config["appName"] == "JupyterLab"
    # Lab state (settings, workspaces) goes under the project's build/jupyter, as the Makefile promises.
    config_dir = ROOT / "build" / "jupyter" / "config"
    for key in ("userSettingsDir", "workspacesDir"):
        assert Path(config[key]).is_relative_to(config_dir), f"{key} is {config[key]}, not under {config_dir}"
    scripts = re.findall(r'<script[^>]+src="([^"]+)"', html)
    assert any("/static/lab/main." in s for s in scripts), f"no main bundle in the page: {scripts}"
    for src in scripts:
        path, _, query = src.partition("?")
        status, ctype, body = lab.get(path, **dict(urllib.parse.parse_qsl(query)))
        assert status == 200 and "javascript" in ctype and body, f"{src}: {status} {ctype}"


def test_python3_kernel_is_offered(lab):
    specs = lab.get_json("/api/kernelspecs")
    assert "python3" in specs["kernelspecs"], sorted(specs["kernelspecs"])
    assert specs["kernelspecs"]["python3"]["spec"]["language"] == "python"


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium: not on PATH (apt-get install chromium) and $CHROMIUM unset")
def test_lab_renders_the_notebooks_in_a_browser(lab, tmp_path):
    """Headless chromium loads /lab and runs its JavaScript; the file browser then lists every course notebook."""
    assert os.access(CHROMIUM, os.X_OK), f"chromium {CHROMIUM} is not executable"
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")} | {"HOME": str(tmp_path / "home")}
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
               "--no-proxy-server", f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=30000",
               "--dump-dom", f"{lab.base}/lab?token={lab.token}"]
    browser = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = browser.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        out, err = b"", b"timed out after 120 s"
    finally:
        try:
            os.killpg(browser.pid, signal.SIGKILL)  # its helper processes too
        except ProcessLookupError:
            pass
        browser.wait()
    dom = out.decode("utf-8", errors="replace")
    why = (f"chromium exited {browser.returncode}:\n{err.decode(errors='replace')[-3000:]}\n"
           f"server log:\n{lab.log_tail()}")
    assert 'id="filebrowser"' in dom, f"JupyterLab did not render its file browser; {why}"
    for nb in NOTEBOOKS:
        assert re.search(rf'jp-DirListing-itemText"[^>]*><span>{re.escape(nb.name)}</span>', dom), \
            f"{nb.name} not shown in the file browser; {why}"


def test_student_lab_shows_validate_but_no_instructor_pages(lab):
    """A student's lab has nbgrader's Validate button and none of the instructor's tools: no formgrader page, no
    course or assignment list (which complained that there is no nbgrader_config.py)."""
    status, _, _ = lab.get("/formgrader")
    assert status == 404, f"/formgrader answered {status}: the formgrader is loaded in the student lab"
    status, _, page = lab.get("/lab")
    assert status == 200
    config = json.loads(re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', page,
                                  re.S).group(1))
    disabled = config.get("disabledExtensions", [])
    disabled = set(disabled) if isinstance(disabled, list) else {k for k, v in disabled.items() if v}
    for plugin in ("formgrader", "course-list", "create-assignment", "assignment-list"):
        assert f"@jupyter/nbgrader:{plugin}" in disabled, f"{plugin} is on in the student lab: {sorted(disabled)}"
    assert "@jupyter/nbgrader:validate-assignment" not in disabled, "the Validate button must stay"
    assert "nbgrader_config.py" not in lab.log_tail(200_000), lab.log_tail()


def page_config(lab) -> dict:
    status, _, page = lab.get("/lab")
    assert status == 200, f"/lab answered {status}"
    return json.loads(re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', page,
                                re.S).group(1))


def assert_no_news_prompt(lab) -> None:
    """JupyterLab 4 asks "Would you like to get notified about official Jupyter news?" unless told: the course's lab
    config turns its announcements plugin off and sets the news feed and the update check to never."""
    disabled = page_config(lab).get("disabledExtensions", [])
    disabled = set(disabled) if isinstance(disabled, list) else {k for k, v in disabled.items() if v}
    assert "@jupyterlab/apputils-extension:announcements" in disabled, sorted(disabled)
    settings = lab.get_json("/lab/api/settings/@jupyterlab/apputils-extension:notification")
    for key, never in (("fetchNews", "false"), ("checkForUpdates", False)):  # the user's setting, else the default
        value = (settings.get("settings") or {}).get(key, settings["schema"]["properties"][key]["default"])
        assert value == never, f"{key} is {value!r}, not {never!r}: {settings}"


def test_the_lab_does_not_ask_about_jupyter_news(lab):
    assert_no_news_prompt(lab)


def test_nothing_is_written_to_home(lab):
    """Last in the file: it stops the server, so that what is written at shutdown is seen too."""
    lab.get_json("/api/status")
    lab.stop()
    assert lab.proc.poll() is not None
    written = files_under(lab.home)
    assert not written, f"`make lab` wrote into HOME ({lab.home}): {written}"


