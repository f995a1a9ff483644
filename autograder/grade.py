"""`make grade`: grade a class with real nbgrader (generate, autograde, feedback), sealed and in parallel.

    python -m autograder.grade --course DIR --submissions DROP [--assignment 04_masking ...] [--jobs N]
    python -m autograder.grade --course DIR --submissions DROP --shard 2/4     # one shard of a class (a machine)
    python -m autograder.grade --course DIR --merge SHARD_COURSE ...            # merge graded shards

DROP holds one entry per student: nbgrader's layout (DROP/<student>/<chapter>/<chapter>.ipynb), or a folder or a
.zip with the student's notebooks anywhere inside (a notebook is matched to its chapter by name, or, when renamed,
by its graded cells). Only the chapters that have submissions are graded (or those named with --assignment).

Every chapter is its own nbgrader assignment, graded on its own: while chapter N is graded, the package that the
notebook imports holds the reference code of chapters before N only (chapter N and later are stubs), so a mistake
in one chapter costs no points in another, and a submission cannot import the answer. Autograde runs each
submission sealed (minibert_course.sealed: the student's answers run in a sandboxed worker, the tests in a checker
process that runs no student code; a run-time fault fails the test it touched and is flagged for review).
Submissions are split into JOBS shards; each shard is an independent course folder with its own gradebook, graded
by its own `nbgrader autograde`, and merged at the end.

Writes DIR/grades.csv (student, one column per chapter, total), DIR/grades-detail.csv (one row per submission, with
problems and flags), DIR/summary.txt and summary.json (graded, not graded with the reason, flagged, feedback
missing, time per submission, the sandbox used) and DIR/feedback/ (hidden tests and test tracebacks removed).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from minibert_course import chapters as registry

ROOT = Path(__file__).resolve().parents[1]
MAX_NOTEBOOK_BYTES = 200 * 2**20
MAX_ZIP_BYTES = 1 * 2**30
MAX_ZIP_FILES = 2000
UID_BASE = 61000
# The course's exchange (nbgrader's release/collect), inside the course folder: the formgrader finds it and does not
# warn that /usr/local/share/nbgrader/exchange is missing. Appended to the course's copy of nbgrader_config.py.
EXCHANGE_CONFIG = """
# Added by autograder/grade.py: the exchange of this course folder
c.Exchange.root = {root!r}
"""
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def all_chapters() -> list[str]:
    return registry.stems(ROOT)


def nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    """Run the nbgrader command line from the course folder, with this venv's bin first on PATH."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env, capture_output=True,
                          text=True)


# ---- finding the submissions ---------------------------------------------------------------------------------


@dataclass
class Submission:
    student: str
    chapter: str
    path: Path | None
    problem: str = ""
    notes: list[str] = field(default_factory=list)


def check_submission(path: Path) -> str | None:
    """Why a submitted notebook cannot be graded, or None when it can be."""
    size = path.stat().st_size
    if size > MAX_NOTEBOOK_BYTES:
        return f"notebook too large ({size / 2**20:.0f} MB > {MAX_NOTEBOOK_BYTES / 2**20:.0f} MB)"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        return f"not a notebook file ({exc.__class__.__name__}: {str(exc)[:120]})"
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        return "not a notebook file (no list of cells)"
    if not all(isinstance(c, dict) and isinstance(c.get("source", ""), (str, list)) for c in data["cells"]):
        return "not a notebook file (a cell is not a cell)"
    return None


def grade_ids(data: dict) -> set[str]:
    ids = set()
    for cell in data.get("cells", []):
        meta = cell.get("metadata", {}).get("nbgrader", {}) if isinstance(cell, dict) else {}
        if isinstance(meta, dict) and isinstance(meta.get("grade_id"), str):
            ids.add(meta["grade_id"])
    return ids


def chapter_ids() -> dict[str, set[str]]:
    return {ch: grade_ids(json.loads((ROOT / "solutions" / f"{ch}.ipynb").read_text(encoding="utf-8")))
            for ch in all_chapters()}


