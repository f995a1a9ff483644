"""Benchmark: autograde N generated submissions of one chapter with JOBS=1 and JOBS=2, side by side; or one
student's whole course (--whole), chapter by chapter.

    python -m autograder.bench_grade [--submissions 50] [--chapter 02_embeddings]
    python -m autograder.bench_grade --whole [--jobs 1]      # make bench-submission

The submissions cycle through the solutions, the untouched release and every mutant of the chapter's catalogue, so
the scores differ; both runs must produce exactly N gradebook rows with the same scores. Prints the wall time, the
time per submission and the speed-up of two workers over one.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from autograder import grade, mutation


def make_drop(drop: Path, chapter: str, n: int) -> None:
    variants = [("control", mutation.submission(chapter, None)),
                ("untouched", nbformat.read(mutation.ROOT / "notebooks" / f"{chapter}.ipynb", as_version=4))]
    variants += [(m.name, mutation.submission(chapter, m)) for m in mutation.load_catalogue(chapter)]
    for i in range(n):
        name, nb = variants[i % len(variants)]
        folder = drop / f"student{i:03d}-{name}"
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{chapter}.ipynb")


def by_hand(chapter: str) -> float:
    """Points of a chapter's manually graded answers: autograde leaves them at 0."""
    return grade.manual_points(chapter)


def whole_submission(jobs: int) -> int:
    """One student hands in all chapters, answered with the solutions: the time each chapter takes to autograde (the
    notebook run in the sealed grader, hidden tests included) and the wall time of the whole submission."""
    work = Path(tempfile.mkdtemp(prefix="minibert-bench-whole-"))
    try:
        chapters = mutation.chapters()
        for chapter in chapters:
            folder = work / "drop" / "student"
            folder.mkdir(parents=True, exist_ok=True)
            nbformat.write(mutation.submission(chapter, None), folder / f"{chapter}.ipynb")
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            report = grade.grade(work / "course", work / "drop", None, jobs=jobs)
        wall = time.perf_counter() - start
        rows = {r["assignment"]: r for r in report.rows}
        print(f"{'chapter':<16} {'score':>9} {'seconds':>8}")
        for chapter in chapters:
            r = rows.get(chapter, {})
            score = f"{r.get('score', '')}/{r.get('max_score', '')}"
            print(f"{chapter:<16} {score:>9} {r.get('seconds') or '-':>8}")
        total = sum(float(r["seconds"]) for r in report.rows if r.get("seconds"))
        print(f"whole submission: {len(chapters)} chapters, {total:.1f} s of notebook runs, {wall:.1f} s wall with "
              f"JOBS={jobs}: {report.setup_seconds:.1f} s course set-up (once per class: assignments and judge "
              f"packages), {wall - report.setup_seconds:.1f} s grading (nbgrader autograde and feedback); median "
              f"{statistics.median(float(r['seconds']) for r in report.rows if r.get('seconds')):.1f} s per chapter; "
              f"sandbox: {report.sandbox}")
        full = all(r.get("score") != "" and float(r["score"]) == float(r["max_score"]) - by_hand(r["assignment"])
                   for r in report.rows)
        if len(report.rows) != len(chapters) or not full:
            print("FAIL: every chapter of the solutions must be graded, with full marks (of the autograded part)")
            return 1
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def gradebook_rows(course: Path, chapter: str) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "minibert") as gb:
        return {s.student.id: s.score for s in gb.assignment_submissions(chapter)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.bench_grade", description=__doc__.split("\n")[0])
    parser.add_argument("--submissions", type=int, default=50)
    parser.add_argument("--chapter", default="02_embeddings")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--whole", action="store_true", help="one student's whole course, chapter by chapter")
    args = parser.parse_args(argv)
    if args.whole:
        return whole_submission(args.jobs[0])
    work = Path(tempfile.mkdtemp(prefix="minibert-bench-grade-"))
    try:
        drop = work / "drop"
        make_drop(drop, args.chapter, args.submissions)
        results = {}
        for jobs in args.jobs:
            course = work / f"course-jobs{jobs}"
            start = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                report = grade.grade(course, drop, [args.chapter], jobs=jobs)
            wall = time.perf_counter() - start
            rows = gradebook_rows(course, args.chapter)
            results[jobs] = (wall, rows, report)
            graded = sum(r["score"] != "" for r in report.rows)
            print(f"JOBS={jobs}: {args.submissions} submissions of {args.chapter} in {wall:.0f} s = "
                  f"{wall / args.submissions:.2f} s per submission; gradebook rows: {len(rows)} "
                  f"(expected {args.submissions}); graded {graded}", flush=True)
            if len(rows) != args.submissions or graded != args.submissions:
                print(f"FAIL: the gradebook holds {len(rows)} rows, expected exactly {args.submissions}")
                return 1
        first, *others = args.jobs
        for jobs in others:
            if results[jobs][1] != results[first][1]:
                print(f"FAIL: JOBS={jobs} graded differently from JOBS={first}")
                return 1
            print(f"speed-up JOBS={jobs} vs JOBS={first}: {results[first][0] / results[jobs][0]:.2f}x "
                  "(same scores, same rows)")
        print(f"sandbox: {results[first][2].sandbox}")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
