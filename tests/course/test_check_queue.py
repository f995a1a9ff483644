"""The checking service with its queue across machines: a real Redis (Debian's redis-server, started and stopped
here), the service started with --redis, and two `worker` processes standing for two machines. Checks sent at once
are shared between the workers, each answered as the local pool would answer it."""

from __future__ import annotations

import csv
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import pytest
from conftest import CELL_TIMEOUT, ROOT, _autograder
from test_check_service import Service

pytestmark = pytest.mark.slow
mutation = _autograder("mutation")
STUDENTS = ["ann", "ben", "cyd", "dee"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, what: str, proc: subprocess.Popen, log: Path, steps: int = 600) -> None:
    for _ in range(steps):  # a step budget for a process to come up
        if predicate():
            return
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    pytest.fail(f"{what} did not come up: {log.read_text()[-2000:]}")


@pytest.fixture(scope="module")
def queued(tmp_path_factory):
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (make installs Debian's when it runs as root: apt-get install "
                    "redis-server); the queue mode was not tested")
    base = tmp_path_factory.mktemp("queue")
    procs, logs = [], []

    def start(name: str, *cmd: str) -> subprocess.Popen:
        log = base / f"{name}.log"
        logs.append(open(log, "w"))  # noqa: SIM115 - closed at the end
        proc = subprocess.Popen(list(cmd), cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=logs[-1],
                                stderr=subprocess.STDOUT)
        procs.append(proc)
        return proc

    port = free_port()
    redis = start("redis", "redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                  "--appendonly", "no", "--dir", str(base))
    url = f"redis://127.0.0.1:{port}/0"
    wait_for(lambda: "Ready to accept connections" in (base / "redis.log").read_text(), "redis-server", redis,
             base / "redis.log")
    course = base / "course"
    roster = base / "roster.csv"
    roster.write_text("student\n" + "\n".join(STUDENTS) + "\n", encoding="utf-8")
    subprocess.run([sys.executable, "-m", "autograder.check_service", "tokens", "--course", str(course), "--roster",
                    str(roster)], cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), check=True,
                   capture_output=True)
    with open(course / "check-service" / "tokens.csv", newline="", encoding="utf-8") as f:
        tokens = {r["student"]: r["token"] for r in csv.DictReader(f)}
    serve = start("serve", sys.executable, "-m", "autograder.check_service", "serve", "--course", str(course),
                  "--port", "0", "--min-interval", "0", "--redis", url, "--cell-timeout", str(CELL_TIMEOUT))
    info = course / "check-service" / "server.json"
    wait_for(info.exists, "the service", serve, base / "serve.log")
    for k in (1, 2):
        worker = start(f"worker{k}", sys.executable, "-m", "autograder.check_service", "worker", "--redis", url,
                       "--work", str(base / f"machine{k}"), "--cell-timeout", str(CELL_TIMEOUT))
        wait_for(lambda k=k: "check worker" in (base / f"worker{k}.log").read_text(), f"worker {k}", worker,
                 base / f"worker{k}.log")
    yield Service(course, json.loads(info.read_text())["url"], tokens, serve), base
    for proc in reversed(procs):
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
    for log in logs:
        log.close()


def test_checks_are_shared_by_the_workers_of_the_queue(queued):
    service, base = queued
    chapter = "04_masking"
    mutant = next(m for m in mutation.load_catalogue(chapter) if m.name == "counts-unchanged-equals-random")
    bodies = {"ann": mutation.submission(chapter, mutant), "ben": mutation.submission(chapter, None),
              "cyd": mutation.submission(chapter, None), "dee": mutation.submission(chapter, mutant)}
    answers = {}

    def send(student):
        answers[student] = service.check(student, chapter, nbformat.writes(bodies[student]).encode())

    threads = [threading.Thread(target=send, args=(s,)) for s in STUDENTS]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for student in STUDENTS:
        status, answer = answers[student]
        assert status == 200 and answer["status"] == "done", answer
    assert answers["ben"][1]["score"] == answers["ben"][1]["max_score"] == answers["cyd"][1]["score"]
    wrong = answers["ann"][1]
    assert [t["name"] for t in wrong["tests"] if not t["passed"]] == ["test-counts"]
    assert mutant.why in wrong["diagnosis"] and wrong["checks_left"] == 2
    graded = [(base / f"worker{k}.log").read_text().count("graded a check of 04_masking") for k in (1, 2)]
    assert sum(graded) == 4 and min(graded) >= 1, f"checks per worker: {graded}"
