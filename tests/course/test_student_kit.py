"""`make student-kit`: no solution text in the kit; stubs say what to do; a student who completes a chapter and
runs its export cell gets their own code in their kit's package (and nowhere else)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from conftest import ROOT, SOLUTIONS, filled_submission
from test_notebooks import execute

from minibert_course.nbgrader_ext import secret_lines

pytestmark = pytest.mark.slow
CHAPTER = "01_wordpiece"
# the kit's targets beyond `make lab` and `make test` that the chapters name, and the module each one runs
STUDY_TARGETS = {"pretrain": "minibert.pretrain", "finetune-compare": "minibert.finetune",
                 "finetune-compare-minilm": "minibert.finetune", "finetune-quick-qa": "minibert.finetune",
                 "bench": "minibert.bench", "gpu-check": "minibert_course.gpu_check",
                 "masking-rates": "minibert.variants"}


def package_digest() -> str:
    files = sorted((ROOT / "src" / "minibert").glob("*.py"))
    return hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()


@pytest.fixture(scope="module")
def kit(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kit") / "student-kit"
    stamp = tmp_path_factory.mktemp("stamp") / "installed"
    stamp.touch()  # this venv is set up already: `-o` keeps make from re-running the install recipe
    run = subprocess.run(["make", "-s", "-o", str(stamp), "student-kit", f"KIT={folder}",
                          f"BIN={Path(sys.executable).parent}", f"STAMP={stamp}"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    return folder


def kit_python(kit, code: str) -> subprocess.CompletedProcess:
    """Run code against the kit's package (not the reference package installed in this venv)."""
    return subprocess.run([sys.executable, "-c", code], cwd=kit, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(kit / "src"), "PATH": str(ROOT)})


def test_kit_holds_none_of_the_graders_modules(kit):
    tooling = {p.name for p in (kit / "src" / "minibert_course").glob("*.py")}
    assert "export.py" in tooling and not tooling & {"sealed.py", "judge.py", "nbgrader_ext.py", "release.py"}


def test_kit_layout(kit):
    for rel in ["Makefile", "README.md", "pyproject.toml", "constraints.txt", "environment.yml",
                "data-requirements.txt", ".minibert-kit",
                f"notebooks/{CHAPTER}.ipynb", "src/minibert/__init__.py", "src/minibert/tokenization.py",
                "src/minibert_course/export.py", "docs/lecture_coverage.md"]:
        assert (kit / rel).exists(), rel
    released = (ROOT / "notebooks" / f"{CHAPTER}.ipynb").read_bytes()
    assert (kit / "notebooks" / f"{CHAPTER}.ipynb").read_bytes() == released
    coverage = (ROOT / "docs" / "lecture_coverage.md").read_bytes()
    assert (kit / "docs" / "lecture_coverage.md").read_bytes() == coverage, "chapter 10's review names this table"


