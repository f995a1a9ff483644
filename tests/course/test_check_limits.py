"""The checking service's limits (autograder/check_service.py `Store.admit`), with the clock passed in: checks
per student and chapter per hour, the minimum interval, one check in flight, deadlines, a failed run not counted,
and tokens stored only as hashes."""

from __future__ import annotations

import pytest
from conftest import _autograder

cs = _autograder("check_service")


def test_an_hour_of_checks_then_the_next_when_the_first_ages_out(tmp_path):
    store, limits = cs.Store(tmp_path / "s"), cs.Limits(attempts_per_hour=3, min_interval=0)
    for i, t in enumerate((1000.0, 1100.0, 1200.0)):
        attempt, left = store.admit("ann", "04_masking", limits, t)
        assert left == 2 - i
        store.query("UPDATE attempts SET status = 'done' WHERE id = ?", attempt)
    with pytest.raises(cs.Refused) as refused:
        store.admit("ann", "04_masking", limits, 1300.0)
    assert refused.value.status == 429 and "at most 3" in refused.value.message
    assert refused.value.retry_after == pytest.approx(1000.0 + 3600 - 1300.0)
    store.admit("ann", "02_embeddings", limits, 1300.0)  # another chapter has its own count
    store.query("UPDATE attempts SET status = 'done'")
    assert store.admit("ann", "04_masking", limits, 4601.0)[1] == 0  # the first check is an hour old


def test_the_minimum_interval_one_in_flight_and_a_failed_run(tmp_path):
    store, limits = cs.Store(tmp_path / "s"), cs.Limits(attempts_per_hour=3, min_interval=60)
    first, _ = store.admit("ben", "04_masking", limits, 0.0)
    with pytest.raises(cs.Refused, match="still running"):
        store.admit("ben", "02_embeddings", limits, 100.0)
    store.query("UPDATE attempts SET status = 'done' WHERE id = ?", first)
    with pytest.raises(cs.Refused, match="try again in 30 s"):
        store.admit("ben", "02_embeddings", limits, 30.0)
    second, _ = store.admit("ben", "02_embeddings", limits, 60.0)
    store.query("UPDATE attempts SET status = 'error' WHERE id = ?", second)  # the service's fault
    assert store.left("ben", "02_embeddings", limits, 61.0) == 3  # not counted
    store.admit("ben", "02_embeddings", limits, 61.0)  # nor does it start the interval


def test_deadlines_per_chapter_and_for_all(tmp_path):
    store = cs.Store(tmp_path / "s")
    limits = cs.Limits(deadline=cs.parse_deadline("2026-12-20T23:59+01:00"),
                       deadlines={"04_masking": cs.parse_deadline("2026-12-10T12:00")})
    with pytest.raises(cs.Refused) as refused:
        store.admit("cy", "04_masking", limits, cs.parse_deadline("2026-12-10T12:01"))
    assert refused.value.status == 403 and "2026-12-10 12:00:00 UTC" in refused.value.message
    store.admit("cy", "02_embeddings", limits, cs.parse_deadline("2026-12-20T22:58+00:00"))
    with pytest.raises(SystemExit, match="ISO 8601"):
        cs.parse_deadline("next friday")


def test_tokens_are_kept_as_hashes_and_survive_a_second_roster(tmp_path):
    store = cs.Store(tmp_path / "s")
    token = store.issue("dee")
    assert store.who(token) == ("dee", "student") and store.who("guess") is None and store.who(None) is None
    assert store.issue("dee") is None and store.who(token)  # kept
    assert token not in (tmp_path / "s" / "state.sqlite").read_bytes().decode("latin-1")
    rotated = store.issue("dee", rotate=True)
    assert store.who(token) is None and store.who(rotated) == ("dee", "student")


