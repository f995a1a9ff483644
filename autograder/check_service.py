"""`make check-service`: students run the hidden tests before the deadline, without seeing them, rate-limited.

    python -m autograder.check_service tokens --course DIR --roster students.csv     # make check-tokens
    python -m autograder.check_service serve --course DIR [--port 8765] [--workers 2]  # make check-service
    python -m autograder.check_service attempts --course DIR [--student S]            # the instructor's view
    python -m autograder.check_service serve --course DIR --redis redis://host:6379/0  # a class: a queue, and
    python -m autograder.check_service worker --redis redis://host:6379/0             # workers on any machines

A submission is graded by the sealed pipeline of `make grade` (`minibert_course.sealed`: the instructor's notebook
with the student's answers, the answers in the sandboxed worker, the tests in the checker, the judge package of
the chapter) and answered, per test cell, with passed or failed; a failing test's text is `failure_text`, the rule
of `make grade`'s feedback (the grader's own verdicts and a visible test's message; of a hidden test only that it
failed). Nothing the submission printed, no test source, input or expected value, no traceback is ever sent.

Limits that keep the service from being an oracle, each refused with a message that says which and when to try
again: checks per student per chapter per hour (`--attempts-per-hour`, default 3), a minimum interval between a
student's checks (`--min-interval`), one check in flight per student, a size limit (`--max-bytes`) and deadlines
(`--deadline 2026-12-20T23:59+01:00` for every chapter, `--deadline 04_masking=...` for one). A check that the
service itself failed to run (its error, not the submission's) is not counted and says so.

Checks are graded by a pool of `--workers` threads of the service (nothing to install), or, with `--redis`, put
on a Redis queue (RQ) and graded by `worker` processes started on as many machines as the class needs (each with
this repository and the course environment; each builds its own judge packages). A check still waiting when the
service stops is answered as not counted when it starts again: no attempt is lost.

State, under DIR/check-service/ (mode 0700, the instructor's): state.sqlite (tokens as SHA-256 hashes, attempts
and their answers), submissions/<student>/<chapter>/<attempt>.ipynb, judge/ (the chapter packages), server.json
(the address it listens on) and tokens.csv (the roster's tokens, for the instructor to hand out). Students reach
only the HTTP API, authenticated by their token: their own attempts, never another student's.

HTTP API (JSON; `Authorization: Bearer TOKEN`):
    GET  /api/health                      the chapters, the limits, the deadlines (no token)
    POST /api/check/<chapter>             body: the notebook -> 202 {attempt, poll}; or a refusal (4xx, {error})
    GET  /api/attempts/<id>               the attempt, with its answer once graded
    GET  /api/attempts                    the student's attempts and checks left per chapter
    GET  /api/instructor/attempts         every attempt (instructor token)
    GET  /api/instructor/tests            per chapter and test, checks run and failed across the class
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import datetime as dt
import hashlib
import json
import os
import queue
import re
import secrets
import sqlite3
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UID_BASE = 63000  # the workers' sandbox uids: apart from `make grade`'s 61000 + shard
INSTRUCTOR = "instructor"
UPLOAD_CAP = 1 << 30  # beyond this the connection is closed: an upload larger than any notebook, read and dropped
_STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")


def chapters() -> list[str]:
    from minibert_course.chapters import stems

    return stems(ROOT)


def _now() -> float:
    return time.time()


def _when(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def parse_deadline(text: str) -> float:
    """An ISO 8601 time (`2026-12-20T23:59+01:00`; without an offset: UTC) as a POSIX time."""
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError as exc:
        raise SystemExit(f"--deadline {text!r}: not an ISO 8601 time such as 2026-12-20T23:59+01:00 ({exc})") from exc
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return when.timestamp()


@dataclass
class Limits:
    attempts_per_hour: int = 3  # per student and chapter
    min_interval: float = 60.0  # seconds between two checks of one student
    max_bytes: int = 5 * 2**20  # a notebook's size; the class's are well under 1 MB without outputs
    deadline: float | None = None  # for every chapter, unless `deadlines` names it
    deadlines: dict[str, float] = field(default_factory=dict)

    def deadline_of(self, chapter: str) -> float | None:
        return self.deadlines.get(chapter, self.deadline)


class Refused(Exception):
    """A check the limits refuse: the HTTP status and the message the student reads."""

    def __init__(self, status: int, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.status, self.message, self.retry_after = status, message, retry_after


# ---- the state: tokens, attempts -------------------------------------------------------------------------------


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Store:
    """Tokens and attempts in SQLite; every access under one lock (the server's thread and the workers')."""

    SCHEMA = """
    CREATE TABLE IF NOT EXISTS tokens (student TEXT PRIMARY KEY, token_hash TEXT UNIQUE NOT NULL, role TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS attempts (
        id INTEGER PRIMARY KEY AUTOINCREMENT, student TEXT NOT NULL, chapter TEXT NOT NULL, created REAL NOT NULL,
        started REAL, finished REAL, status TEXT NOT NULL, score REAL, max_score REAL, answer TEXT, path TEXT);
    CREATE INDEX IF NOT EXISTS attempts_by_student ON attempts (student, chapter, created);
    """

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o700)
        self.db = sqlite3.connect(folder / "state.sqlite", check_same_thread=False, isolation_level=None)
        self.db.executescript(self.SCHEMA)
        self.lock = threading.Lock()

    def query(self, sql: str, *args) -> list[tuple]:
        with self.lock:
            return self.db.execute(sql, args).fetchall()

    def who(self, token: str | None) -> tuple[str, str] | None:
        """(student, role) of a token, or None."""
        if not token:
            return None
        rows = self.query("SELECT student, role FROM tokens WHERE token_hash = ?", _hash(token))
        return rows[0] if rows else None

    def issue(self, student: str, role: str = "student", rotate: bool = False) -> str | None:
        """A new token for `student` (None when it has one and `rotate` is off: its token is kept)."""
        if self.query("SELECT 1 FROM tokens WHERE student = ?", student) and not rotate:
            return None
        token = secrets.token_urlsafe(24)
        self.query("INSERT OR REPLACE INTO tokens (student, token_hash, role) VALUES (?, ?, ?)", student,
                   _hash(token), role)
        return token

    def admit(self, student: str, chapter: str, limits: Limits, now: float) -> tuple[int, int]:
        """Record a new attempt if the limits allow it: (attempt id, checks left this hour after it)."""
        deadline = limits.deadline_of(chapter)
        if deadline is not None and now > deadline:
            raise Refused(403, f"the deadline of {chapter} was {_when(deadline)}: checks are closed")
        with self.lock:
            db = self.db
            running = db.execute("SELECT chapter FROM attempts WHERE student = ? AND status IN ('queued', 'running')",
                                 (student,)).fetchall()
            if running:
                raise Refused(429, f"your check of {running[0][0]} is still running: wait for its answer first")
            last = db.execute("SELECT MAX(created) FROM attempts WHERE student = ? AND status != 'error'",
                              (student,)).fetchone()[0]
            if last is not None and now - last < limits.min_interval:
                wait = limits.min_interval - (now - last)
                raise Refused(429, f"at most one check every {limits.min_interval:g} s: try again in {wait:.0f} s",
                              wait)
            recent = [r[0] for r in db.execute(
                "SELECT created FROM attempts WHERE student = ? AND chapter = ? AND created > ? AND status != 'error' "
                "ORDER BY created", (student, chapter, now - 3600))]
            if len(recent) >= limits.attempts_per_hour:
                again = recent[0] + 3600
                raise Refused(429, f"{len(recent)} checks of {chapter} in the last hour (at most "
                                   f"{limits.attempts_per_hour}): the next one at {_when(again)}", again - now)
            cur = db.execute("INSERT INTO attempts (student, chapter, created, status) VALUES (?, ?, ?, 'queued')",
                             (student, chapter, now))
            return cur.lastrowid, limits.attempts_per_hour - len(recent) - 1

    def left(self, student: str, chapter: str, limits: Limits, now: float) -> int:
        n = self.query("SELECT COUNT(*) FROM attempts WHERE student = ? AND chapter = ? AND created > ? "
                       "AND status != 'error'", student, chapter, now - 3600)[0][0]
        return max(0, limits.attempts_per_hour - n)

    def attempt(self, attempt_id: int) -> dict | None:
        rows = self.query("SELECT id, student, chapter, created, started, finished, status, score, max_score, answer "
                          "FROM attempts WHERE id = ?", attempt_id)
        return _row(rows[0]) if rows else None

    def attempts(self, student: str | None = None) -> list[dict]:
        sql = ("SELECT id, student, chapter, created, started, finished, status, score, max_score, answer "
               "FROM attempts")
        rows = self.query(sql + " WHERE student = ? ORDER BY id", student) if student else self.query(
            sql + " ORDER BY id")
        return [_row(r) for r in rows]


def _row(r: tuple) -> dict:
    keys = ("attempt", "student", "chapter", "created", "started", "finished", "status", "score", "max_score",
            "answer")
    d = dict(zip(keys, r, strict=True))
    d["answer"] = json.loads(d["answer"]) if d["answer"] else None
    return d


# ---- grading: the sealed pipeline of `make grade` ----------------------------------------------------------------


def answer_from(plan, result) -> dict:
    """The answer to a graded submission: per test cell passed or failed, `failure_text` of a failing one (the
    feedback rule of `make grade`), the score. Nothing the submission printed."""
    from minibert_course.nbgrader_ext import GRADER_ERRORS, failure_text, graded_outputs, hidden_test_lines

    by_index = {c.index: c for c in result.cells}
    tests, score, total = [], 0.0, 0.0
    for i, cell in enumerate(plan.cells):
        if cell.kind != "test":
            continue
        ran = by_index.get(i)
        passed = bool(ran and ran.passed) and not result.tampered
        total += cell.points
        score += cell.points if passed else 0.0
        entry = {"name": cell.grade_id, "points": cell.points, "passed": passed,
                 "hidden": bool(hidden_test_lines(cell.source))}
        if not passed:
            errors = [o for o in (graded_outputs(ran) if ran else []) if o.get("output_type") == "error"]
            if errors:
                text = failure_text(cell.source, errors[0]).strip()
                visible = errors[0].get("ename") in GRADER_ERRORS or "a visible test failed" in text
                if errors[0].get("ename") in GRADER_ERRORS:  # its first line: "the checker failed: <stderr>" stays
                    text = text.split("\n", 1)[0][:300]  # with the instructor (the attempt's problems)
                entry["message"] = text[:1000] if visible else "a hidden test failed"
            else:
                entry["message"] = "not run" if ran is None else "failed"
        tests.append(entry)
    answer = {"tests": tests, "score": score, "max_score": total}
    if result.tampered:
        answer["flagged"] = ("graded 0 and flagged for the instructor's review: the submission interfered with the "
                             "grader")
    if result.problems:
        answer["problems"] = [p[:300] for p in result.problems]
    return answer


class Grader:
    """The chapters' source notebooks and judge packages, and a pool of workers that grade with them."""

    def __init__(self, folder: Path, workers: int, cell_timeout: int = 120, total_timeout: int = 900,
                 uid_base: int = UID_BASE):
        import nbformat

        from minibert_course.sealed import build_judge_package

        self.names = chapters()
        solutions = [ROOT / "solutions" / f"{c}.ipynb" for c in self.names]
        releases = [ROOT / "notebooks" / f"{c}.ipynb" for c in self.names]
        self.sources = {c: nbformat.read(p, as_version=4) for c, p in zip(self.names, solutions, strict=True)}
        self.judge = folder / "judge"
        self.judge.mkdir(parents=True, exist_ok=True)
        self.judge.chmod(0o711)
        self.packages = {c: build_judge_package(self.judge / c, c, solutions, releases) for c in self.names}
        self.cell_timeout, self.total_timeout = cell_timeout, total_timeout
        from autograder.diagnosis import table

        self.diagnoses = table(self.names)
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="check-worker") if workers else None
        self.uids: queue.Queue[int] = queue.Queue()
        for k in range(max(workers, 1)):
            self.uids.put(uid_base + k)

    def grade(self, chapter: str, notebook) -> dict:
        from minibert_course.sealed import Sandbox, plan_submission, run_cells

        uid = self.uids.get()
        try:
            plan = plan_submission(self.sources[chapter], notebook)
            result = run_cells(plan, self.packages[chapter], sandbox=Sandbox(uid=uid),
                               cell_timeout=self.cell_timeout, total_timeout=self.total_timeout)
        finally:
            self.uids.put(uid)
        from minibert_course.nbgrader_ext import diagnose

        answer = answer_from(plan, result)
        failed = {t["name"] for t in answer["tests"] if not t["passed"]}
        answer["diagnosis"] = [] if result.tampered else diagnose(self.diagnoses[chapter], failed)
        answer["seconds"] = round(result.seconds, 1)
        return answer