def test_kit_lecture_coverage_names_only_what_the_release_notebooks_show(kit):
    """docs/lecture_coverage.md names cells (`NN `id``) and graded cells (`NN `grade-id` (auto, P pt)`): every one
    is a cell of the student's own notebook, with the points its nbgrader metadata shows, so the table tells the
    student nothing the notebooks do not (no hidden test, no expected value: test_kit_holds_no_solution_text reads it
    for the solutions' lines)."""
    shown, points = {}, {}
    for path in sorted((kit / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            meta = cell.metadata.get("nbgrader", {})
            shown.setdefault(path.name[:2], set()).update({cell.get("id"), meta.get("grade_id")})
            if "grade_id" in meta:
                points[path.name[:2], meta["grade_id"]] = meta.get("points")
    text = (kit / "docs" / "lecture_coverage.md").read_text(encoding="utf-8")
    named = re.findall(r"\b(\d\d) `([^`]+)`(?: \((?:auto|manual), (\d+) pt)?", text)
    assert len(named) > 100 and len(named) == len(re.findall(r"\b\d\d `", text))
    for chapter, cell, pts in named:
        assert cell in shown.get(chapter, ()), f"chapter {chapter} of the kit has no cell {cell}"
        if pts:
            assert points[chapter, cell] == int(pts), (chapter, cell, pts)


def test_kit_holds_no_solution_text(kit):
    secrets = secret_lines(*(nbformat.read(p, as_version=4) for p in SOLUTIONS))
    # a line that the published course tooling itself contains (`if os.environ.get("NBGRADER_EXECUTION"):` in a
    # hidden test and in export.py) is no secret; the tooling is in the kit on purpose
    tooling = "\n".join(p.read_text(encoding="utf-8") for p in (kit / "src" / "minibert_course").glob("*.py"))
    secrets = {s for s in secrets if s not in tooling}
    assert len(secrets) > 100
    files = [p for p in kit.rglob("*") if p.is_file() and p.suffix in {".py", ".ipynb", ".md", ".txt", ".toml", ""}
             and p.parent != kit / "tests"]
    assert len(files) > 8
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        leaked = sorted(s for s in secrets if s in text)
        assert not leaked, f"{path.relative_to(kit)} leaks {leaked[:3]}"
        if "minibert_course" not in path.parts:  # the tooling names the markers in its docs; course files must not
            text = text.replace("`mark_schemes.md`", "")  # docs/lecture_coverage.md names what `make grade` writes
            assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text and "mark_scheme" not in text, path


def solution_blocks(notebooks) -> set[tuple[str, str]]:
    """Pairs of consecutive lines (stripped, blank lines and comments skipped) of the solution regions."""
    pairs = set()
    for nb in notebooks:
        for cell in nb.cells:
            inside, lines = False, []
            for line in cell.source.split("\n"):
                text = line.strip()
                if "BEGIN SOLUTION" in text or "END SOLUTION" in text:
                    inside = "BEGIN" in text
                    pairs |= set(zip(lines, lines[1:], strict=False))
                    lines = []
                elif inside and text and not text.startswith("#"):
                    lines.append(text)
    return {p for p in pairs if min(len(p[0]), len(p[1])) >= 12}


def test_kit_package_tests_hold_no_solution_code(kit):
    """The package tests are published on purpose (`make test` runs them on the student's code): they specify what
    the code must do, as the task text does. They must not contain the solutions: no two consecutive lines of any
    solution region. (Single lines may coincide: `torch.manual_seed(5)`, or `with torch.device("meta"):`, which the
    chapter 03 task text itself prescribes.)"""
    pairs = solution_blocks([nbformat.read(p, as_version=4) for p in SOLUTIONS])
    assert len(pairs) > 100
    files = sorted((kit / "tests").glob("*.py"))
    assert len(files) >= 10
    for path in files:
        lines = [t for t in (line.strip() for line in path.read_text(encoding="utf-8").split("\n"))
                 if t and not t.startswith("#")]
        leaked = sorted(set(zip(lines, lines[1:], strict=False)) & pairs)
        assert not leaked, f"tests/{path.name} holds solution code: {leaked[:2]}"
        assert "BEGIN SOLUTION" not in path.read_text(encoding="utf-8"), path


def test_stub_says_which_function_and_chapter(kit):
    run = kit_python(kit, "import minibert; minibert.WordPieceTokenizer(['[UNK]', 'a']).tokenize('a')")
    assert run.returncode != 0
    assert ("NotImplementedError: minibert.tokenization.WordPieceTokenizer.tokenize_word -- complete chapter 01 "
            "and run its export cell") in run.stderr
    assert "kit" in kit_python(kit, "import minibert; print(minibert.__file__)").stdout


def test_student_export_fills_the_kit_package_only(kit):
    before = package_digest()
    answered = filled_submission(ROOT / "notebooks" / f"{CHAPTER}.ipynb", ROOT / "solutions" / f"{CHAPTER}.ipynb")
    path = kit / "notebooks" / f"{CHAPTER}.ipynb"
    nbformat.write(answered, path)
    nb, _ = execute(path, path.parent, {})
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, errors[0]
    ours = (kit / "src" / "minibert" / "tokenization.py").read_text(encoding="utf-8")
    assert ours == (ROOT / "src" / "minibert" / "tokenization.py").read_text(encoding="utf-8")
    assert package_digest() == before, "a student's export must never write the reference package"
    run = kit_python(kit, "import minibert; print(minibert.WordPieceTokenizer(['[UNK]', 'un', '##want', '##ed'])"
                          ".tokenize('unwanted'))")
    assert run.stdout.strip() == "['un', '##want', '##ed']", run.stderr


def test_kit_lab_adds_allow_root_only_for_root(kit):
    """Jupyter refuses to start as root without --allow-root (containers, cloud notebooks, CI): the kit's `make lab`
    adds it when, and only when, it runs as root."""
    run = subprocess.run(["make", "-n", "-o", ".venv/.installed", "lab"], cwd=kit, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    command = next(line for line in run.stdout.splitlines() if "jupyter lab" in line)
    assert ("--allow-root" in command) == (os.geteuid() == 0), command
    assert "-m minibert_course.labconfig" in run.stdout, "the kit's lab must turn the instructor's tools off"
    assert (kit / "src" / "minibert_course" / "labconfig.py").exists()
    # the Check button ships prebuilt (no node in a student's set-up), with its server side
    built = kit / "src" / "minibert_course" / "labextension" / "minibert-check"
    load = json.loads((built / "package.json").read_text())["jupyterlab"]["_build"]["load"]
    assert (built / load).is_file() and (kit / "src" / "minibert_course" / "lab_check.py").exists()


def load_kit_builder():
    spec = importlib.util.spec_from_file_location("student_kit", ROOT / "autograder" / "student_kit.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rebuilding_a_kit_never_deletes_student_work(tmp_path):
    builder = load_kit_builder()
    kit = builder.build_kit(tmp_path / "kit")
    notes = kit / "my-notes.txt"
    notes.write_text("a student's own file\n", encoding="utf-8")
    chapter = kit / "notebooks" / f"{CHAPTER}.ipynb"
    chapter.write_text(chapter.read_text(encoding="utf-8").replace("NotImplementedError", "my answer"), "utf-8")
    answered = chapter.read_bytes()
    with pytest.raises(SystemExit) as refused:
        builder.build_kit(kit)
    assert "--force" in str(refused.value) and "nothing was changed" in str(refused.value)
    assert notes.exists() and chapter.read_bytes() == answered, "a refused rebuild must leave the kit as it was"
    builder.build_kit(kit, force=True)
    old = tmp_path / "kit.old-1"
    assert (old / "my-notes.txt").read_text(encoding="utf-8") == "a student's own file\n"
    assert (old / "notebooks" / f"{CHAPTER}.ipynb").read_bytes() == answered, "--force must move the work aside"
    assert not notes.exists() and (kit / "notebooks" / f"{CHAPTER}.ipynb").read_bytes() != answered
    builder.build_kit(kit, force=True)
    assert (tmp_path / "kit.old-2").is_dir() and (tmp_path / "kit.old-1" / "my-notes.txt").exists()


def test_kit_readme_tells_the_student_what_to_do(kit):
    text = (kit / "README.md").read_text(encoding="utf-8")
    for needed in ("Python >= 3.10", "make lab", "--allow-root", "Kernel > Restart", "Validate",
                   "nbgrader validate notebooks/01_wordpiece.ipynb", "## Submit", "import minibert",
                   "python -m minibert.pretrain", "make test", "certificate", "not yet exported",
                   "`docs/lecture_coverage.md`", 'ARGS="', *(f"make {t} " for t in STUDY_TARGETS)):
        assert needed in text, f"the kit README should say {needed!r}"
    chapters = sorted(p.name for p in (kit / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    positions = [text.find(f"`{name}`") for name in chapters]
    assert -1 not in positions and positions == sorted(positions), "every chapter, in order"


# ---- `make test` in the kit: the package tests on the student's own package, then the certificate -------------------
def export_into(kit: Path, plan: dict[str, str | None]) -> None:
    """Write the kit's package as a student who exported the chapters of `plan` would have it: each chapter answered
    with the solutions, or with the named mutant of the mutation catalogue; the other chapters keep their stubs."""
    from autograder import mutation
    from minibert_course.export import build_package

    answered = kit / "answered"
    answered.mkdir()
    notebooks = []
    for nb in sorted((kit / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        if nb.stem in plan:
            wrong = next((m for m in mutation.load_catalogue(nb.stem) if m.name == plan[nb.stem]), None)
            assert (wrong is None) == (plan[nb.stem] is None), f"no mutant {plan[nb.stem]} in {nb.stem}"
            nbformat.write(mutation.submission(nb.stem, wrong), answered / nb.name)
            nb = answered / nb.name
        notebooks.append(nb)
    for name, text in build_package(notebooks).items():
        (kit / "src" / "minibert" / name).write_text(text, encoding="utf-8")


def test_kit_make_test_runs_the_certifier(kit):
    run = subprocess.run(["make", "-n", "-o", ".venv/.installed", "test"], cwd=kit, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    assert "-m minibert_course.certify" in run.stdout
    tests = {p.name for p in (kit / "tests").glob("*.py")}
    from minibert_course.certify import PACKAGE_TESTS

    assert tests == {"conftest.py", "helpers.py", *PACKAGE_TESTS}, "the package tests, and only them"
    assert "test_squad_official.py" not in tests, "the official SQuAD functions are chapter 08's answer"
    for name in PACKAGE_TESTS:  # the repo's own tests, unchanged
        assert (kit / "tests" / name).read_bytes() == (ROOT / "tests" / name).read_bytes()


def test_kit_has_every_target_the_chapters_name(kit):
    """A chapter that says `make X`, X a target of the repository's Makefile, is obeyed in the kit too (prose such
    as "make sense" is no target)."""
    def targets(makefile: Path) -> set[str]:
        return set(re.findall(r"^([a-z][a-z-]*):", makefile.read_text(encoding="utf-8"), re.M))

    ours, named = targets(ROOT / "Makefile"), set()
    for path in sorted((kit / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            named |= set(re.findall(r"\bmake ([a-z][a-z-]*)", cell.source)) & ours
    assert {"test", "pretrain", "finetune-compare", "gpu-check", "masking-rates"} <= named, named
    assert named <= targets(kit / "Makefile"), f"the kit's Makefile lacks {sorted(named - targets(kit / 'Makefile'))}"
    assert {"lab", "test", *STUDY_TARGETS} <= targets(kit / "Makefile")


@pytest.mark.parametrize("target, module", list(STUDY_TARGETS.items()))
def test_kit_runs_the_courses_recipes(kit, target, module):
    """Chapter 06's fill-mask cell reads runs/tiny/checkpoint (`make pretrain`), chapter 08's comparison cell
    runs/finetune (`make finetune-compare`), chapter 09 names `make bench` and `make gpu-check`, chapter 10 `make
    masking-rates`: the kit's targets run the student's package with the repository's recipes (a dry run here:
    masking-rates takes 25 minutes), and the run folder is not committed with the student's work. ARGS adds flags
    from the command line, never from the shell."""
    recipes = []
    for folder in (kit, ROOT):
        run = subprocess.run(["make", "-n", "-o", ".venv/.installed", target], cwd=folder, capture_output=True,
                             text=True, timeout=60, env={**os.environ, "ARGS": "--from-the-shell"})
        assert run.returncode == 0, run.stderr
        lines = run.stdout.replace("\\\n", " ").splitlines()  # a recipe may continue over lines
        recipes.append([line.split() for line in lines if f"-m {module} " in line + " "])
    assert len(recipes[0]) == 1, recipes[0]
    assert recipes[0][0][0] == ".venv/bin/python", recipes[0]
    assert recipes[0] == recipes[1], f"the kit's make {target} runs the same command as the repository's"
    run = subprocess.run(["make", "-n", "-o", ".venv/.installed", target, "ARGS=--seed 3"], cwd=kit,
                         capture_output=True, text=True, timeout=60)
    assert [line.split() for line in run.stdout.replace("\\\n", " ").splitlines() if f"-m {module} " in line + " "] == [
        recipes[1][0] + ["--seed", "3"]], run.stdout + run.stderr
    assert "runs/" in (kit / ".gitignore").read_text(encoding="utf-8").split()


def test_kit_make_bench_runs_the_students_package(tmp_path):
    """`make bench` for real, shortened by ARGS to one timed step: in a fresh kit it stops at the first stub, which
    names the chapter to complete; once every chapter is exported (here: the reference package, which is what the
    solutions export) it measures the student's minibert against transformers."""
    kit = load_kit_builder().build_kit(tmp_path / "kit")
    command = ["make", "-s", "-o", ".venv/.installed", "bench", f"BIN={Path(sys.executable).parent}",
               "ARGS=--rounds 1 --steps-per-round 1 --warmup 0"]
    env = {**os.environ, "PYTHONPATH": str(kit / "src"), "HF_HUB_OFFLINE": "1"}
    run = subprocess.run(command, cwd=kit, capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode != 0 and "NotImplementedError: minibert." in run.stderr, run.stdout + run.stderr[-3000:]
    assert "complete chapter" in run.stderr and str(kit / "src" / "minibert") in run.stderr, run.stderr[-3000:]
    for module in (ROOT / "src" / "minibert").glob("*.py"):
        shutil.copy2(module, kit / "src" / "minibert" / module.name)
    run = subprocess.run(command, cwd=kit, capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert "same loss to" in run.stdout and "minibert / transformers:" in run.stdout, run.stdout


def test_kit_certificate_table_for_a_student_halfway(tmp_path):
    """Chapters 01-03 right, chapter 04 wrong (labels only at [MASK]), 05-06 not exported: the table says so, the
    tests of chapter 03 that need chapter 06's classes wait for it instead of failing, and the exit status is 1."""
    kit = load_kit_builder().build_kit(tmp_path / "kit")
    export_into(kit, {"01_wordpiece": None, "02_embeddings": None, "03_attention": None,
                      "04_masking": "labels-only-at-mask"})
    run = subprocess.run([sys.executable, "-m", "minibert_course.certify"], cwd=kit, capture_output=True, text=True,
                         timeout=900, env={**os.environ, "PYTHONPATH": str(kit / "src")})
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    assert f"your minibert: {kit / 'src' / 'minibert'}" in run.stdout
    from minibert_course.certify import CHAPTERS

    rows = run.stdout.split("\nchapter ", 1)[1].splitlines()[1:1 + len(CHAPTERS)]
    table = {line[:2]: line for line in rows}
    assert list(table) == ["01", "02", "03", "04", "05", "06", "07", "08", "09", "10"], run.stdout[-2000:]
    assert " pass " in table["01"] and "ok: same pieces as transformers" in table["01"]
    assert " pass " in table["02"] and "failed" not in table["02"]
    assert " pass " in table["03"] and "wait for 06" in table["03"] and "failed" not in table["03"], table["03"]
    diff = float(table["03"].split("max diff ")[1].split()[0])
    assert "ok: MiniLM" in table["03"] and diff < 1e-4
    assert " FAIL " in table["04"] and " failed" in table["04"] and "FAILED: quiz" in table["04"]
    assert all("not yet exported" in table[ch] for ch in ("05", "06", "07", "08", "09", "10"))
    assert "failing: chapter 04" in run.stdout and "not yet exported: chapter 05, 06, 07, 08, 09, 10" in run.stdout
    assert "CERTIFIED" not in run.stdout
    report = json.loads((kit / "build" / "certificate.json").read_text(encoding="utf-8"))
    statuses = ["pass", "pass", "pass", "FAIL"] + ["not yet exported"] * (len(CHAPTERS) - 4)
    assert [r["status"] for r in report] == statuses
    assert report[2]["waiting"]["06"] > 0 and report[3]["failed"]


def test_fresh_kit_is_not_a_failure(kit, tmp_path):
    fresh = load_kit_builder().build_kit(tmp_path / "fresh")
    run = subprocess.run([sys.executable, "-m", "minibert_course.certify"], cwd=fresh, capture_output=True,
                         text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(fresh / "src")})
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.count("not yet exported") >= 7
    assert "not yet exported: chapter 01, 02, 03, 04, 05, 06, 07" in run.stdout


def test_the_kits_chapters_do_not_depend_on_the_students_notebooks(kit):
    """The kit's notebooks are the student's work: renamed, duplicated, edited above the title, joined by notebooks
    of their own. The chapter list (and so what `make test` runs and certifies) is the one frozen when the kit was
    built, whatever the notebooks folder holds."""
    code = ("from minibert_course.certify import CHAPTERS, PACKAGE_TESTS\n"
            "print([c.stem for c in CHAPTERS], len(PACKAGE_TESTS))")
    before = kit_python(kit, code)
    assert before.returncode == 0, before.stderr
    assert (kit / "src" / "minibert_course" / "chapters.json").is_file()
    notebooks = kit / "notebooks"
    moved = notebooks / "08_finetuning.ipynb"
    mine = notebooks / "finetuning_mine.ipynb"
    extra = notebooks / "11_my_project.ipynb"
    head = notebooks / "05_data.ipynb"
    saved = head.read_bytes()
    try:
        moved.rename(mine)
        extra.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}', encoding="utf-8")
        nb = json.loads(saved)
        nb["cells"].insert(0, {"cell_type": "markdown", "id": "my-notes", "metadata": {}, "source": ["my notes"]})
        head.write_text(json.dumps(nb), encoding="utf-8")
        after = kit_python(kit, code)
    finally:
        mine.rename(moved)
        extra.unlink(missing_ok=True)
        head.write_bytes(saved)
    assert after.returncode == 0 and after.stdout == before.stdout, after.stdout + after.stderr
    assert "08_finetuning" in before.stdout and "11_my_project" not in before.stdout
