"""The checking service (autograder/check_service.py), started for real on loopback, with the client students use
(`python -m minibert_course.check`): answers per test without hidden text, the catalogue's diagnosis, rate limits,
deadlines, size limits, students kept apart, the instructor's view, the hostile suite sent through it, and a
bounded load test (50 checks from 10 students at once: every one answered, none lost)."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest
from conftest import CELL_TIMEOUT, ROOT, _autograder, read

from minibert_course.nbgrader_ext import secret_lines

pytestmark = pytest.mark.slow
mutation = _autograder("mutation")
hostile = _autograder("hostile")
service_module = _autograder("check_service")
TOTAL_TIMEOUT = 300  # seconds per notebook in these tests (make grade's default is 900): a bound the polls outlast
PAST_DEADLINE = "03_attention"  # this chapter's checks are refused: its deadline has passed
LOAD_STUDENTS = [f"load{i:02d}" for i in range(10)]
LOAD_CHAPTERS = ["02_embeddings", "04_masking", "07_task_heads", "02_embeddings", "04_masking"]  # 5 checks each


class Service:
    def __init__(self, course: Path, url: str, tokens: dict[str, str], proc: subprocess.Popen):
        self.course, self.url, self.tokens, self.proc = course, url, tokens, proc

    def call(self, student: str, method: str, path: str, body: bytes | None = None) -> tuple[int, dict]:
        headers = {"Authorization": f"Bearer {self.tokens[student]}"} if student else {}
        req = urllib.request.Request(self.url + path, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def check(self, student: str, chapter: str, body: bytes) -> tuple[int, dict]:
        """Submit and wait for the answer (polling: the service answers at once with the attempt to poll)."""
        status, reply = self.call(student, "POST", f"/api/check/{chapter}", body)
        if status != 202:
            return status, reply
        for _ in range(3000):  # a step budget, not a clock: each poll is one request
            status, answer = self.call(student, "GET", reply["poll"])
            if answer.get("status") in ("done", "error"):
                return status, answer
            time.sleep(0.2)
        pytest.fail(f"attempt {reply['attempt']} never answered")


def notebook_bytes(nb) -> bytes:
    return nbformat.writes(nb).encode()


@contextlib.contextmanager
def running_service(base: Path, students: list[str], *serve_args: str):
    """Tokens for `students` (from a roster), then `check_service serve` on loopback with `serve_args`; stopped
    on exit."""
    course = base / "course"
    roster = base / "students.csv"
    roster.write_text("student\n" + "\n".join(students) + "\n", encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-m", "autograder.check_service", "tokens", "--course", str(course),
                          "--roster", str(roster)], cwd=ROOT, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    with open(course / "check-service" / "tokens.csv", newline="", encoding="utf-8") as f:
        tokens = {r["student"]: r["token"] for r in csv.DictReader(f)}
    log = open(base / "serve.log", "w")  # noqa: SIM115 - closed with the server
    proc = subprocess.Popen([sys.executable, "-m", "autograder.check_service", "serve", "--course", str(course),
                             "--port", "0", "--cell-timeout", str(CELL_TIMEOUT), *serve_args],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    info = course / "check-service" / "server.json"
    try:
        for _ in range(600):  # a step budget: building the judge packages takes a few seconds
            if info.exists() or proc.poll() is not None:
                break
            time.sleep(0.5)
        assert info.exists(), (base / "serve.log").read_text()
        yield Service(course, json.loads(info.read_text())["url"], tokens, proc)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        log.close()


@pytest.fixture(scope="module")
def service(tmp_path_factory) -> Service:
    base = tmp_path_factory.mktemp("check")
    cases = hostile.cases(base / "course")
    students = ["alice", "bob", "dave", "frank", *LOAD_STUDENTS, *[f"diag-{ch}" for ch in mutation.chapters()],
                *[f"h-{c.name}" for c in cases]]
    with running_service(base, students, "--workers", "2", "--min-interval", "0", "--attempts-per-hour", "3",
                         "--total-timeout", str(TOTAL_TIMEOUT),
                         "--max-bytes", str(4 * 2**20), "--deadline", f"{PAST_DEADLINE}=2000-01-01T00:00+00:00") as s:
        yield s


def mistakes_alike(chapter: str, mutant, signatures: dict) -> set[str]:
    """The descriptions a diagnosis of `mutant` must name: its own and those of every mutant failing the same tests."""
    sig = signatures[chapter]
    return {m.why for m in mutation.load_catalogue(chapter) if sig[m.name] == sig[mutant.name]}


def secrets_of(chapter: str) -> set[str]:
    return secret_lines(read(ROOT / "solutions" / f"{chapter}.ipynb"), read(ROOT / "notebooks" / f"{chapter}.ipynb"))


def assert_no_secret(answer: dict, chapter: str) -> None:
    text = json.dumps(answer)
    leaked = [line for line in secrets_of(chapter) if json.dumps(line)[1:-1] in text]
    assert not leaked, f"hidden test or solution text in the answer: {leaked[:3]}"
    assert "Traceback" not in text and "<cell>" not in text


def test_a_wrong_answer_then_a_right_one(service):
    chapter = "04_masking"
    mutant = next(m for m in mutation.load_catalogue(chapter) if m.name == "counts-unchanged-equals-random")
    status, wrong = service.check("alice", chapter, notebook_bytes(mutation.submission(chapter, mutant)))
    assert status == 200 and wrong["status"] == "done", wrong
    failed = {t["name"]: t for t in wrong["tests"] if not t["passed"]}
    assert set(failed) == {"test-counts"}, wrong["tests"]
    assert failed["test-counts"]["hidden"] and failed["test-counts"]["message"] == "a hidden test failed"
    assert wrong["score"] == wrong["max_score"] - failed["test-counts"]["points"]
    assert mutant.why in wrong["diagnosis"], wrong["diagnosis"]
    assert wrong["checks_left"] == 2
    assert_no_secret(wrong, chapter)
    status, right = service.check("alice", chapter, notebook_bytes(mutation.submission(chapter, None)))
    assert right["status"] == "done" and right["score"] == right["max_score"] > 0, right
    assert all(t["passed"] for t in right["tests"]) and right["diagnosis"] == []
    assert right["checks_left"] == 1
    stored = sorted((service.course / "check-service" / "submissions" / "alice" / chapter).glob("*.ipynb"))
    assert len(stored) == 2  # every attempt kept, per student and chapter


def test_the_catalogue_diagnoses_a_mutant_of_every_chapter(service):
    """One catalogued mistake per chapter (but the one past its deadline), sent at once: each answer names exactly
    the mistakes that fail the same tests (its own description, and those of the mutants it cannot be told apart
    from), and fails exactly its signature's tests. (Every mutant of every chapter is diagnosed by the same code in
    the class run's feedback: tests/course/test_mutation.py.)"""
    signatures = _autograder("diagnosis").load_signatures()
    picked = {}
    for chapter in mutation.chapters():
        if chapter == PAST_DEADLINE:
            continue
        catalogue = mutation.load_catalogue(chapter)
        sig = signatures[chapter]
        # prefer a mistake that shares its signature with another: the answer must then name both
        shared = [m for m in catalogue if sum(sig[o.name] == sig[m.name] for o in catalogue) > 1]
        picked[chapter] = (shared or catalogue)[0]
    answers = {}

    def send(chapter):
        body = notebook_bytes(mutation.submission(chapter, picked[chapter]))
        answers[chapter] = service.check(f"diag-{chapter}", chapter, body)

    threads = [threading.Thread(target=send, args=(ch,)) for ch in picked]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    problems = []
    for chapter, mutant in picked.items():
        status, answer = answers[chapter]
        if answer.get("status") != "done" or answer["score"] >= answer["max_score"]:
            problems.append(f"{chapter} {mutant.name}: {status} {str(answer)[:300]}")
            continue
        sig = signatures[chapter]
        alike = mistakes_alike(chapter, mutant, signatures)
        if set(answer["diagnosis"]) != alike or mutant.why not in answer["diagnosis"]:
            problems.append(f"{chapter} {mutant.name}: diagnosis {answer['diagnosis']}, expected {sorted(alike)}")
        if sorted(t["name"] for t in answer["tests"] if not t["passed"]) != sig[mutant.name]:
            problems.append(f"{chapter} {mutant.name}: failed {answer['tests']}, signature {sig[mutant.name]}")
        assert_no_secret(answer, chapter)
    assert not problems, "\n".join(problems)