QUEUE_NAME = "minibert-check"
_WORKER_GRADER: Grader | None = None  # set by `worker` before it starts: the jobs' forks inherit it


def grade_job(chapter: str, notebook_text: str) -> dict:
    """A check on a queue worker (`python -m autograder.check_service worker --redis URL`): the same grading."""
    import nbformat

    if _WORKER_GRADER is None:
        raise RuntimeError("grade_job runs in `python -m autograder.check_service worker`, which prepares the grader")
    answer = _WORKER_GRADER.grade(chapter, nbformat.reads(notebook_text, as_version=4))
    print(f"graded a check of {chapter}: {answer['score']:g}/{answer['max_score']:g} in {answer['seconds']} s",
          flush=True)
    return answer


def grade_ids(nb: dict) -> set[str]:
    ids = set()
    for cell in nb.get("cells", []):
        meta = cell.get("metadata", {}).get("nbgrader", {}) if isinstance(cell, dict) else {}
        if isinstance(meta, dict) and isinstance(meta.get("grade_id"), str):
            ids.add(meta["grade_id"])
    return ids


def nbformat_text(notebook) -> str:
    import nbformat

    return nbformat.writes(notebook)


def read_notebook(body: bytes, chapter: str, expected_ids: set[str], others: dict[str, set[str]] | None = None):
    """The submitted notebook, or Refused(400) saying what is wrong with it."""
    import nbformat

    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise Refused(400, f"not a notebook file ({exc.__class__.__name__}): send the .ipynb itself") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list) or not all(
            isinstance(c, dict) and isinstance(c.get("source", ""), (str, list)) for c in data["cells"]):
        raise Refused(400, "not a notebook file (no list of cells): send the .ipynb itself")
    ids = grade_ids(data)
    other = next((c for c, theirs in (others or {}).items() if c != chapter and ids & theirs), None)
    if other and not ids & expected_ids:  # no ids at all is graded: the cells are matched by their ids then
        raise Refused(400, f"this is the notebook of {other}, not of {chapter}: check it as {other}")
    try:
        return nbformat.from_dict(data)
    except Exception as exc:  # noqa: BLE001 - any malformed notebook is the sender's to fix
        raise Refused(400, f"not a notebook file ({exc.__class__.__name__})") from None