def test_a_roster_with_bad_ids_is_refused(tmp_path):
    roster = tmp_path / "r.csv"
    roster.write_text("id,name\nann,A\n../etc,B\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="student ids"):
        cs.read_roster(roster)
    roster.write_text("ann\nben\n", encoding="utf-8")
    assert cs.read_roster(roster) == ["ann", "ben"]


def test_a_kit_built_for_a_service_knows_its_address_and_asks_for_the_token(tmp_path):
    import json
    import os
    import subprocess
    import sys

    kit = _autograder("student_kit").build_kit(tmp_path / "kit", check_url="https://check.example.edu/minibert")
    assert json.loads((kit / "course-check.json").read_text())["url"] == "https://check.example.edu/minibert"
    assert "course-check.json" in (kit / ".gitignore").read_text().split()  # the token is never committed
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINIBERT_CHECK")}
    env["PYTHONPATH"] = str(kit / "src")
    run = subprocess.run([sys.executable, "-m", "minibert_course.check", "notebooks/04_masking.ipynb"], cwd=kit,
                         env=env, capture_output=True, text=True)
    assert run.returncode == 2 and "No token" in run.stderr and "--token" in run.stderr, run


def test_a_check_waiting_when_the_service_stopped_is_answered_and_not_counted(tmp_path):
    course = tmp_path / "course"
    store, limits = cs.Store(course / "check-service"), cs.Limits(attempts_per_hour=1, min_interval=0)
    waiting, _ = store.admit("eve", "04_masking", limits, cs._now())
    store.db.close()
    service = cs.Service(course, limits, workers=1)  # started again
    attempt = service.store.attempt(waiting)
    assert attempt["status"] == "error" and "not counted" in attempt["answer"]["error"]
    assert service.store.left("eve", "04_masking", limits, cs._now()) == 1


def test_an_answer_keeps_the_graders_problems_and_its_second_lines_for_the_instructor(tmp_path):
    import json
    from types import SimpleNamespace

    from minibert_course.sealed import CellResult, Plan, PlannedCell, RunResult

    hidden = "x = 1\n### BEGIN HIDDEN TESTS\nassert secret_case()\n### END HIDDEN TESTS\n"
    plan = Plan([PlannedCell("test", hidden, grade_id="t-hidden", points=2.0),
                 PlannedCell("test", "assert f(2) == 4, 'f(2) must be 4'\n", grade_id="t-visible", points=1.0),
                 PlannedCell("test", hidden, grade_id="t-lost", points=1.0)])
    hidden_error = {"output_type": "error", "ename": "AssertionError", "evalue": "secret_case failed",
                    "traceback": ['File "<cell>", line 3, in <module>']}
    visible_error = {"output_type": "error", "ename": "AssertionError", "evalue": "f(2) must be 4",
                     "traceback": ['File "<cell>", line 1, in <module>']}
    lost = {"output_type": "error", "ename": "NotRun", "evalue": "the checker failed (exit code 1):\nTraceback ...",
            "traceback": []}
    result = RunResult([CellResult(0, "test", "t-hidden", False, [hidden_error]),
                        CellResult(1, "test", "t-visible", False, [visible_error]),
                        CellResult(2, "test", "t-lost", False, [lost])], problems=["the checker failed: stderr"])
    answer = cs.answer_from(plan, result)
    messages = {t["name"]: t["message"] for t in answer["tests"]}
    assert messages["t-hidden"] == "a hidden test failed" and "secret" not in str(answer["tests"])
    assert messages["t-visible"].startswith("AssertionError: f(2) must be 4")
    assert messages["t-lost"] == "NotRun: the checker failed (exit code 1):"
    assert answer["score"] == 0 and answer["max_score"] == 4
    store = cs.Store(tmp_path / "s")
    attempt, _ = store.admit("fay", "04_masking", cs.Limits(), 0.0)
    store.query("UPDATE attempts SET status = 'done', answer = ? WHERE id = ?", json.dumps(answer), attempt)
    view = cs.Service.view(SimpleNamespace(store=store, limits=cs.Limits()), store.attempt(attempt))
    assert answer["problems"] and "stderr" not in json.dumps(view) and "problem" in view["note"]
