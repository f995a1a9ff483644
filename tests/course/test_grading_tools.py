"""The instructor's grading tools around `make grade`: drop folders with zips, shards merged from several machines,
and `make formgrader` on the graded course (nbgrader's formgrader, for the manually graded answers)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
import zipfile

import nbformat
import pytest
from conftest import ROOT, _autograder

pytestmark = pytest.mark.slow


def test_discover_reads_zips_safely_and_matches_renamed_notebooks(tmp_path):
    grade = _autograder("grade")
    mutation = _autograder("mutation")
    drop = tmp_path / "drop"
    drop.mkdir()
    nb = nbformat.writes(mutation.submission("02_embeddings", None))
    with zipfile.ZipFile(drop / "zoe.zip", "w") as zf:
        zf.writestr("homework/02_embeddings.ipynb", nb)
        zf.writestr("../../escape.ipynb", nb)
        zf.writestr("minibert/embeddings.py", "raise SystemExit")
    (drop / "yan").mkdir()
    (drop / "yan" / "Chapter two (copy).ipynb").write_text(nb, encoding="utf-8")
    (drop / "yan" / "notes.ipynb").write_text('{"cells": []}', encoding="utf-8")
    (drop / "bad.zip").write_bytes(b"not a zip")
    subs = grade.discover(drop, ["01_wordpiece", "02_embeddings"], tmp_path / "work")
    by = {(s.student, s.chapter): s for s in subs}
    assert by[("zoe", "02_embeddings")].path.name == "02_embeddings.ipynb" and not by[("zoe", "02_embeddings")].problem
    assert any("unsafe zip entry" in n for n in by[("zoe", "02_embeddings")].notes)
    assert not (tmp_path / "escape.ipynb").exists() and not (tmp_path / "work" / "escape.ipynb").exists()
    assert "renamed notebook" in " ".join(by[("yan", "02_embeddings")].notes)
    assert "unreadable zip" in by[("bad", "01_wordpiece")].problem
    assert ("zoe", "01_wordpiece") not in by


def test_shards_graded_apart_merge_into_one_gradebook(graded_class, tmp_path):
    """--shard K/N on two 'machines', then --merge: the merged gradebook equals the class run's rows."""
    grade = _autograder("grade")
    drop = tmp_path / "drop"
    for student in ("h-wrong-kernel", "h-sys-exit", "control"):
        src = graded_class.drop / student
        (drop / student).mkdir(parents=True)
        for f in src.glob("*02_embeddings*.ipynb"):
            shutil.copy2(f, drop / student / f.name)
    parts = []
    for k in (1, 2):
        course = tmp_path / f"machine{k}"
        subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-m", "autograder.grade", "--course",
                        str(course), "--submissions", str(drop), "--assignment", "02_embeddings", "--shard",
                        f"{k}/2"], check=True, capture_output=True, timeout=900, cwd=ROOT)
        parts.append(course)
    main = tmp_path / "main"
    grade.setup_course(main, ["02_embeddings"])
    run = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-m", "autograder.grade", "--course",
                          str(main), "--merge", *map(str, parts)], capture_output=True, text=True, timeout=300,
                         cwd=ROOT)
    assert run.returncode == 0 and "merged 3 submissions" in run.stdout, run.stdout + run.stderr
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{main / 'gradebook.db'}", "minibert") as gb:
        merged = {s.student.id: s.score for s in gb.assignment_submissions("02_embeddings")}
    expected = {r["student"]: float(r["score"]) for r in graded_class.report.rows
                if r["assignment"] == "02_embeddings" and r["student"] in merged}
    assert merged == expected and len(merged) == 3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_make_formgrader_serves_nbgraders_formgrader_on_the_course(graded_class):
    port, token = free_port(), "minibert-test-token"
    env = dict(os.environ)
    env["COURSE"] = str(graded_class.course)
    env["LAB_ARGS"] = f"--no-browser --port={port} --ServerApp.token={token} --ServerApp.ip=127.0.0.1"
    proc = subprocess.Popen(["make", "-s", "formgrader"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline, body = time.monotonic() + 120, None
        while time.monotonic() < deadline and body is None:
            try:
                url = f"http://127.0.0.1:{port}/formgrader/api/assignments?token={token}"
                body = urllib.request.urlopen(url, timeout=5).read()
            except OSError:
                time.sleep(1)
        assert body is not None, "the formgrader did not answer"
        assignments = {a["name"]: a for a in json.loads(body)}
        assert "02_embeddings" in assignments and assignments["02_embeddings"]["num_submissions"] > 10
        url = f"http://127.0.0.1:{port}/formgrader/api/submissions/02_embeddings?token={token}"
        subs = {s["student"]: s for s in json.loads(urllib.request.urlopen(url, timeout=30).read())}
        assert subs["control"]["score"] == subs["control"]["max_score"] > 0
        assert subs["h-sys-exit"]["score"] == 0
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/formgrader?token={token}", timeout=30).read()
        assert b"formgrader" in page.lower()
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)