def safe_extract(archive: Path, dest: Path) -> list[str]:
    """Extract the notebooks of a zip, refusing absolute paths, `..`, links and zip bombs."""
    notes = []
    with zipfile.ZipFile(archive) as zf:
        members = zf.infolist()
        if len(members) > MAX_ZIP_FILES:
            raise ValueError(f"{len(members)} files in the zip (at most {MAX_ZIP_FILES})")
        if sum(m.file_size for m in members) > MAX_ZIP_BYTES:
            raise ValueError("the zip unpacks to more than 1 GiB")
        for m in members:
            name = m.filename
            if m.is_dir() or not name.endswith(".ipynb") or "__MACOSX" in name:
                continue
            parts = Path(name).parts
            if name.startswith("/") or ".." in parts or (m.external_attr >> 16) & 0o170000 == 0o120000:
                notes.append(f"skipped unsafe zip entry {name!r}")
                continue
            target = dest.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(m) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
    return notes


def discover(drop: Path, chapters: list[str], work: Path) -> list[Submission]:
    """One Submission per (student, chapter) found in the drop folder."""
    known = chapter_ids()
    found: list[Submission] = []
    if not drop.is_dir():
        return found
    for entry in sorted(drop.iterdir()):
        if entry.name.startswith("."):
            continue
        student = _SAFE.sub("_", entry.stem if entry.suffix == ".zip" else entry.name).strip("._") or "student"
        notes: list[str] = []
        if entry.is_file() and entry.suffix == ".zip":
            root = work / "unzipped" / student
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir(parents=True)
            try:
                notes += safe_extract(entry, root)
            except (zipfile.BadZipFile, ValueError, OSError) as exc:
                for ch in chapters:
                    found.append(Submission(student, ch, None, f"unreadable zip {entry.name}: {exc}"))
                continue
        elif entry.is_dir() and not entry.is_symlink():
            root = entry
        else:
            continue
        candidates: dict[str, list[tuple[int, Path, str]]] = {}
        for nb in sorted(root.rglob("*.ipynb")):
            if ".ipynb_checkpoints" in nb.parts or nb.is_symlink() or not nb.is_file():
                continue
            if nb.stem in known:
                rank = 0 if nb.parent.name == nb.stem else 1
                candidates.setdefault(nb.stem, []).append((rank, nb, ""))
                continue
            problem = check_submission(nb)
            if problem:
                notes.append(f"{nb.name}: {problem}")
                continue
            ids = grade_ids(json.loads(nb.read_text(encoding="utf-8")))
            best = max(known, key=lambda ch: len(ids & known[ch]))
            if ids & known[best]:
                candidates.setdefault(best, []).append((2, nb, f"renamed notebook {nb.name} graded as {best}"))
            else:
                notes.append(f"{nb.name}: not one of the course's notebooks")
        for ch in chapters:
            if ch not in candidates:
                continue
            rank, path, note = sorted(candidates[ch], key=lambda t: (t[0], -t[1].stat().st_mtime))[0]
            extra = [note] if note else []
            if len(candidates[ch]) > 1:
                extra.append(f"{len(candidates[ch])} notebooks for {ch}: graded {path.relative_to(root)}")
            found.append(Submission(student, ch, path, check_submission(path) or "", notes + extra))
    return found


# ---- the course folder ---------------------------------------------------------------------------------------


def setup_course(course: Path, chapters: list[str]) -> None:
    """Generate the assignments and the judge packages. The course folder is closed to the submissions' uid:
    it can only traverse to judge/ (the chapter packages), never list or read the rest."""
    from minibert_course.sealed import build_judge_package

    if course.resolve().is_relative_to(ROOT / "solutions") or course.resolve() == ROOT:
        raise SystemExit(f"grade in a folder outside the source tree, not {course}")
    course.mkdir(parents=True, exist_ok=True)
    course.chmod(0o711)
    shutil.copy2(ROOT / "autograder" / "nbgrader_config.py", course / "nbgrader_config.py")
    (course / "exchange").mkdir(exist_ok=True)
    (course / "exchange").chmod(0o700)
    with open(course / "nbgrader_config.py", "a", encoding="utf-8") as config:
        config.write(EXCHANGE_CONFIG.format(root=str(course / "exchange")))
    for sub in ("source", "release", "submitted", "autograded", "feedback", "judge-reports", "shards"):
        (course / sub).mkdir(exist_ok=True)
        (course / sub).chmod(0o700)
    solutions = sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb"))
    for name in chapters:
        source = course / "source" / name
        source.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / "solutions" / f"{name}.ipynb", source / f"{name}.ipynb")
        run = nbgrader(course, "generate_assignment", name, "--force")
        if run.returncode != 0:
            raise SystemExit(f"nbgrader generate_assignment {name} failed:\n{run.stdout}{run.stderr}")
    releases = [course / "release" / p.stem / p.name for p in solutions]
    missing = [p for p in releases if not p.exists()]
    for path in missing:  # chapters not graded this time still need their stubs in the judge package
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / "notebooks" / path.name, path)
    write_mark_schemes(course, chapters)
    write_diagnoses(course, chapters)
    (course / "judge").mkdir(exist_ok=True)
    (course / "judge").chmod(0o755)
    for name in chapters:
        build_judge_package(course / "judge" / name, name, solutions, releases)
    if (course / "gradebook.db").exists():
        (course / "gradebook.db").chmod(0o600)


