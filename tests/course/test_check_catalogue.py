"""Every catalogued wrong implementation of every chapter, sent through the checking service: each answer names its
own mistake (and those of the mutants that fail the same tests), and each chapter's control gets full marks and no
diagnosis.

All 303 mutants took 13 minutes on 2 cores (780 s, measured 2026-12-06), too long for `make test`: `make
check-catalogue` runs this file. Under `make test` it skips, saying so; its twin there, test_check_service.py's
test_the_catalogue_diagnoses_a_mutant_of_every_chapter, sends one mutant per chapter through the same service, and
tests/course/test_mutation.py checks every mutant's diagnosis in `make grade`'s feedback (the same code).
"""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest
from conftest import _autograder
from test_check_service import assert_no_secret, mistakes_alike, notebook_bytes, running_service

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    os.environ.get("MINIBERT_CHECK_CATALOGUE") != "1",
    reason="every mutant through the service takes about 13 min on 2 cores: `make check-catalogue` runs it "
           "(make test runs the one-mutant-per-chapter twin in test_check_service.py)")]
mutation = _autograder("mutation")


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    students = [f"cat-{chapter}" for chapter in mutation.chapters()]
    with running_service(tmp_path_factory.mktemp("catalogue"), students, "--workers", "2", "--min-interval", "0",
                         "--attempts-per-hour", "100000") as s:
        yield s


def test_every_mutant_through_the_service_is_diagnosed(service):
    signatures = _autograder("diagnosis").load_signatures()
    answers: dict[tuple[str, str], dict] = {}

    def chapter_run(chapter):  # one student per chapter: its checks go one after another, the chapters at once
        for mutant in [None, *mutation.load_catalogue(chapter)]:
            name = mutant.name if mutant else mutation.CONTROL
            status, answer = service.check(f"cat-{chapter}", chapter,
                                           notebook_bytes(mutation.submission(chapter, mutant)))
            answers[chapter, name] = answer

    start = time.monotonic()
    threads = [threading.Thread(target=chapter_run, args=(ch,)) for ch in mutation.chapters()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    problems = []
    for chapter in mutation.chapters():
        catalogue = mutation.load_catalogue(chapter)
        control = answers[chapter, mutation.CONTROL]
        if control.get("status") != "done" or control["score"] != control["max_score"] or control["diagnosis"]:
            problems.append(f"{chapter} control: {str(control)[:300]}")
        for mutant in catalogue:
            answer = answers[chapter, mutant.name]
            if answer.get("status") != "done":
                problems.append(f"{chapter} {mutant.name}: not graded: {str(answer)[:300]}")
                continue
            alike = mistakes_alike(chapter, mutant, signatures)
            if set(answer["diagnosis"]) != alike:
                problems.append(f"{chapter} {mutant.name}: diagnosis {answer['diagnosis']}, expected {sorted(alike)}")
            assert_no_secret(answer, chapter)
    print(f"{len(answers)} checks ({len(answers) - len(mutation.chapters())} mutants and "
          f"{len(mutation.chapters())} controls) answered in {time.monotonic() - start:.0f} s", file=sys.stderr)
    assert not problems, "\n".join(problems)