# ---- the server --------------------------------------------------------------------------------------------------


class Service:
    def __init__(self, course: Path, limits: Limits, workers: int = 2, cell_timeout: int = 120,
                 total_timeout: int = 900, redis_url: str | None = None):
        self.folder = course / "check-service"
        self.store = Store(self.folder)
        self.limits = limits
        self.grader = Grader(self.folder, 0 if redis_url else workers, cell_timeout, total_timeout)
        self.queue, self.jobs = None, {}  # with Redis: the queue, and attempt -> its job while it is not answered
        if redis_url:
            from redis import Redis
            from rq import Queue

            self.queue = Queue(QUEUE_NAME, connection=Redis.from_url(redis_url))
            self.queue.connection.ping()  # fails now, with the address, rather than at the first check
            threading.Thread(target=self._watch, daemon=True, name="check-watcher").start()
        interrupted = self.store.query("SELECT id FROM attempts WHERE status IN ('queued', 'running')")
        for (attempt,) in interrupted:  # the service stopped while they waited: answered, and not counted
            self._finish(attempt, "error", {"error": "the service was restarted before this check was graded; it "
                                                     "is not counted: check again"})
        self.expected = {c: grade_ids(nb) for c, nb in self.grader.sources.items()}

    def submit(self, student: str, chapter: str, body: bytes, now: float | None = None) -> dict:
        now = _now() if now is None else now
        if chapter not in self.grader.names:
            raise Refused(404, f"no chapter {chapter!r}: one of {', '.join(self.grader.names)}")
        self.check_size(len(body))
        notebook = read_notebook(body, chapter, self.expected[chapter], self.expected)
        attempt, left = self.store.admit(student, chapter, self.limits, now)
        path = self.folder / "submissions" / student / chapter / f"{attempt}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
        self.store.query("UPDATE attempts SET path = ? WHERE id = ?", str(path), attempt)
        if self.queue is not None:
            try:  # by name: the workers import it (this process may be __main__)
                job = self.queue.enqueue("autograder.check_service.grade_job", chapter, nbformat_text(notebook),
                                         job_timeout=self.grader.total_timeout + 300, result_ttl=3600,
                                         failure_ttl=86400, description=f"attempt {attempt}")
            except Exception as exc:  # noqa: BLE001 - the queue is away: answered now, and not counted
                print(f"attempt {attempt}: {exc!r}", file=sys.stderr, flush=True)
                self._finish(attempt, "error", {"error": "the queue could not take this check"})
                raise Refused(503, "the checking service's queue is not reachable: this check is not counted; try "
                                   "again later, or tell your instructor") from None
            with self.store.lock:
                self.jobs[attempt] = job
        else:
            self.grader.pool.submit(self._run, attempt, chapter, notebook)
        return {"attempt": attempt, "status": "queued", "chapter": chapter, "checks_left": left,
                "poll": f"/api/attempts/{attempt}"}

    def check_size(self, size: int) -> None:
        if size > self.limits.max_bytes:
            raise Refused(413, f"the notebook is {size / 2**20:.1f} MB (at most {self.limits.max_bytes / 2**20:.1f} "
                               "MB): clear its outputs (Edit > Clear Outputs of All Cells), save, and check again")

    def _run(self, attempt: int, chapter: str, notebook) -> None:
        self.store.query("UPDATE attempts SET status = 'running', started = ? WHERE id = ?", _now(), attempt)
        try:
            answer = self.grader.grade(chapter, notebook)
            status = "done"
        except Exception as exc:  # noqa: BLE001 - the service's fault: recorded, not counted against the student
            answer = {"error": f"the service could not grade this check ({exc.__class__.__name__}); it is not "
                               "counted: try again, or tell your instructor"}
            status = "error"
            print(f"attempt {attempt}: {exc!r}", file=sys.stderr, flush=True)
        self._finish(attempt, status, answer)

    def _finish(self, attempt: int, status: str, answer: dict) -> None:
        self.store.query("UPDATE attempts SET status = ?, finished = ?, score = ?, max_score = ?, answer = ? "
                         "WHERE id = ?", status, _now(), answer.get("score"), answer.get("max_score"),
                         json.dumps(answer), attempt)

    def _watch(self) -> None:
        """With Redis: collect the answers of the queue's workers as their jobs finish."""
        from rq.job import JobStatus

        while True:
            with self.store.lock:
                pending = list(self.jobs.items())
            for attempt, job in pending:
                try:
                    status = job.get_status(refresh=True)
                    if status == JobStatus.STARTED:
                        self.store.query("UPDATE attempts SET status = 'running', started = COALESCE(started, ?) "
                                         "WHERE id = ?", _now(), attempt)
                        continue
                    if status == JobStatus.FINISHED:
                        self._finish(attempt, "done", job.return_value())
                    elif status in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED) or status is None:
                        print(f"attempt {attempt}: job {job.id} {status}", file=sys.stderr, flush=True)
                        self._finish(attempt, "error", {"error": "the service could not grade this check (its "
                                                                 "worker failed); it is not counted: try again, or "
                                                                 "tell your instructor"})
                    else:
                        continue
                except Exception as exc:  # noqa: BLE001 - Redis away for a moment: the job is asked again
                    print(f"attempt {attempt}: {exc!r}", file=sys.stderr, flush=True)
                    continue
                with self.store.lock:
                    self.jobs.pop(attempt, None)
            time.sleep(0.2)

    def view(self, attempt: dict, now: float | None = None) -> dict:
        """An attempt as its student sees it."""
        now = _now() if now is None else now
        out = {k: attempt[k] for k in ("attempt", "chapter", "status", "score", "max_score")}
        out["submitted"] = _when(attempt["created"])
        if attempt["answer"]:  # the grader's problems are the instructor's to read (`attempts`, the database)
            out.update({k: v for k, v in attempt["answer"].items() if k != "problems"})
            if attempt["answer"].get("problems"):
                out["note"] = "the grader noted a problem with this run; your instructor can see it"
        out["checks_left"] = self.store.left(attempt["student"], attempt["chapter"], self.limits, now)
        deadline = self.limits.deadline_of(attempt["chapter"])
        out["deadline"] = _when(deadline) if deadline else None
        return out

    def class_tests(self) -> list[dict]:
        """Per chapter and test: checks that ran it, how many failed it, and by how many students."""
        counts: dict[tuple[str, str], dict] = {}
        for a in self.store.attempts():
            for t in (a["answer"] or {}).get("tests", []):
                c = counts.setdefault((a["chapter"], t["name"]), {"chapter": a["chapter"], "test": t["name"],
                                                                    "hidden": t["hidden"], "checks": 0, "failed": 0,
                                                                    "students_failing": set()})
                c["checks"] += 1
                if not t["passed"]:
                    c["failed"] += 1
                    c["students_failing"].add(a["student"])
        return [dict(c, students_failing=len(c["students_failing"])) for c in counts.values()]


