"""The course map: chapter order, what each chapter builds, its points and its measured run time.

One source for two documents: the README's chapter table and notebook 00 (`notebooks/00_course_map.ipynb`, written
by `make release` with the other notebooks, checked by `make check-sync`). The chapters, their titles, modules and
points come from the notebooks (`minibert_course.chapters`); run times are measured (`python -m
minibert_course.course_map --measure` runs every solution notebook top to bottom, as tests/course/test_notebooks.py
does, and writes course_times.json).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

from minibert_course.chapters import Chapter, chapter, chapters

ROOT = Path(__file__).resolve().parents[2]
TIMES = Path(__file__).with_name("course_times.json")
MAP_NOTEBOOK = "00_course_map.ipynb"


CHAPTERS = chapters()  # read from the notebooks (minibert_course.chapters)


def builds(c: Chapter) -> str:
    """The modules a chapter builds, as the README names them: `minibert.first`, `second`, ..."""
    return ", ".join(f"`minibert.{m}`" if i == 0 else f"`{m}`" for i, m in enumerate(c.modules))


def needs(c: Chapter) -> str:
    return ", ".join(c.needs) or "-"


def points(stem: str, root: Path = ROOT) -> tuple[float, float, int]:
    """(autograded points, manually graded points, exercises) of a chapter, from its notebook's nbgrader metadata."""
    c = chapter(stem, root)
    return c.auto_points, c.manual_points, c.exercises


def measured() -> dict:
    return json.loads(TIMES.read_text(encoding="utf-8")) if TIMES.exists() else {"seconds": {}}


def _minutes(seconds: float | None) -> str:
    if seconds is None:
        return "not measured"
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def readme_table() -> str:
    """The README's chapter table."""
    times = measured()["seconds"]
    lines = ["| # | notebook | builds | points (auto + by hand) | runs in |", "|---|---|---|---|---|",
             f"| 00 | `{MAP_NOTEBOOK}`: the course map (this table, how grading works, your package) | | | |"]
    for c in CHAPTERS:
        auto, manual, _ = points(c.stem)
        lines.append(f"| {c.number} | `{c.stem}.ipynb`: {c.title} | {builds(c)} | {auto:g}"
                     + (f" + {manual:g}" if manual else "") + f" | {_minutes(times.get(c.stem))} |")
    return "\n".join(lines) + "\n"


INTRO = """# 00 · The course map

This course builds BERT from its parts, one chapter at a time, into a Python package, `minibert`, that is yours at
the end: a tokenizer, the encoder, the pretraining objectives and loop, task heads, fine-tuning on real data, the
tools to pretrain at Base size on a GPU, and what came after BERT. Each chapter is a notebook; each notebook ends by
writing your code into your package, so that later chapters, and anyone who imports `minibert`, run on it.

Work through the chapters **in order**: each one builds on earlier ones (the table's *builds on* column) and imports
their modules. `make lab`, in the folder of the student kit, opens JupyterLab on its `notebooks/`.

`docs/lecture_coverage.md` lists every item of the lecture this course is built on (its sections, check questions,
common misconceptions, self-check list and figures) with the cells that teach it and the tests that grade it, or
says that nothing grades it."""

ORDER = """## The chapters

| # | notebook | what you build | builds on | exercises | points: autograded + by hand | runs in (2 CPU cores) |
|---|---|---|---|---|---|---|
{rows}

"Runs in" is the time the finished notebook takes to run top to bottom on 2 CPU cores without a GPU,
measured {when}; it is the one run time the course gives for each chapter. Your first pass, reading and writing the
exercises, takes much longer. Chapter 09's GPU runs and
the longer studies (`make pretrain`, `make finetune-compare`, `make masking-rates`) are separate commands, each named
in its chapter with its time."""

GRADING = """## How grading works

- **Exercises** are cells marked *YOUR CODE HERE*: replace `raise NotImplementedError()` with your code. Some are
  written answers in a markdown cell (*YOUR ANSWER HERE*), marked by hand.
- **Visible tests** follow each exercise: run them as often as you like. An assert that fails says what is wrong
  (expected vs got, and for which input). One exception: chapter 10's review of the lecture (its true/false
  statements, its quiz and the BERT / RoBERTa / ELECTRA table) has visible tests that check only the **form** of
  your answers (the keys, a letter, a number), not whether they are right, since any check of the answers would give
  them away. Those points are decided by the hidden tests alone, and the written answers by hand.
- **Hidden tests** are added when your instructor grades: they try more cases and the mistakes students make (each
  graded exercise has a catalogue of plausible wrong answers that must lose points). Passing the visible tests is
  necessary, not sufficient.
- **Validate** before you hand in: the *Validate* button of the notebook toolbar, or
  `.venv/bin/nbgrader validate notebooks/01_wordpiece.ipynb`. It runs the whole notebook and lists failing tests.
- **Submit** the saved notebooks as your instructor asks. The grader runs your answer cells (and code cells you add)
  with the course's own given cells and tests, in a plain Python interpreter, in a sandbox: `!` commands and most
  magics are not run there (the code under `%time`, `%timeit`, `%prun`, `%%time`, `%%timeit`, `%%prun` and
  `%%capture` still runs), and edits to given or test cells are not used. Each chapter is graded on its own, with
  the reference code of the earlier chapters: a mistake in chapter 02 costs no points in chapter 05. Written answers
  are marked by hand with a mark scheme; until then they count 0.
- **Feedback** shows your points per test; it does not show the hidden tests."""

