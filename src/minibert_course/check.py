"""Check a chapter against the course's hidden tests before the deadline, through the instructor's checking service.

    python -m minibert_course.check notebooks/04_masking.ipynb     # send it, wait, print the answer
    python -m minibert_course.check --token TOKEN                   # once: store the token your instructor gave you
    python -m minibert_course.check --status                        # your checks so far and the checks left

The service (the instructor's `make check-service`) grades the notebook as `make grade` will: hidden tests
included, in the same sandbox. It answers per test passed or failed, the message of a failing visible test, and
of a hidden test only its name and that it failed; also your score so far and the checks you have left this hour.
Checks are limited (a few per chapter per hour, none after the deadline): it is a check, not a way to guess.

Configuration: `course-check.json` next to the course's `src/` folder ({"url": ..., "token": ...}; the instructor
ships the url in the kit, `--token` adds yours), or the environment variables MINIBERT_CHECK_URL and
MINIBERT_CHECK_TOKEN. JupyterLab's Check button goes through the same functions (`submit_notebook`, then
`poll_answer`), called by the lab's server extension, `minibert_course.lab_check`.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

CONFIG_NAME = "course-check.json"
NOT_CONFIGURED = ("No checking service is configured for this course: your instructor gives its address and your "
                  "token (see the README, 'Check your work'); until then, run the visible tests in the notebook.")


_POLL = re.compile(r"/api/attempts/\d+")  # what the service answers a check with, and all a client may poll


class CheckError(Exception):
    """A check that did not happen: the message says why and what to do."""


def config_path() -> Path:
    return Path(os.environ.get("MINIBERT_CHECK_CONFIG") or Path(__file__).resolve().parents[2] / CONFIG_NAME)


def load_config() -> dict:
    """{"url", "token"}: the file, then the environment (which wins)."""
    path, config = config_path(), {}
    if path.exists():
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CheckError(f"{path} cannot be read as JSON ({exc}): fix it or delete it") from None
        if not isinstance(config, dict) or not all(isinstance(config.get(k, ""), str) for k in ("url", "token")):
            raise CheckError(f'{path} must hold {{"url": "...", "token": "..."}}: fix it or delete it')
    if os.environ.get("MINIBERT_CHECK_URL"):
        config["url"] = os.environ["MINIBERT_CHECK_URL"]
    if os.environ.get("MINIBERT_CHECK_TOKEN"):
        config["token"] = os.environ["MINIBERT_CHECK_TOKEN"]
    return config


def save_token(token: str) -> Path:
    path = config_path()
    config = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    config["token"] = token.strip()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(config, f, indent=1)
    path.chmod(0o600)  # a file that was there keeps its mode through os.open: the token is the student's only
    return path


def _request(config: dict, method: str, path: str, body: bytes | None = None, timeout: float = 60) -> dict:
    if not config.get("url"):
        raise CheckError(NOT_CONFIGURED)
    if not config.get("token"):
        raise CheckError("No token: run `python -m minibert_course.check --token TOKEN` with the token your "
                         "instructor gave you.")
    try:
        request = urllib.request.Request(config["url"].rstrip("/") + path, data=body, method=method, headers={
            "Authorization": f"Bearer {config['token']}", "Content-Type": "application/json"})
    except ValueError as exc:  # "unknown url type": no https:// in front
        raise CheckError(f"the service address {config['url']!r} is not a URL ({exc}): it starts with https:// "
                         "or http://") from None
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - the configured service
            reply = json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        try:
            message = json.loads(exc.read().decode("utf-8")).get("error") or exc.reason
        except (json.JSONDecodeError, UnicodeDecodeError):
            message = exc.reason
        raise CheckError(f"the service refused the check ({exc.code}): {message}") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        raise CheckError(f"cannot reach the checking service at {config['url']} ({exc}): is it running? ask your "
                         "instructor") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise CheckError(f"{config['url']} did not answer as the checking service does (not JSON): check the "
                         "address in course-check.json") from None
    if not isinstance(reply, dict):
        raise CheckError(f"{config['url']} did not answer as the checking service does: check the address")
    return reply


def chapter_of(path: Path) -> str:
    from minibert_course.chapters import chapters

    known = [c.stem for c in chapters()]
    if path.stem in known:
        return path.stem
    for stem in known:  # "04_masking-Copy1.ipynb", "04_masking (2).ipynb"
        if path.stem.startswith(stem):
            return stem
    raise CheckError(f"{path.name} is not one of the course's notebooks ({', '.join(known)}): pass --chapter")


def submit_notebook(path: str | Path, chapter: str | None = None, config: dict | None = None) -> dict:
    """Send the saved notebook; the service answers at once with the attempt to poll ({"attempt", "poll", ...})."""
    path = Path(path)
    config = load_config() if config is None else config
    chapter = chapter or chapter_of(path)
    try:
        body = path.read_bytes()
    except OSError as exc:
        raise CheckError(f"cannot read {path}: {exc}") from None
    queued = _request(config, "POST", f"/api/check/{chapter}", body)
    if not isinstance(queued.get("poll"), str) or _POLL.fullmatch(queued["poll"]) is None:
        raise CheckError(f"{config['url']} did not answer as the checking service does: check the address")
    return queued


def poll_answer(poll: str, config: dict | None = None) -> dict:
    """One look at a submitted check: {"status": "waiting" | "running" | "done" | "error", ...}."""
    if not isinstance(poll, str) or _POLL.fullmatch(poll) is None:
        raise CheckError(f"not a check to poll: {poll!r}")
    answer = _request(load_config() if config is None else config, "GET", poll)
    if "status" not in answer:
        raise CheckError("the service's answer has no status: check the address in course-check.json")
    return answer


def check_notebook(path: str | Path, chapter: str | None = None, poll: float = 1.0, wait: float = 1800,
                   config: dict | None = None) -> dict:
    """Send the saved notebook, wait for the grade, return the answer (tests, score, checks_left, ...)."""
    config = load_config() if config is None else config
    queued = submit_notebook(path, chapter, config)
    end = time.monotonic() + wait
    while time.monotonic() < end:
        answer = poll_answer(queued["poll"], config)
        if answer["status"] in ("done", "error"):
            return answer
        time.sleep(poll)
    raise CheckError(f"no answer after {wait:.0f} s: see `python -m minibert_course.check --status` later")


def describe(answer: dict) -> str:
    """The answer as text: one line per test, the diagnosis, then the score and the checks left."""
    if answer.get("status") == "error":
        return answer.get("error", "the service could not grade this check; it is not counted")
    lines = [f"{answer['chapter']}, check {answer['attempt']} ({answer['submitted']}):"]
    for t in answer.get("tests", []):
        mark = "passed" if t["passed"] else "FAILED"
        kind = "hidden" if t["hidden"] else "visible"
        lines.append(f"  {mark:6}  {t['name']} ({t['points']:g} pt, {kind})")
        if not t["passed"] and t.get("message"):
            lines += [f"          {line}" for line in t["message"].splitlines()]
    if answer.get("diagnosis"):  # the failing tests are those of a catalogued mistake (or several alike)
        lines.append("  this looks like " + ("a mistake" if len(answer["diagnosis"]) == 1 else "one of these "
                                            "mistakes") + " from the course's catalogue:")
        lines += [f"    - {why}" for why in answer["diagnosis"]]
    if answer.get("flagged"):
        lines.append(f"  {answer['flagged']}")
    lines.append(f"score {answer['score']:g} / {answer['max_score']:g}; checks left this hour: "
                 f"{answer['checks_left']}" + (f"; deadline {answer['deadline']}" if answer.get("deadline") else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minibert_course.check", description=__doc__.split("\n")[0])
    parser.add_argument("notebook", nargs="?", type=Path)
    parser.add_argument("--chapter", help="the chapter, when the file name does not say it")
    parser.add_argument("--token", help="store your token in course-check.json")
    parser.add_argument("--status", action="store_true", help="your checks so far and the checks left")
    parser.add_argument("--json", action="store_true", help="print the answer as JSON")
    args = parser.parse_args(argv)
    try:
        if args.token:
            print(f"token stored in {save_token(args.token)}")
            if not args.notebook:
                return 0
        if args.status:
            mine = _request(load_config(), "GET", "/api/attempts")
            print(json.dumps(mine, indent=1) if args.json else "\n\n".join(describe(a) for a in mine["attempts"])
                  + f"\nchecks left this hour: {mine['checks_left']}")
            return 0
        if not args.notebook:
            parser.error("name a notebook to check")
        answer = check_notebook(args.notebook, args.chapter)
    except CheckError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(json.dumps(answer, indent=1) if args.json else describe(answer))
    return 0 if answer.get("status") == "done" and answer["score"] == answer["max_score"] else 1


if __name__ == "__main__":
    sys.exit(main())