def make_app(service: Service):
    import tornado.web

    class Base(tornado.web.RequestHandler):
        def set_default_headers(self):
            self.set_header("Content-Type", "application/json")
            self.set_header("Cache-Control", "no-store")

        def caller(self, role: str | None = None) -> tuple[str, str]:
            header = self.request.headers.get("Authorization", "")
            token = header[7:].strip() if header.startswith("Bearer ") else None
            who = service.store.who(token)
            if who is None:
                raise Refused(401, "no valid token: set the one your instructor gave you (see the course README, "
                                   "'Check your work')")
            if role and who[1] != role:
                raise Refused(403, "this needs the instructor's token")
            return who

        def refuse(self, r: Refused) -> None:
            self.set_status(r.status)
            if r.retry_after is not None:
                self.set_header("Retry-After", str(max(1, int(r.retry_after))))
            self.finish({"error": r.message})

        def write_error(self, status_code, **kwargs):
            self.finish({"error": self._reason})

    class Health(Base):
        def get(self):
            limits = service.limits
            self.finish({"ok": True, "chapters": service.grader.names,
                         "limits": {"attempts_per_hour": limits.attempts_per_hour,
                                    "min_interval_s": limits.min_interval, "max_bytes": limits.max_bytes},
                         "deadlines": {c: _when(limits.deadline_of(c)) for c in service.grader.names
                                       if limits.deadline_of(c)}})

    @tornado.web.stream_request_body
    class Check(Base):
        """The body is read as it comes: up to the size limit it is kept, beyond it counted and dropped, so that an
        oversized notebook gets its 413 and message (a connection closed mid-upload would say nothing)."""

        def prepare(self):
            self.chunks, self.size = [], 0
            self.request.connection.set_max_body_size(UPLOAD_CAP)

        def data_received(self, chunk):
            self.size += len(chunk)
            if self.size <= service.limits.max_bytes:
                self.chunks.append(chunk)

        async def post(self, chapter):
            try:
                student, role = self.caller()
                service.check_size(self.size)
                reply = await asyncio.get_running_loop().run_in_executor(
                    None, service.submit, student, chapter, b"".join(self.chunks))
            except Refused as r:
                return self.refuse(r)
            self.set_status(202)
            self.finish(reply)

    class Attempt(Base):
        def get(self, attempt_id):
            try:
                student, role = self.caller()
                attempt = service.store.attempt(int(attempt_id))
                if attempt is None or (attempt["student"] != student and role != INSTRUCTOR):
                    raise Refused(404, f"no attempt {attempt_id} of yours")
            except Refused as r:
                return self.refuse(r)
            self.finish(service.view(attempt))

    class Attempts(Base):
        def get(self):
            try:
                student, _ = self.caller()
            except Refused as r:
                return self.refuse(r)
            now = _now()
            self.finish({"student": student, "attempts": [service.view(a, now) for a in
                                                          service.store.attempts(student)],
                         "checks_left": {c: service.store.left(student, c, service.limits, now)
                                         for c in service.grader.names}})

    class InstructorAttempts(Base):
        def get(self):
            try:
                self.caller(INSTRUCTOR)
            except Refused as r:
                return self.refuse(r)
            rows = service.store.attempts(self.get_argument("student", None))
            self.finish({"attempts": [_summary(a) for a in rows]})

    class InstructorTests(Base):
        def get(self):
            try:
                self.caller(INSTRUCTOR)
            except Refused as r:
                return self.refuse(r)
            self.finish({"tests": service.class_tests()})

    return tornado.web.Application([
        (r"/api/health", Health), (r"/api/check/([0-9A-Za-z_]+)", Check), (r"/api/attempts/([0-9]+)", Attempt),
        (r"/api/attempts", Attempts), (r"/api/instructor/attempts", InstructorAttempts),
        (r"/api/instructor/tests", InstructorTests)])


