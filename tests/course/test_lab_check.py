"""The Check button's pieces that need no browser: the prebuilt lab extension matches its source, `make lab`'s config
turns it on for students only, the one line on the service, and the notebook path the page may ask to check."""

from __future__ import annotations

import hashlib
import json
import os

import pytest
from conftest import ROOT

from minibert_course import check, labconfig
from minibert_course.lab_check import notebook_under, service_status

BUILT = ROOT / "src" / "minibert_course" / "labextension" / "minibert-check"


def test_the_prebuilt_extension_is_built_from_the_committed_source():
    stamp = (BUILT / "source.sha256").read_text(encoding="utf-8").split("\n")
    recorded = dict(reversed(line.split("  ", 1)) for line in stamp if line)
    assert set(recorded) == {"index.js", "style.css", "package.json", "package-lock.json"}
    for name, digest in recorded.items():
        actual = hashlib.sha256((ROOT / "labextension" / name).read_bytes()).hexdigest()
        assert actual == digest, f"labextension/{name} changed since the build: run `make labextension` and commit"
    built = json.loads((BUILT / "package.json").read_text(encoding="utf-8"))
    assert built["name"] == "minibert-check" and (BUILT / built["jupyterlab"]["_build"]["load"]).is_file()


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
    assert os.path.exists(tmp_path / "secret.ipynb")