def name_student(gb, student: str, first_name: str | None = None, last_name: str | None = None) -> None:
    """The gradebook's student `student` (created if missing), with a name: the formgrader lists students as
    "last name, first name", "None, None" for a student without one. A name already there (an instructor may set it
    in the formgrader) is kept; else the given one, else the id from the drop folder as the last name."""
    from nbgrader.api import MissingEntry

    try:
        entry = gb.find_student(student)
    except MissingEntry:
        entry = gb.add_student(student)
    if entry.first_name is None and entry.last_name is None:
        if first_name is None and last_name is None:
            first_name, last_name = "", student
        entry.first_name, entry.last_name = first_name or "", last_name or ""
        gb.db.commit()


def name_students(course: Path, students: list[str]) -> None:
    """The drop folder's students in the course's gradebook, named (before the shards copy it)."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "minibert") as gb:
        for student in students:
            name_student(gb, student)


def manual_points(chapter: str) -> float:
    """Points of a chapter's manually graded answers (autograde gives them 0 until a grader scores them)."""
    return registry.chapter(chapter, ROOT).manual_points


def write_mark_schemes(course: Path, chapters: list[str]) -> Path | None:
    """COURSE/mark_schemes.md: the mark scheme of every manually graded answer, for the graders (make formgrader).
    They live in the solution notebooks' cell metadata and never reach students (ClearGraderMetadata)."""
    import nbformat

    from minibert_course.nbgrader_ext import mark_schemes

    lines = []
    for name in chapters:
        nb = nbformat.read(ROOT / "solutions" / f"{name}.ipynb", as_version=4)
        for grade_id, points, criteria in mark_schemes(nb):
            lines += [f"## {name} · `{grade_id}` ({points:g} points)", "", *[f"- {c}" for c in criteria], ""]
    if not lines:
        return None
    path = course / "mark_schemes.md"
    path.write_text("# Mark schemes of the manually graded answers\n\nGrade them in `make formgrader COURSE=...` "
                    "(Manual grading); autograde scores them 0 until then.\n\n" + "\n".join(lines), encoding="utf-8")
    return path


# ---- shards: independent course folders, graded in parallel, merged ------------------------------------------


SHARD_CONFIG = """
c.SealedExecute.uid = {uid}
c.SealedExecute.judge_root = {judge!r}
c.SealedExecute.cell_timeout = {cell_timeout}
c.SealedExecute.total_timeout = {total_timeout}
c.SealedExecute.diagnosis_file = {diagnosis!r}
"""


def write_diagnoses(course: Path, chapters: list[str]) -> Path:
    """COURSE/diagnoses.json: the catalogue's mistakes by signature (autograder/diagnosis.py), which the feedback
    names; the instructor's only (0600), like the catalogue."""
    from autograder.diagnosis import table

    path = course / "diagnoses.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(table(chapters), f, indent=1, ensure_ascii=False)
    path.chmod(0o600)
    return path


def make_shard(course: Path, shard: Path, subs: list[Submission], uid: int, cell_timeout: int,
               total_timeout: int) -> None:
    shutil.rmtree(shard, ignore_errors=True)
    shard.mkdir(parents=True)
    shard.chmod(0o700)
    config = (course / "nbgrader_config.py").read_text(encoding="utf-8")
    config += SHARD_CONFIG.format(uid=uid, judge=str(course / "judge"), cell_timeout=cell_timeout,
                                  total_timeout=total_timeout, diagnosis=str(course / "diagnoses.json"))
    (shard / "nbgrader_config.py").write_text(config, encoding="utf-8")
    for sub in ("source", "release"):
        shutil.copytree(course / sub, shard / sub)
    shutil.copy2(course / "gradebook.db", shard / "gradebook.db")
    for s in subs:
        dest = shard / "submitted" / s.student / s.chapter
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy2(s.path, dest / f"{s.chapter}.ipynb")


