"""`make student-kit`: no solution text in the kit; stubs say what to do; a student who completes a chapter and
runs its export cell gets their own code in their kit's package (and nowhere else)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
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
    for rel in ["Makefile", "README.md", "pyproject.toml", "environment.yml", "data-requirements.txt", ".minibert-kit",
                f"notebooks/{CHAPTER}.ipynb", "src/minibert/__init__.py", "src/minibert/tokenization.py",
                "src/minibert_course/export.py"]:
        assert (kit / rel).exists(), rel
    released = (ROOT / "notebooks" / f"{CHAPTER}.ipynb").read_bytes()
    assert (kit / "notebooks" / f"{CHAPTER}.ipynb").read_bytes() == released


def test_kit_holds_no_solution_text(kit):
    secrets = secret_lines(*(nbformat.read(p, as_version=4) for p in SOLUTIONS))
    # a line that the published course tooling itself contains (`if os.environ.get("NBGRADER_EXECUTION"):` in a
    # hidden test and in export.py) is no secret; the tooling is in the kit on purpose
    tooling = "\n".join(p.read_text(encoding="utf-8") for p in (kit / "src" / "minibert_course").glob("*.py"))
    secrets = {s for s in secrets if s not in tooling}
    assert len(secrets) > 100
    files = [p for p in kit.rglob("*") if p.is_file() and p.suffix in {".py", ".ipynb", ".md", ".txt", ".toml", ""}]
    assert len(files) > 8
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        leaked = sorted(s for s in secrets if s in text)
        assert not leaked, f"{path.relative_to(kit)} leaks {leaked[:3]}"
        if "minibert_course" not in path.parts:  # the tooling names the markers in its docs; course files must not
            assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text, path


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
                   "python -m minibert.pretrain"):
        assert needed in text, f"the kit README should say {needed!r}"
    chapters = sorted(p.name for p in (kit / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    positions = [text.find(f"`{name}`") for name in chapters]
    assert -1 not in positions and positions == sorted(positions), "every chapter, in order"
