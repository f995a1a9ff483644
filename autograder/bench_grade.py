"""Benchmark: autograde N generated submissions of one chapter with JOBS=1 and JOBS=2, side by side.

    python autograder/bench_grade.py [--submissions 50] [--chapter 02_embeddings]

The submissions cycle through the solutions, the untouched release and every mutant of the chapter's catalogue, so
the scores differ; both runs must produce exactly N gradebook rows with the same scores. Prints the wall time, the
time per submission and the speed-up of two workers over one.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))

import grade  # noqa: E402
import mutation  # noqa: E402


def make_drop(drop: Path, chapter: str, n: int) -> None:
    variants = [("control", mutation.submission(chapter, None)),
                ("untouched", nbformat.read(mutation.ROOT / "notebooks" / f"{chapter}.ipynb", as_version=4))]
    variants += [(m.name, mutation.submission(chapter, m)) for m in mutation.load_catalogue(chapter)]
    for i in range(n):
        name, nb = variants[i % len(variants)]
        folder = drop / f"student{i:03d}-{name}"
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{chapter}.ipynb")


def gradebook_rows(course: Path, chapter: str) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "minibert") as gb:
        return {s.student.id: s.score for s in gb.assignment_submissions(chapter)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--submissions", type=int, default=50)
    parser.add_argument("--chapter", default="02_embeddings")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args(argv)
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