def grade_shard(shard: Path, chapters: list[str]) -> list[str]:
    """autograde + feedback, chapter by chapter; returns log lines of steps that failed."""
    failures = []
    for chapter in chapters:
        if not any((shard / "submitted").glob(f"*/{chapter}")):
            continue
        run = nbgrader(shard, "autograde", chapter, "--force", "--create")
        (shard / f"autograde-{chapter}.log").write_text(run.stdout + run.stderr, encoding="utf-8")
        if run.returncode != 0:
            failures.append(f"autograde {chapter} exited {run.returncode}: see {shard / f'autograde-{chapter}.log'}")
        feedback = nbgrader(shard, "generate_feedback", chapter, "--force")
        (shard / f"feedback-{chapter}.log").write_text(feedback.stdout + feedback.stderr, encoding="utf-8")
    return failures


def merge_gradebook(main_db: Path, shard_db: Path) -> int:
    """Copy every submission of the shard's gradebook into the main one (replacing older ones). Returns count."""
    import warnings

    from nbgrader.api import Gradebook, MissingEntry
    from sqlalchemy.exc import SAWarning

    n = 0
    with warnings.catch_warnings(), Gradebook(f"sqlite:///{shard_db}", "minibert") as src, \
            Gradebook(f"sqlite:///{main_db}", "minibert") as dst:
        # nbgrader's add_submission under SQLAlchemy 2.0's autoflush; silenced here only, not for the whole process
        warnings.filterwarnings("ignore", category=SAWarning)
        for assignment in src.assignments:
            for sub in src.assignment_submissions(assignment.name):
                student = sub.student.id
                name_student(dst, student, sub.student.first_name, sub.student.last_name)
                try:
                    dst.find_submission(assignment.name, student)
                    dst.remove_submission(assignment.name, student)
                    dst.db.commit()
                    dst.db.expire_all()
                except MissingEntry:
                    pass
                dst.add_submission(assignment.name, student, timestamp=sub.timestamp)
                for nb in sub.notebooks:
                    target = dst.find_submission_notebook(nb.name, assignment.name, student)
                    target.flagged = nb.flagged
                    target.late_submission_penalty = nb.late_submission_penalty
                    for g in nb.grades:
                        t = dst.find_grade(g.name, nb.name, assignment.name, student)
                        t.auto_score, t.manual_score = g.auto_score, g.manual_score
                        t.extra_credit, t.needs_manual_grade = g.extra_credit, g.needs_manual_grade
                    for c in nb.comments:
                        t = dst.find_comment(c.name, nb.name, assignment.name, student)
                        t.auto_comment, t.manual_comment = c.auto_comment, c.manual_comment
                dst.db.commit()
                n += 1
    return n


def copy_tree(src: Path, dst: Path) -> None:
    if src.is_dir():
        shutil.copytree(src, dst, dirs_exist_ok=True)


def merge_shard(course: Path, shard: Path) -> int:
    n = merge_gradebook(course / "gradebook.db", shard / "gradebook.db")
    for sub in ("autograded", "feedback", "judge-reports", "submitted"):
        copy_tree(shard / sub, course / sub)
    for log in shard.glob("*.log"):
        shutil.copy2(log, course / f"{shard.name}-{log.name}")
    return n


# ---- the whole run ---------------------------------------------------------------------------------------------


@dataclass
class Report:
    rows: list[dict]  # one per (student, chapter)
    cell_scores: dict[tuple[str, str], dict[str, float]]
    seconds: float
    sandbox: str
    setup_seconds: float = 0.0  # generating the assignments and the judge packages (once per class)