def test_the_limits_refuse_with_a_message_and_count_nothing(service):
    chapter = "02_embeddings"
    stub = notebook_bytes(read(ROOT / "notebooks" / f"{chapter}.ipynb"))  # the released notebook: stubs fail
    for _ in range(3):
        status, answer = service.check("bob", chapter, stub)
        assert status == 200 and answer["status"] == "done" and answer["score"] == 0, answer
    status, reply = service.call("bob", "POST", f"/api/check/{chapter}", stub)
    assert status == 429 and "3 checks of 02_embeddings in the last hour" in reply["error"], reply
    status, reply = service.call("bob", "POST", "/api/check/03_attention",
                                 notebook_bytes(read(ROOT / "notebooks" / "03_attention.ipynb")))
    assert status == 403 and "deadline of 03_attention was 2000-01-01" in reply["error"], reply
    status, reply = service.call("bob", "POST", "/api/check/04_masking", b"x" * (4 * 2**20 + 1))
    assert status == 413 and "Clear Outputs" in reply["error"], reply
    status, reply = service.call("bob", "POST", "/api/check/04_masking", b'{"cells": [')
    assert status == 400 and "not a notebook" in reply["error"], reply
    status, reply = service.call("bob", "POST", "/api/check/04_masking", stub)  # chapter 02's notebook
    assert status == 400 and "notebook of 02_embeddings, not of 04_masking" in reply["error"], reply
    status, reply = service.call("bob", "POST", "/api/check/99_nothing", stub)
    assert status == 404, reply
    status, mine = service.call("bob", "GET", "/api/attempts")
    assert [a["chapter"] for a in mine["attempts"]] == [chapter] * 3  # refusals are not attempts
    assert mine["checks_left"][chapter] == 0 and mine["checks_left"]["04_masking"] == 3
    status, reply = service.call(None, "POST", f"/api/check/{chapter}", stub)
    assert status == 401 and "token" in reply["error"]


