"""The Check button's pieces that need no browser: the prebuilt lab extension matches its source, `make lab`'s config
turns it on for students only, the one line on the service, and the notebook path the page may ask to check."""

from __future__ import annotations

import http.server
import json
import threading

import pytest
from conftest import ROOT

from minibert_course import check, labconfig
from minibert_course.lab_check import STAMP, build_stamp, notebook_under, service_status

BUILT = ROOT / "src" / "minibert_course" / "labextension" / "minibert-check"


def test_the_prebuilt_extension_is_built_from_the_committed_source():
    """The stamp `make labextension` wrote: the source files and the bundle, as committed. An edit of labextension/
    without a rebuild, or of the bundle by hand, changes a line."""
    recorded = (BUILT / STAMP).read_text(encoding="utf-8")
    assert build_stamp(ROOT / "labextension", BUILT) == recorded, (
        "labextension/ or its bundle changed since `make labextension`: run it and commit the result")
    names = [line.split("  ", 1)[1] for line in recorded.splitlines()]
    assert {f"source/{n}" for n in ("index.js", "style.css", "package.json", "package-lock.json")} <= set(names)
    built = json.loads((BUILT / "package.json").read_text(encoding="utf-8"))
    load = built["jupyterlab"]["_build"]["load"]
    assert built["name"] == "minibert-check" and f"built/{load}" in names


def test_the_students_lab_turns_the_button_on_and_keeps_other_settings(tmp_path):
    student, instructor = tmp_path / "student", tmp_path / "instructor"
    (student).mkdir()
    (student / "jupyter_server_config.json").write_text(json.dumps({"ServerApp": {"ip": "0.0.0.0"}}))
    for _ in range(2):  # `make lab` runs it at every start: the path is listed once
        labconfig.write_student_config(student)
    server = json.loads((student / "jupyter_server_config.json").read_text())
    assert server["ServerApp"]["ip"] == "0.0.0.0"
    assert server["ServerApp"]["jpserver_extensions"]["minibert_course.lab_check"] is True
    assert server["LabApp"]["extra_labextensions_path"] == [str(BUILT.parent)]
    labconfig.write_instructor_config(instructor)
    assert not (instructor / "jupyter_server_config.json").exists()


@pytest.fixture
def config_file(tmp_path, monkeypatch):
    path = tmp_path / "course-check.json"
    monkeypatch.setenv("MINIBERT_CHECK_CONFIG", str(path))
    monkeypatch.delenv("MINIBERT_CHECK_URL", raising=False)
    monkeypatch.delenv("MINIBERT_CHECK_TOKEN", raising=False)
    return path


def test_the_one_line_on_the_service(config_file):
    assert service_status() == {"configured": False, "url": None, "message": check.NOT_CONFIGURED}
    config_file.write_text('{"url": "https://check.example/"')  # broken JSON: says which file
    status = service_status()
    assert not status["configured"] and str(config_file) in status["message"]
    config_file.write_text(json.dumps({"url": "https://check.example/"}))
    status = service_status()
    assert not status["configured"] and "--token" in status["message"]
    config_file.write_text(json.dumps({"url": "https://check.example/", "token": "t0ken"}))
    status = service_status()
    assert status["configured"] and status["url"] == "https://check.example/" and "t0ken" not in json.dumps(status)


def test_only_a_saved_notebook_inside_the_lab_folder_can_be_sent(tmp_path):
    root = tmp_path / "notebooks"
    (root / "week1").mkdir(parents=True)
    (root / "week1" / "04_masking.ipynb").write_text("{}")
    (tmp_path / "secret.ipynb").write_text("{}")
    (root / "outside.ipynb").symlink_to(tmp_path / "secret.ipynb")
    (root / "notes.txt").write_text("")
    assert notebook_under(root, "week1/04_masking.ipynb") == root / "week1" / "04_masking.ipynb"
    assert notebook_under(root, "/week1/04_masking.ipynb") == root / "week1" / "04_masking.ipynb"
    for bad in ("../secret.ipynb", "outside.ipynb", "notes.txt", "missing.ipynb", str(tmp_path / "secret.ipynb"),
                None, ["04_masking.ipynb"]):
        with pytest.raises(check.CheckError):
            notebook_under(root, bad)


def test_every_way_a_check_can_fail_is_a_sentence_not_a_crash(config_file, tmp_path):
    """What the panel and the terminal show when the configuration or the service is not what they expect."""
    notebook = tmp_path / "04_masking.ipynb"
    notebook.write_text("{}")
    config_file.write_text('["https://check.example/"]')  # JSON, but not the object it must be
    assert not service_status()["configured"] and str(config_file) in service_status()["message"]
    config_file.write_text(json.dumps({"url": "check.example", "token": "t"}))  # no scheme
    with pytest.raises(check.CheckError, match="not a URL"):
        check.check_notebook(notebook)
    for poll in ("/api/instructor/attempts", "/api/attempts/1?x=1", "../api/attempts/1", None):
        with pytest.raises(check.CheckError):
            check.poll_answer(poll)

    class NotTheService(http.server.BaseHTTPRequestHandler):  # a web page where the service should be
        def do_POST(self):  # noqa: N802 - the handler's API
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(b"<html>a login page</html>")

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), NotTheService)
    threading.Thread(target=server.handle_request, daemon=True).start()
    try:
        config_file.write_text(json.dumps({"url": f"http://127.0.0.1:{server.server_port}", "token": "t"}))
        with pytest.raises(check.CheckError, match="not JSON"):
            check.check_notebook(notebook)
    finally:
        server.server_close()