def progress_reporter(shards: list[Path], total: int, stop: threading.Event, quiet: bool) -> threading.Thread:
    def watch():
        seen: set[Path] = set()
        while not stop.wait(1.0):
            for shard in shards:
                for report in sorted((shard / "judge-reports").glob("*/*.json")):
                    if report in seen:
                        continue
                    seen.add(report)
                    if quiet:
                        continue
                    try:
                        r = json.loads(report.read_text(encoding="utf-8"))
                    except (OSError, json.JSONDecodeError):
                        continue
                    passed = sum(r["tests"].values())
                    flag = f"  FLAGGED: {'; '.join(r['flags'])[:100]}" if r["flags"] else ""
                    print(f"[{len(seen)}/{total}] {r['student']:24s} {r['assignment']:16s} tests passed "
                          f"{passed}/{len(r['tests'])} in {r['seconds']:.1f} s{flag}", flush=True)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def collect_results(course: Path, subs: list[Submission], failures: list[str]) -> Report:
    from nbgrader.api import Gradebook, MissingEntry

    from minibert_course.sealed import Sandbox

    rows, cell_scores = [], {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "minibert") as gb:
        for s in subs:
            row = dict(student=s.student, assignment=s.chapter, score="", max_score="", problem=s.problem,
                       flags="", review="", notes="; ".join(s.notes), seconds="", feedback="")
            report_path = course / "judge-reports" / s.chapter / f"{s.student}.json"
            if not s.problem:
                try:
                    sub = gb.find_submission(s.chapter, s.student)
                except MissingEntry:
                    sub = None
                if sub is None or not report_path.exists():
                    row["problem"] = "autograde failed" + (f" ({'; '.join(failures)})" if failures else "")
                else:
                    report = json.loads(report_path.read_text(encoding="utf-8"))
                    row.update(score=sub.score, max_score=sub.max_score, flags="; ".join(report["flags"]),
                               review="; ".join(report["review"]), seconds=f"{report['seconds']:.1f}")
                    row["notes"] = "; ".join([*s.notes, *report["problems"]])
                    scores = {}
                    for nb in sub.notebooks:
                        for g in nb.grades:
                            scores[g.name] = g.score
                        if report["flags"] or report["review"]:
                            nb.flagged = True
                    gb.db.commit()
                    cell_scores[(s.student, s.chapter)] = scores
                    page = course / "feedback" / s.student / s.chapter / f"{s.chapter}.html"
                    row["feedback"] = str(page) if page.exists() else "MISSING"
            rows.append(row)
    return Report(rows, cell_scores, 0.0, Sandbox().describe())


def grade(course: Path, drop: Path, assignments: list[str] | None = None, jobs: int = 1, *, quiet: bool = False,
          cell_timeout: int = 120, total_timeout: int = 900, shard: tuple[int, int] | None = None) -> Report:
    start = time.perf_counter()
    course = course.resolve()
    chapters = assignments or all_chapters()
    unknown = sorted(set(chapters) - set(all_chapters()))
    if unknown:
        raise SystemExit(f"unknown chapters {unknown}: choose from {all_chapters()}")
    course.mkdir(parents=True, exist_ok=True)
    subs = discover(drop, chapters, course)
    if shard is not None:
        k, n = shard
        students = sorted({s.student for s in subs})
        mine = set(students[k - 1::n])
        subs = [s for s in subs if s.student in mine]
    if assignments is None:  # only the chapters that have submissions
        chapters = [ch for ch in chapters if any(s.chapter == ch for s in subs)] or chapters
    setup_course(course, chapters)
    gradable = [s for s in subs if not s.problem and s.chapter in chapters]
    name_students(course, sorted({s.student for s in gradable}))
    set_up = time.perf_counter() - start
    jobs = max(1, min(jobs, len(gradable) or 1))
    shards = [course / "shards" / f"shard-{i}" for i in range(jobs)]
    per_shard: list[list[Submission]] = [[] for _ in shards]
    for i, s in enumerate(sorted(gradable, key=lambda s: (s.chapter, s.student))):
        per_shard[i % jobs].append(s)
    for i, (path, part) in enumerate(zip(shards, per_shard, strict=True)):
        make_shard(course, path, part, UID_BASE + i, cell_timeout, total_timeout)
    if not quiet:
        from minibert_course.sealed import Sandbox

        print(f"grading {len(gradable)} submissions of {len(chapters)} chapter(s) with {jobs} worker(s); "
              f"{Sandbox().describe()}", flush=True)
    failures: list[str] = []
    stop = threading.Event()
    watcher = progress_reporter(shards, len(gradable), stop, quiet)
    threads = [threading.Thread(target=lambda p=p: failures.extend(grade_shard(p, chapters))) for p in shards]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    watcher.join()
    for path in shards:
        merge_shard(course, path)
    report = collect_results(course, [s for s in subs if s.chapter in chapters], failures)
    report.seconds = time.perf_counter() - start
    report.setup_seconds = set_up
    write_outputs(course, report, chapters)
    return report