PACKAGE = """## Your package, at the end

Each chapter's last cell exports your code to `src/minibert/`. Until a chapter is exported, its functions raise
`NotImplementedError` naming the chapter to complete. After exporting, restart the kernels of other open notebooks
(Kernel > Restart): a running kernel keeps the code it imported. After chapter 10, everything below runs on your
code:

```python
import minibert
from minibert import BertConfig, BertForPreTraining, BertTokenizer

config = BertConfig.tiny(vocab_size=30522)
model = BertForPreTraining(config)        # state-dict keys as in transformers: checkpoints move both ways
```

From a terminal in the folder of the student kit: `make test` runs the package tests on your own `src/minibert`,
chapter by chapter, and ends with a certificate (pass / FAIL / not yet exported per chapter; in a clone of the course
repository, `make test` is the instructor's whole test suite); `make pretrain` pretrains a tiny
BERT with your loop; `.venv/bin/python -m minibert.finetune --help` fine-tunes it. Elsewhere,
`pip install -e path/to/the/course` makes `import minibert` work in any environment.

The cell below shows which chapters your package has so far."""

KOREAN = """## 핵심 정리 (Korean summary)

- 이 course는 BERT를 부품별로 한 chapter씩 만들어 Python package `minibert`로 완성한다: tokenizer, encoder,
  pretraining objective와 loop, task head, 실제 데이터의 fine-tuning, GPU에서 Base 크기로 pretraining하는 도구,
  BERT 이후의 모델. 각 chapter의 마지막 cell이 여러분의 코드를 package에 써 넣으므로, 뒤의 chapter와 나중에
  `minibert`를 import하는 사람은 모두 여러분의 코드로 실행된다. chapter는 **순서대로** 진행한다: 각 chapter는 앞
  chapter(표의 *builds on*)의 module을 import한다. Student kit folder에서 `make lab`을 실행하면 `notebooks/`의
  JupyterLab이 열린다.
- 위 표의 "runs in"은 완성된 notebook을 CPU core 2개에서 처음부터 끝까지 실행하는 데 걸린 측정 시간이며, course가
  chapter마다 제시하는 유일한 실행 시간이다(GPU 없이; 측정한 날짜와 기계는 표 아래 영어 설명에 있다). 처음 읽고
  exercise를 풀 때는 훨씬 오래 걸린다. 더 긴 실행(`make pretrain`, `make finetune-compare`,
  `make masking-rates`, chapter 09의 GPU check)은 별도 명령이고 각 chapter가 시간을 밝힌다.
- 채점: *YOUR CODE HERE* cell의 `raise NotImplementedError()`를 코드로 바꾼다. 서술형 답(*YOUR ANSWER HERE*)은
  mark scheme에 따라 사람이 채점하며 그 전까지는 0점이다. 각 exercise 뒤의 visible test는 언제든 실행할 수 있고,
  실패하면 무엇이 틀렸는지(기댓값과 실제 값, 입력) 알려 준다. 예외로 chapter 10의 lecture 복습(참/거짓, quiz,
  BERT · RoBERTa · ELECTRA 표)의 visible test는 답의 **형식**(key, 글자, 숫자)만 확인하고 정답 여부는 확인하지 않는다.
  정답을 확인하면 답이 드러나기 때문이다. 그 점수는 hidden test만으로, 서술형 답은 사람이 정한다.
- Hidden test는 강사가 채점할 때 추가되며 더 많은 경우와 흔한 실수를 시험한다(채점되는 exercise마다 점수를 잃어야
  하는 그럴듯한 오답 목록이 있다). visible test 통과는 필요조건이지 충분조건이 아니다. 제출 전에 *Validate* 버튼이나
  `.venv/bin/nbgrader validate notebooks/01_wordpiece.ipynb`로 확인한다: notebook 전체를 실행하고 실패한 test를
  보여 준다. 저장한 notebook을 강사가 안내하는 방법으로 제출한다.
- Grader는 여러분의 answer cell(과 직접 추가한 code cell)을 course의 given cell, test와 함께 sandbox 안의 일반
  Python interpreter에서 실행한다. `!` 명령과 대부분의 magic은 실행되지 않고(`%time`, `%timeit`, `%prun`,
  `%%time`, `%%timeit`, `%%prun`, `%%capture` 아래의 코드는 실행된다), given cell이나 test cell을 고친 내용은 쓰이지
  않는다. 각 chapter는 이전 chapter의 reference 코드로 따로 채점하므로 chapter 02의 실수가 chapter 05의 점수를 깎지
  않는다. Feedback은 test별 점수를 보여 주고 hidden test는 보여 주지 않는다.
- chapter를 export하기 전에는 그 함수가 완성할 chapter를 밝히는 `NotImplementedError`를 낸다. Export한 뒤에는 열려
  있는 다른 notebook의 kernel을 다시 시작한다(Kernel > Restart): 실행 중인 kernel은 이미 import한 코드를 쓴다.
  Student kit folder의 terminal에서 `make test`는 여러분의 `src/minibert`로 package test를 실행하고 chapter별
  결과(pass / FAIL / not yet exported)를 certificate로 보여 준다(course repository를 clone한 경우 `make test`는
  강사용 전체 test suite다). `make pretrain`은 여러분의 loop로 tiny BERT를 pretraining하고,
  `.venv/bin/python -m minibert.finetune --help`가 fine-tuning 방법을 보여 주며, 다른 환경에서는
  `pip install -e path/to/the/course`로 `import minibert`를 쓸 수 있다. 아래 cell은 지금까지 export한 chapter를
  보여 준다.
- `docs/lecture_coverage.md`는 강의의 모든 항목(section, 확인 문제, 흔한 오해, self-check, 수치)이 어느 cell에서
  가르쳐지고 어느 test가 채점하는지, 또는 채점되지 않는지를 보여 준다."""