def _summary(a: dict) -> dict:
    tests = (a["answer"] or {}).get("tests", [])
    return {"attempt": a["attempt"], "student": a["student"], "chapter": a["chapter"], "submitted": _when(a["created"]),
            "status": a["status"], "score": a["score"], "max_score": a["max_score"],
            "passed": [t["name"] for t in tests if t["passed"]],
            "failed": [t["name"] for t in tests if not t["passed"]]}


# ---- commands ----------------------------------------------------------------------------------------------------


def read_roster(path: Path) -> list[str]:
    """Student ids from a CSV: the column `student` (or `id`, `username`), else the first column."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = [r for r in csv.reader(f) if r and any(x.strip() for x in r)]
    if not rows:
        raise SystemExit(f"{path}: no students")
    header = [h.strip().lower() for h in rows[0]]
    column = next((header.index(k) for k in ("student", "id", "username") if k in header), None)
    body = rows[1:] if column is not None else rows
    ids = [r[column or 0].strip() for r in body]
    bad = [s for s in ids if not _STUDENT_ID.match(s) or s == INSTRUCTOR]
    if bad:
        raise SystemExit(f"{path}: student ids must be letters, digits and _.@- (at most 64), not 'instructor': "
                         f"{bad[:5]}")
    return ids


def tokens_command(args) -> int:
    store = Store(args.course / "check-service")
    out = args.course / "check-service" / "tokens.csv"
    known = {}
    if out.exists():
        with open(out, newline="", encoding="utf-8") as f:
            known = {r["student"]: r["token"] for r in csv.DictReader(f)}
    students = read_roster(args.roster)
    issued = 0
    for student, role in [(INSTRUCTOR, INSTRUCTOR), *[(s, "student") for s in students]]:
        token = store.issue(student, role, rotate=args.rotate)
        if token:
            known[student], issued = token, issued + 1
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "token"])
        for student in [INSTRUCTOR, *students]:
            writer.writerow([student, known.get(student, "")])
    out.chmod(0o600)
    print(f"{issued} new tokens ({len(students)} students on the roster); {out} lists them (instructor only: hand "
          "each student their own line)")
    return 0


def attempts_command(args) -> int:
    store = Store(args.course / "check-service")
    rows = [_summary(a) for a in store.attempts(args.student)]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    for r in rows:
        score = f"{r['score']:g}/{r['max_score']:g}" if r["score"] is not None else r["status"]
        print(f"{r['attempt']:>5}  {r['submitted']}  {r['student']:<16} {r['chapter']:<20} {score:>9}  "
              f"failed: {', '.join(r['failed']) or '-'}")
    print(f"{len(rows)} attempts")
    return 0


def serve_command(args) -> int:
    import tornado.httpserver
    import tornado.ioloop
    import tornado.netutil

    deadlines, default = {}, None
    for d in args.deadline:
        chapter, _, when = d.partition("=") if re.match(r"^[0-9]{2}_\w+=", d) else ("", "", d)
        if chapter:
            deadlines[chapter] = parse_deadline(when)
        else:
            default = parse_deadline(when)
    limits = Limits(args.attempts_per_hour, args.min_interval, args.max_bytes, default, deadlines)
    service = Service(args.course, limits, args.workers, args.cell_timeout, args.total_timeout, args.redis)
    unknown = sorted(set(deadlines) - set(service.grader.names))
    if unknown:
        raise SystemExit(f"--deadline for unknown chapters {unknown}: one of {service.grader.names}")
    if not service.store.query("SELECT 1 FROM tokens LIMIT 1"):
        print("warning: no tokens yet: make check-tokens ROSTER=students.csv", file=sys.stderr)
    ssl = {"certfile": args.certfile, "keyfile": args.keyfile} if args.certfile else None
    server = tornado.httpserver.HTTPServer(make_app(service), xheaders=True, ssl_options=ssl,
                                           max_body_size=UPLOAD_CAP)
    sockets = tornado.netutil.bind_sockets(args.port, args.address)
    server.add_sockets(sockets)
    port = sockets[0].getsockname()[1]
    scheme = "https" if ssl else "http"
    info = {"url": f"{scheme}://{args.address}:{port}", "pid": os.getpid()}
    (service.folder / "server.json").write_text(json.dumps(info), encoding="utf-8")
    workers = f"the workers of the queue at {args.redis}" if args.redis else f"{args.workers} workers"
    print(f"checking service on {info['url']} ({workers}; {limits.attempts_per_hour} checks per student "
          f"per chapter per hour, {limits.min_interval:g} s apart); state in {service.folder}", flush=True)
    tornado.ioloop.IOLoop.current().start()
    return 0


def worker_command(args) -> int:
    """A worker on this machine for a service started with --redis: prepares the chapters, then takes checks from
    the queue until stopped (Ctrl+C or SIGTERM let the check in hand finish)."""
    import socket

    from redis import Redis
    from rq import Queue, Worker

    import autograder.check_service as this  # the module the queue's jobs import, not __main__

    folder = args.work.resolve()
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o711)
    this._WORKER_GRADER = Grader(folder, 0, args.cell_timeout, args.total_timeout, uid_base=args.uid_base)
    connection = Redis.from_url(args.redis)
    name = f"{socket.gethostname()}-{os.getpid()}"
    worker = Worker([Queue(QUEUE_NAME, connection=connection)], connection=connection, name=name)
    print(f"check worker {name} on {args.redis}, queue {QUEUE_NAME}", flush=True)
    worker.work(burst=args.burst, logging_level="WARNING")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.check_service", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("serve", help="start the service")
    p.add_argument("--course", type=Path, required=True)
    p.add_argument("--address", default="127.0.0.1", help="listen address (behind a proxy: keep 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="0: any free port (server.json says which)")
    p.add_argument("--workers", type=int, default=2, help="submissions graded at once (without --redis)")
    p.add_argument("--redis", help="a Redis URL (redis://host:6379/0): checks go to its queue, graded by "
                                   "`worker` processes on any machine, instead of this process's workers")
    p.add_argument("--cell-timeout", type=int, default=120, help="seconds per cell, as make grade")
    p.add_argument("--total-timeout", type=int, default=900, help="seconds per notebook, as make grade")
    p.add_argument("--attempts-per-hour", type=int, default=3)
    p.add_argument("--min-interval", type=float, default=60.0, help="seconds between two checks of a student")
    p.add_argument("--max-bytes", type=int, default=5 * 2**20)
    p.add_argument("--deadline", action="append", default=[],
                   help="ISO time after which checks are refused; CHAPTER=TIME for one chapter (repeatable)")
    p.add_argument("--certfile", help="serve HTTPS with this certificate (else put it behind an HTTPS proxy)")
    p.add_argument("--keyfile")
    p.set_defaults(run=serve_command)
    p = sub.add_parser("worker", help="grade the checks of a --redis service's queue, on this machine")
    p.add_argument("--redis", required=True, help="the service's Redis URL")
    p.add_argument("--work", type=Path, default=ROOT / "build" / "check-worker", help="the judge packages")
    p.add_argument("--cell-timeout", type=int, default=120)
    p.add_argument("--total-timeout", type=int, default=900)
    p.add_argument("--uid-base", type=int, default=UID_BASE + 100, help="sandbox uids from here")
    p.add_argument("--burst", action="store_true", help="stop when the queue is empty")
    p.set_defaults(run=worker_command, course=None)
    p = sub.add_parser("tokens", help="one token per student of a roster (kept when run again)")
    p.add_argument("--course", type=Path, required=True)
    p.add_argument("--roster", type=Path, required=True)
    p.add_argument("--rotate", action="store_true", help="replace existing tokens")
    p.set_defaults(run=tokens_command)
    p = sub.add_parser("attempts", help="list attempts (the instructor's view)")
    p.add_argument("--course", type=Path, required=True)
    p.add_argument("--student")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=attempts_command)
    args = parser.parse_args(argv)
    if args.course is None:
        return args.run(args)
    args.course = args.course.resolve()
    if args.course == ROOT or args.course.is_relative_to(ROOT / "solutions"):
        raise SystemExit(f"keep the course folder outside the source tree, not {args.course}")
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