def write_outputs(course: Path, report: Report, chapters: list[str]) -> None:
    rows = report.rows
    with open(course / "grades-detail.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["student"])
        writer.writeheader()
        writer.writerows(rows)
    students = sorted({r["student"] for r in rows})
    with open(course / "grades.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["student", *chapters, "total"])
        for student in students:
            mine = {r["assignment"]: r for r in rows if r["student"] == student}
            cells = [mine[ch]["score"] if ch in mine else "" for ch in chapters]
            writer.writerow([student, *cells, sum(float(c) for c in cells if c != "")])
    graded = [r for r in rows if r["score"] != ""]
    times = sorted(float(r["seconds"]) for r in graded if r["seconds"])
    summary = {
        "graded": len(graded),
        "not_graded": [{"student": r["student"], "chapter": r["assignment"], "reason": r["problem"]}
                       for r in rows if r["score"] == ""],
        "flagged": [{"student": r["student"], "chapter": r["assignment"], "reason": r["flags"] or r["review"],
                     "runtime_fault": bool(r["flags"])} for r in rows if r["flags"] or r["review"]],
        "feedback_missing": [{"student": r["student"], "chapter": r["assignment"]} for r in graded
                             if r["feedback"] == "MISSING"],
        "seconds_total": round(report.seconds, 1),
        "seconds_per_submission": {"mean": round(sum(times) / len(times), 1) if times else None,
                                   "max": times[-1] if times else None},
        "sandbox": report.sandbox,
    }
    (course / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    lines = [f"graded: {summary['graded']} submissions in {summary['seconds_total']} s "
             f"(per submission: mean {summary['seconds_per_submission']['mean']} s, max "
             f"{summary['seconds_per_submission']['max']} s)", f"sandbox: {report.sandbox}"]
    lines += [f"NOT GRADED {x['student']} {x['chapter']}: {x['reason']}" for x in summary["not_graded"]]
    lines += [f"FLAGGED {x['student']} {x['chapter']} "
              f"({'a run-time fault' if x['runtime_fault'] else 'review note'}): {x['reason']}"
              for x in summary["flagged"]]
    lines += [f"FEEDBACK MISSING {x['student']} {x['chapter']}" for x in summary["feedback_missing"]]
    (course / "summary.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.grade", description=__doc__.split("\n")[0])
    parser.add_argument("--course", type=Path, required=True, help="course folder (created; outside the repo)")
    parser.add_argument("--submissions", type=Path, help="drop folder: <student>/ or <student>.zip")
    parser.add_argument("--assignment", action="append", help="chapters to grade (default: those submitted)")
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("JOBS", "1") or 1))
    parser.add_argument("--shard", help="K/N: grade only the K-th of N shards of the students (1-based)")
    parser.add_argument("--merge", type=Path, nargs="+", help="graded shard course folders to merge into --course")
    parser.add_argument("--cell-timeout", type=int, default=120)
    args = parser.parse_args(argv)
    if args.merge:
        total = sum(merge_shard(args.course.resolve(), p.resolve()) for p in args.merge)
        print(f"merged {total} submissions into {args.course / 'gradebook.db'}")
        return 0
    if args.submissions is None or not args.submissions.is_dir():
        print(f"no submissions folder {args.submissions}: put one folder or zip per student there "
              "(e.g. SUBMISSIONS/alice/04_masking.ipynb) and run again.")
        return 2
    shard = tuple(int(x) for x in args.shard.split("/")) if args.shard else None
    report = grade(args.course, args.submissions, args.assignment, args.jobs, cell_timeout=args.cell_timeout,
                   shard=shard)
    by_hand = {ch: manual_points(ch) for ch in {r["assignment"] for r in report.rows}}
    for row in report.rows:
        mark = f"{row['score']}/{row['max_score']}" if row["score"] != "" else f"NOT GRADED: {row['problem']}"
        if row["score"] != "" and by_hand[row["assignment"]]:
            mark += f" ({by_hand[row['assignment']]:g} of them graded by hand: see mark_schemes.md)"
        flag = f"  FLAGGED: {row['flags']}" if row["flags"] else ""
        print(f"{row['student']:24s} {row['assignment']:16s} {mark}{flag}")
    print((args.course / "summary.txt").read_text(encoding="utf-8"), end="")
    print(f"grades: {args.course.resolve() / 'grades.csv'}; feedback: {args.course.resolve() / 'feedback'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
