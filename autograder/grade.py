"""`make grade`: the nbgrader pipeline (generate, autograde, feedback) in a course folder outside the source tree.

    python autograder/grade.py --course DIR --submissions SUBMISSIONS [--assignment 01_wordpiece ...]

SUBMISSIONS holds one folder per student, each with one folder per assignment (chapter), as nbgrader collects
them: SUBMISSIONS/<student>/<assignment>/<assignment>.ipynb. Every chapter is its own assignment and is graded
on its own: a notebook imports earlier chapters from the reference package installed here, so a mistake in one
chapter costs no points in another.

A broken submission (not JSON, not a notebook, a kernel that dies) is reported and skipped; the rest of the class
is still graded. Submissions run with NBGRADER_EXECUTION set, so their export cells write nothing. Scores go to
DIR/grades.csv and are printed; feedback (hidden tests and test tracebacks removed) to DIR/feedback/.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    """Run the nbgrader command line from the course folder, with this venv's bin first on PATH."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    cmd = [sys.executable, "-m", "nbgrader", *args]
    return subprocess.run(cmd, cwd=course, env=env, capture_output=True, text=True)


def check_submission(path: Path) -> str | None:
    """Why a submitted notebook cannot be graded, or None when it can be."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return f"not a notebook file ({exc.__class__.__name__}: {exc})"
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        return "not a notebook file (no list of cells)"
    return None


def setup_course(course: Path, assignments: list[str]) -> None:
    if course.resolve().is_relative_to(ROOT / "solutions") or course.resolve() == ROOT:
        raise SystemExit(f"grade in a folder outside the source tree, not {course}")
    course.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ROOT / "autograder" / "nbgrader_config.py", course / "nbgrader_config.py")
    for name in assignments:
        source = course / "source" / name
        source.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / "solutions" / f"{name}.ipynb", source / f"{name}.ipynb")


def collect(course: Path, submissions: Path, assignment: str) -> dict[str, str]:
    """Copy each student's submission into the course; return student -> problem for those that cannot run."""
    problems = {}
    if not submissions.is_dir():
        return problems
    for student_dir in sorted(p for p in submissions.iterdir() if p.is_dir()):
        src = student_dir / assignment
        if not src.is_dir():
            continue
        student = student_dir.name
        dest = course / "submitted" / student / assignment
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        notebook = src / f"{assignment}.ipynb"
        if not notebook.exists():
            problems[student] = f"no {assignment}.ipynb in {src}"
            shutil.rmtree(dest)
            continue
        problem = check_submission(notebook)
        if problem:
            problems[student] = problem
            shutil.rmtree(dest)
            continue
        shutil.copy2(notebook, dest / notebook.name)
    return problems


def scores(course: Path, assignment: str) -> dict[str, tuple[float, float]]:
    from nbgrader.api import Gradebook, MissingEntry

    result = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "minibert") as gb:
        for student in gb.students:
            try:
                sub = gb.find_submission(assignment, student.id)
            except MissingEntry:
                continue
            result[student.id] = (sub.score, sub.max_score)
    return result


def grade(course: Path, submissions: Path, assignments: list[str]) -> list[dict]:
    course = course.resolve()
    setup_course(course, assignments)
    rows = []
    for assignment in assignments:
        run = nbgrader(course, "generate_assignment", assignment, "--force")
        if run.returncode != 0:
            raise SystemExit(f"nbgrader generate_assignment {assignment} failed:\n{run.stdout}{run.stderr}")
        problems = collect(course, submissions, assignment)
        for student, problem in problems.items():
            rows.append(dict(student=student, assignment=assignment, score="", max_score="", problem=problem))
        if not (course / "submitted").is_dir():
            continue
        run = nbgrader(course, "autograde", assignment, "--force", "--create")
        log = run.stdout + run.stderr
        (course / f"autograde-{assignment}.log").write_text(log, encoding="utf-8")
        graded = scores(course, assignment)
        feedback = nbgrader(course, "generate_feedback", assignment, "--force")
        (course / f"feedback-{assignment}.log").write_text(feedback.stdout + feedback.stderr, encoding="utf-8")
        for student_dir in sorted((course / "submitted").iterdir()):
            student = student_dir.name
            if not (student_dir / assignment).is_dir() or student in problems:
                continue
            if student in graded and (course / "autograded" / student / assignment).is_dir():
                score, max_score = graded[student]
                rows.append(dict(student=student, assignment=assignment, score=score, max_score=max_score, problem=""))
            else:
                rows.append(dict(student=student, assignment=assignment, score="", max_score="",
                                 problem=f"autograde failed: see {course / f'autograde-{assignment}.log'}"))
    with open(course / "grades.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=["student", "assignment", "score", "max_score", "problem"])
        writer.writeheader()
        writer.writerows(rows)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--course", type=Path, required=True, help="course folder (created; outside the repo)")
    parser.add_argument("--submissions", type=Path, required=True, help="SUBMISSIONS/<student>/<assignment>/")
    parser.add_argument("--assignment", action="append", help="chapters to grade (default: all)")
    args = parser.parse_args(argv)
    assignments = args.assignment or [p.stem for p in sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb"))]
    if not args.submissions.is_dir():
        print(f"no submissions folder {args.submissions}: generated the assignments only. Put submissions in "
              f"{args.submissions}/<student>/<assignment>/<assignment>.ipynb and run again.")
    rows = grade(args.course, args.submissions, assignments)
    for row in rows:
        mark = f"{row['score']}/{row['max_score']}" if row["score"] != "" else f"NOT GRADED: {row['problem']}"
        print(f"{row['student']:20s} {row['assignment']:20s} {mark}")
    print(f"grades: {args.course.resolve() / 'grades.csv'}; feedback: {args.course.resolve() / 'feedback'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