def test_students_are_kept_apart_and_the_instructor_sees_the_class(service):
    status, alices = service.call("alice", "GET", "/api/attempts")
    assert status == 200 and alices["attempts"], "run this file whole: this test reads the attempts of the ones above"
    first = alices["attempts"][0]["attempt"]
    status, reply = service.call("dave", "GET", f"/api/attempts/{first}")
    assert status == 404, reply
    assert service.call("dave", "GET", "/api/instructor/attempts")[0] == 403
    status, everyone = service.call("instructor", "GET", "/api/instructor/attempts")
    assert status == 200 and {a["student"] for a in everyone["attempts"]} >= {"alice", "bob"}
    assert all("answer" not in a for a in everyone["attempts"])  # scores and test names, no code
    status, tests = service.call("instructor", "GET", "/api/instructor/tests")
    counts = {(t["chapter"], t["test"]): t for t in tests["tests"]}
    assert counts[("04_masking", "test-counts")]["failed"] >= 1
    # the counts are those of the attempts the instructor lists (bob's stubs fail test-count, others may pass it)
    graded = [a for a in everyone["attempts"] if a["chapter"] == "02_embeddings" and a["status"] == "done"]
    count = counts[("02_embeddings", "test-count")]
    assert count["checks"] == len(graded) and count["failed"] == sum("test-count" in a["failed"] for a in graded) >= 1
    assert count["students_failing"] == len({a["student"] for a in graded if "test-count" in a["failed"]})
    listing = subprocess.run([sys.executable, "-m", "autograder.check_service", "attempts", "--course",
                              str(service.course), "--student", "alice"], cwd=ROOT, capture_output=True, text=True,
                             env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert listing.returncode == 0 and "alice" in listing.stdout and "04_masking" in listing.stdout, listing


def test_the_students_command_line(service, tmp_path):
    env = dict(os.environ, MINIBERT_CHECK_CONFIG=str(tmp_path / "none.json"))
    env.pop("MINIBERT_CHECK_URL", None)
    env.pop("MINIBERT_CHECK_TOKEN", None)
    run = subprocess.run([sys.executable, "-m", "minibert_course.check", "notebooks/01_wordpiece.ipynb"], cwd=ROOT,
                         env=env, capture_output=True, text=True)
    assert run.returncode == 2 and "No checking service is configured" in run.stderr, run
    config = tmp_path / "course-check.json"
    config.write_text(json.dumps({"url": service.url}), encoding="utf-8")
    env["MINIBERT_CHECK_CONFIG"] = str(config)
    saved = subprocess.run([sys.executable, "-m", "minibert_course.check", "--token", service.tokens["dave"]],
                           cwd=ROOT, env=env, capture_output=True, text=True)
    assert saved.returncode == 0 and json.loads(config.read_text())["token"] == service.tokens["dave"]
    assert oct(config.stat().st_mode & 0o777) == "0o600"
    run = subprocess.run([sys.executable, "-m", "minibert_course.check", "notebooks/01_wordpiece.ipynb"], cwd=ROOT,
                         env=env, capture_output=True, text=True)
    assert run.returncode == 1, run  # the released notebook: every test fails
    assert "FAILED" in run.stdout and "score 0 /" in run.stdout and "checks left this hour: 2" in run.stdout, run
    for line in secrets_of("01_wordpiece"):
        assert line not in run.stdout


CASES = hostile.cases(Path("/course"))


def test_the_hostile_suite_through_the_service(service):
    """Every hostile case, sent as its own student: no hidden text back, no undeserved pass, nothing the
    submission printed, no payload ran where the service runs; all are answered (or refused, when the file is not
    a notebook or is larger than the service takes). An honest student's check sent in the same flood gets its full
    marks, and no check holds a worker longer than its own time limit (the slowdown a hostile check can cause)."""
    from minibert_course.sealed import Sandbox

    cases = [c for c in hostile.cases(service.course) if not c.needs_sandbox or Sandbox().works]
    answers: dict[str, tuple[int, dict]] = {}

    def send(case):
        try:
            answers[case.name] = service.check(f"h-{case.name}", case.chapter, hostile.build(case))
        except BaseException as exc:  # noqa: BLE001 - a check that never answered is reported below, not lost
            answers[case.name] = (0, {"error": f"{type(exc).__name__}: {exc}"})

    def honest():
        try:
            answers["frank"] = service.check("frank", hostile.CHAPTER,
                                             notebook_bytes(mutation.submission(hostile.CHAPTER, None)))
        except BaseException as exc:  # noqa: BLE001
            answers["frank"] = (0, {"error": f"{type(exc).__name__}: {exc}"})

    threads = [threading.Thread(target=send, args=(c,)) for c in cases]
    threads.insert(len(threads) // 2, threading.Thread(target=honest))  # sent amid the flood
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    full = {ch: sum(c.metadata["nbgrader"].get("points", 0) for c in read(ROOT / "solutions" / f"{ch}.ipynb").cells
                    if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code")
            for ch in {c.chapter for c in cases}}
    problems = []
    for case in cases:
        status, answer = answers[case.name]
        if not case.graded or len(hostile.build(case)) > 4 * 2**20:
            if status not in (400, 413):
                problems.append(f"{case.name}: expected a refusal, got {status} {str(answer)[:200]}")
            continue
        if status != 200 or answer.get("status") != "done":
            problems.append(f"{case.name}: not answered: {status} {str(answer)[:300]}")
            continue
        expected = {"zero": 0.0, "full": full[case.chapter],
                    "all-but-count": full[hostile.CHAPTER] - hostile.points_of("test-count")}[case.expect]
        if answer["score"] != expected:
            problems.append(f"{case.name} ({case.what}): expected {expected}, got {answer['score']}")
        text = json.dumps(answer)
        if hostile.LEAK_MARKER in text:
            problems.append(f"{case.name}: something the submission printed is in the answer")
        leaked = [line for line in secrets_of(case.chapter) if json.dumps(line)[1:-1] in text]
        if leaked:
            problems.append(f"{case.name}: hidden text in the answer: {leaked[:2]}")
    status, neighbour = answers["frank"]
    if neighbour.get("status") != "done" or neighbour.get("score") != full[hostile.CHAPTER]:
        problems.append(f"the honest check amid the flood lost marks: {str(neighbour)[:300]}")
    with sqlite3.connect(service.course / "check-service" / "state.sqlite") as db:
        held = dict(db.execute("SELECT student, finished - started FROM attempts WHERE student LIKE 'h-%' "
                               "AND finished IS NOT NULL").fetchall())
        timing = db.execute("SELECT started - created, finished - started FROM attempts WHERE student = 'frank' "
                            "AND finished IS NOT NULL").fetchone()
    # each check's own limit: --total-timeout per notebook (--cell-timeout per cell within it); a minute more for
    # the sandbox's start and clean-up
    over = {name: f"{seconds:.0f} s" for name, seconds in held.items() if seconds > TOTAL_TIMEOUT + 60}
    if over:
        problems.append(f"hostile checks held a worker beyond their own limit: {over}")
    if held and timing:
        slowest = max(held, key=held.get)
        print(f"hostile flood: {len(held)} checks graded, longest hold {held[slowest]:.1f} s ({slowest}); the honest "
              f"check waited {timing[0]:.1f} s in the queue and took {timing[1]:.1f} s", file=sys.stderr)
    evidence = hostile.evidence_dir(service.course)
    if evidence.exists() and any(evidence.iterdir()):
        problems.append(f"payloads ran where the service runs: {sorted(p.name for p in evidence.iterdir())}")
    assert not problems, "\n".join(problems)


def test_a_bounded_load_of_50_checks_from_10_students(service):
    """10 students at once, 5 checks each (each waits for its answer before the next, as the limits require):
    every check answered, none lost; the median and worst time from submission to answer are printed."""
    right = {ch: notebook_bytes(mutation.submission(ch, None)) for ch in set(LOAD_CHAPTERS)}
    times: list[float] = []
    results: dict[str, list[dict]] = {s: [] for s in LOAD_STUDENTS}

    def student(name):
        for chapter in LOAD_CHAPTERS:
            start = time.perf_counter()
            status, answer = service.check(name, chapter, right[chapter])
            times.append(time.perf_counter() - start)
            results[name].append(answer)

    threads = [threading.Thread(target=student, args=(s,)) for s in LOAD_STUDENTS]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    answers = [a for s in LOAD_STUDENTS for a in results[s]]
    assert len(answers) == 50 and all(a.get("status") == "done" for a in answers), [
        a for a in answers if a.get("status") != "done"][:3]
    assert all(a["score"] == a["max_score"] > 0 for a in answers)
    status, everyone = service.call("instructor", "GET", "/api/instructor/attempts")
    load = [a for a in everyone["attempts"] if a["student"] in LOAD_STUDENTS]
    assert len(load) == 50 and all(a["status"] == "done" for a in load)  # none lost
    print(f"\nload test: 50 checks from 10 students, 2 workers: median {statistics.median(times):.1f} s, "
          f"worst {max(times):.1f} s from submission to answer")