STATUS = """from minibert_course.certify import CHAPTERS, package_folder, unexported

package = package_folder()
missing = unexported(package)
print(f"your minibert: {package}")
for chapter in CHAPTERS:
    state = "not yet exported" if chapter.number in missing else "exported"
    print(f"  {chapter.number} {chapter.name:<17} {', '.join(chapter.modules):<45} {state}")"""


def notebook(root: Path = ROOT) -> dict:
    """Notebook 00, as nbformat JSON (deterministic: fixed cell ids, no outputs)."""
    info = measured()
    rows = []
    for c in CHAPTERS:
        auto, manual, exercises = points(c.stem, root)
        rows.append(f"| {c.number} | `{c.stem}.ipynb`: {c.title} | {builds(c)} | {needs(c)} | {exercises} | {auto:g}"
                    + (f" + {manual:g}" if manual else "") + f" | {_minutes(info['seconds'].get(c.stem))} |")
    texts = [INTRO, ORDER.format(rows="\n".join(rows), when=info.get("when", "(not yet)")), GRADING, PACKAGE]
    cells = [{"cell_type": "markdown", "id": f"map-{i:02d}", "metadata": {}, "source": t.splitlines(keepends=True)}
             for i, t in enumerate(texts, 1)]
    cells.append({"cell_type": "code", "execution_count": None, "id": "map-status", "metadata": {}, "outputs": [],
                  "source": STATUS.splitlines(keepends=True)})
    cells.append({"cell_type": "markdown", "id": "map-korean", "metadata": {},
                  "source": KOREAN.splitlines(keepends=True)})
    return {"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python",
                                                        "name": "python3"}, "language_info": {"name": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


def notebook_text(root: Path = ROOT) -> str:
    return json.dumps(notebook(root), indent=1, ensure_ascii=False) + "\n"


def measure() -> dict:
    """Run every solution notebook top to bottom (exports into a temporary folder) and record the seconds."""
    import nbformat
    from nbclient import NotebookClient

    seconds = {}
    for c in CHAPTERS:
        path = ROOT / "solutions" / f"{c.stem}.ipynb"
        nb = nbformat.read(path, as_version=4)
        with tempfile.TemporaryDirectory() as tmp:
            # the kernel exports into tmp: it inherits the variable, which is set only while it starts and runs
            saved = os.environ.get("MINIBERT_EXPORT_DIR")
            os.environ["MINIBERT_EXPORT_DIR"] = tmp
            try:
                start = time.perf_counter()
                NotebookClient(nb, timeout=900, kernel_name="python3",
                               resources={"metadata": {"path": str(path.parent)}}).execute()
                seconds[c.stem] = round(time.perf_counter() - start, 1)
            finally:
                if saved is None:
                    os.environ.pop("MINIBERT_EXPORT_DIR", None)
                else:
                    os.environ["MINIBERT_EXPORT_DIR"] = saved
        print(f"{c.stem}: {seconds[c.stem]} s", flush=True)
    info = {"when": f"on {time.strftime('%Y-%m-%d')} on a {os.cpu_count()}-core CPU ({platform.machine()})",
            "seconds": seconds}
    TIMES.write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minibert_course.course_map", description=__doc__.split("\n")[0])
    parser.add_argument("--measure", action="store_true", help="run every solution notebook and record its time")
    args = parser.parse_args(argv)
    if args.measure:
        measure()
    print(readme_table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
