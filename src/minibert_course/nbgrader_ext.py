"""nbgrader extensions of the course, named in autograder/nbgrader_config.py.

- `NamedStubs` replaces each solution region by nbgrader's stub, but the `NotImplementedError` says which
  function is missing and where to complete it, in the notebook and in the student kit's package alike.
- `HideTestTracebacks` keeps feedback from revealing hidden tests: a failing test cell shows only the name of
  the error, not the traceback (whose lines quote the test code).
"""

from __future__ import annotations

import re

from nbgrader import utils
from nbgrader.preprocessors import ClearSolutions, NbGraderPreprocessor
from traitlets import Int, Unicode

from minibert_course.export import PACKAGE, default_module, parse_directives

_DEF = re.compile(r"^(\s*)(?:async\s+def|def|class)\s+(\w+)")


def enclosing_name(lines: list[str], index: int) -> str | None:
    """Dotted name of the def/class that encloses line `index` (by indentation), or None at top level."""
    indent = len(lines[index]) - len(lines[index].lstrip())
    found = []  # (kind, name), innermost first
    for line in reversed(lines[:index]):
        match = _DEF.match(line)
        if match and len(match.group(1)) < indent:
            found.append(("class" if line.lstrip().startswith("class") else "def", match.group(2)))
            indent = len(match.group(1))
    names = []
    for kind, name in reversed(found):  # outermost first; a function nested in a function is not addressable
        names.append(name)
        if kind == "def":
            break
    return ".".join(names) or None


def stub_message(chapter: str, module: str | None, name: str | None) -> str:
    if module and name:
        return f"{PACKAGE}.{module}.{name} -- complete chapter {chapter} and run its export cell"
    return f"{name or 'this exercise'} -- complete it in chapter {chapter}"


class NamedStubs(ClearSolutions):
    """ClearSolutions whose stub names the missing function, its chapter and the export cell."""

    def preprocess(self, nb, resources):
        name = resources.get("unique_key", "")
        self._chapter = re.match(r"\d*", name).group(0) or name
        self._module = default_module(nb)
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        """ClearSolutions' rules, through its public traits only (nbgrader's private `_replace_solution_region` may
        change in any release): solution regions become named stubs; a region outside a solution cell is an error;
        a solution cell without a region becomes the configured stub as a whole."""
        replaced = self.replace_regions(cell)
        is_solution = utils.is_solution(cell)
        if replaced and not is_solution and self.enforce_metadata:
            raise RuntimeError("Solution region detected in a non-solution cell; please make sure all solution "
                               "regions are within solution cells.")
        if is_solution and not replaced:
            cell.source = self.code_stub[resources["language"]] if cell.cell_type == "code" else self.text_stub
        return cell, resources

    def replace_regions(self, cell) -> bool:
        """Replace every BEGIN/END SOLUTION region of the cell by a stub; True if there was one. In code the stub's
        `NotImplementedError` names the function, its module and the chapter to complete."""
        lines = cell.source.split("\n")
        directives, _ = parse_directives(cell.source)
        exported = "export" in directives
        module = (directives["export"] or self._module) if exported else None
        new_lines: list[str] = []
        in_solution = replaced = False
        for i, line in enumerate(lines):
            if self.begin_solution_delimeter in line:
                if in_solution:
                    raise RuntimeError("encountered nested begin solution statements")
                in_solution = replaced = True
                indent = re.match(r"\s*", line).group(0)
                if cell.cell_type == "code":
                    message = stub_message(self._chapter, module, enclosing_name(lines, i))
                    stub = ["# YOUR CODE HERE", f"raise NotImplementedError({message!r})"]
                else:
                    stub = self.text_stub.split("\n")
                new_lines.extend(indent + s for s in stub)
            elif self.end_solution_delimeter in line:
                in_solution = False
            elif not in_solution:
                new_lines.append(line)
        if in_solution:
            raise RuntimeError("no end solution statement found")
        cell.source = "\n".join(new_lines)
        return replaced


GRADER_ERRORS = ("NotGraded", "Tampering", "NotRun", "CellError")  # errors the sealed executor writes itself


_CELL_FRAME = re.compile(r'File "<cell>", line (\d+)')


def hidden_test_lines(source: str) -> set[int]:
    """1-based numbers of the lines between `### BEGIN HIDDEN TESTS` and `### END HIDDEN TESTS` (markers included)."""
    hidden, inside = set(), False
    for number, line in enumerate(source.split("\n"), start=1):
        if "BEGIN HIDDEN TESTS" in line:
            inside = True
        if inside:
            hidden.add(number)
        if "END HIDDEN TESTS" in line:
            inside = False
    return hidden


def failing_line(error: dict) -> int | None:
    """The line of the test cell itself that was running when it failed: the first `<cell>` frame of the judge's
    traceback (later frames are functions it called). None when the traceback does not show it."""
    for entry in error.get("traceback", []):
        match = _CELL_FRAME.search(entry)
        if match:
            return int(match.group(1))
    return None


def failure_text(source: str, out: dict) -> str:
    """What a student may read of a failing test cell's error output: the grader's own verdict (`NotRun`, ...) and
    the message of a visible test (the student has its source in their notebook anyway), only the error's name for a
    hidden test, never a traceback (it would quote the test's code). `make grade`'s feedback and the checking
    service both use it, so they say the same. `source` is the test cell's source with its hidden-test markers."""
    if out.get("ename") in GRADER_ERRORS:
        return f"{out.get('ename')}: {out.get('evalue', '')}\n"  # the grader's verdict: shown
    if failing_line(out) not in hidden_test_lines(source) | {None}:
        return (f"{out.get('ename', 'Error')}: {out.get('evalue', '')}\n"
                "(a visible test failed: see it in your notebook)\n")
    return (f"{out.get('ename', 'Error')}: a hidden test failed. Its details are not shown; "
            "check your answer against the visible tests and the task text.\n")


def diagnose(entries: list[dict], failed: set[str]) -> list[str]:
    """The catalogued mistakes (autograder/diagnosis.py: `entries` = [{"failed": [...], "mistakes": [...]}] of one
    chapter) whose failing tests are exactly `failed`; none when nothing failed."""
    failed = set(failed)
    return [m for e in entries if failed and set(e["failed"]) == failed for m in e["mistakes"]]


def diagnosis_text(mistakes: list[str]) -> str:
    if len(mistakes) == 1:
        return f"Diagnosis: this looks like a mistake from the course's catalogue: {mistakes[0]}\n"
    return ("Diagnosis: this looks like one of these mistakes from the course's catalogue:\n"
            + "".join(f"- {m}\n" for m in mistakes))


class HideTestTracebacks(NbGraderPreprocessor):  # NbGraderPreprocessor: enabled by default
    """In feedback, a failing test cell shows `failure_text` of its error instead of the error. Runs before
    ClearHiddenTests, while the markers are still there."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell):
            outputs = []
            for out in cell.get("outputs", []):
                if out.get("output_type") != "error":
                    outputs.append(out)
                    continue
                outputs.append({"output_type": "stream", "name": "stderr", "text": failure_text(cell.source, out)})
            cell.outputs = outputs
        return cell, resources


def secret_lines(*notebooks, min_length: int = 12) -> set[str]:
    """Lines that only solution regions or hidden tests of the source notebooks contain.

    A line also found outside those regions in any of the notebooks (a shared `return x + y`, a hint in the task)
    is not secret. Used to prove that no solution or hidden-test text reaches notebooks/, the kit or feedback.
    """
    inside: set[str] = set()
    outside: set[str] = set()
    markers = (("BEGIN SOLUTION", "END SOLUTION"), ("BEGIN HIDDEN TESTS", "END HIDDEN TESTS"))
    for nb in notebooks:
        for cell in nb.cells:
            region = None
            for line in cell.source.split("\n"):
                text = line.strip()
                begin = next((end for start, end in markers if start in text), None)
                if begin:
                    region = begin
                    continue
                if region and region in text:
                    region = None
                    continue
                (inside if region else outside).add(text)
    shown = "\n".join(outside)  # the task text may quote a line of the solution on purpose (a hint)
    return {line for line in inside if len(line) >= min_length and not line.startswith("#") and line not in shown}


class ClearGraderMetadata(NbGraderPreprocessor):
    """Removes the course's own cell metadata (`minibert`: the mark schemes of manually graded answers) from the
    release: students never see a mark scheme; `make grade` gives them to the graders (COURSE/mark_schemes.md)."""

    def preprocess_cell(self, cell, resources, index):
        cell.metadata.pop("minibert", None)
        return cell, resources


def mark_schemes(nb) -> list[tuple[str, float, list[str]]]:
    """(grade_id, points, criteria) of every manually graded answer that carries a mark scheme."""
    out = []
    for cell in nb.cells:
        scheme = cell.get("metadata", {}).get("minibert", {}).get("mark_scheme")
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if scheme:
            out.append((meta.get("grade_id", ""), float(meta.get("points", 0)), list(scheme)))
    return out


class SealedExecute(NbGraderPreprocessor):
    """Autograde's execution step, sealed (see minibert_course.sealed): the instructor's notebook with the
    student's answers runs in a sandboxed plain interpreter; each test cell's output says whether its asserts
    ran to the end. Replaces nbgrader's `Execute` in `Autograde.autograde_preprocessors`."""

    uid = Int(61000, help="unprivileged uid the submission runs as").tag(config=True)
    cell_timeout = Int(120, help="seconds per cell").tag(config=True)
    total_timeout = Int(900, help="seconds per notebook").tag(config=True)
    memory_gb = Int(6, help="address-space limit of the submission, GiB").tag(config=True)
    source_root = Unicode("source", help="instructor notebooks: SOURCE/<assignment>/<notebook>.ipynb").tag(config=True)
    release_root = Unicode("release", help="released notebooks (nbgrader's cell metadata)").tag(config=True)
    judge_root = Unicode("judge", help="judge packages: JUDGE/<assignment>/").tag(config=True)
    report_root = Unicode("judge-reports", help="one JSON report per graded notebook").tag(config=True)
    diagnosis_file = Unicode("", help="the catalogue's diagnoses (autograder/diagnosis.py), JSON; empty: none"
                             ).tag(config=True)

    def preprocess(self, nb, resources):
        import copy
        import json
        from pathlib import Path

        import nbformat

        from minibert_course.sanitize import plain_outputs, sanitize_markdown
        from minibert_course.sealed import Sandbox, plan_submission, run_cells

        info = resources["nbgrader"]
        assignment, notebook, student = info["assignment"], info["notebook"], info["student"]
        source_nb = nbformat.read(Path(self.source_root) / assignment / f"{notebook}.ipynb", as_version=4)
        release_path = Path(self.release_root) / assignment / f"{notebook}.ipynb"
        release_nb = nbformat.read(release_path, as_version=4) if release_path.exists() else source_nb
        if len(release_nb.cells) != len(source_nb.cells):
            release_nb = source_nb
        plan = plan_submission(source_nb, nb)
        sandbox = Sandbox(uid=self.uid, memory=self.memory_gb * 2**30)
        result = run_cells(plan, Path(self.judge_root).resolve() / assignment, sandbox=sandbox,
                           cell_timeout=self.cell_timeout, total_timeout=self.total_timeout)
        by_index = {c.index: c for c in result.cells}
        cells = []
        for i, planned in enumerate(plan.cells):
            if planned.source_index is None:  # a cell the student added
                cell = nbformat.v4.new_code_cell(planned.source)
            else:
                original = release_nb.cells[planned.source_index]  # nbgrader's metadata, checksums included
                cell = copy.deepcopy(original)
            answer = planned.kind == "student" or (planned.kind == "markdown" and cell.get("metadata", {}).get(
                "nbgrader", {}).get("solution"))  # a manually graded answer is the student's text too
            cell.source = neutralize_markers(planned.source) if answer else planned.source
            if answer and cell.cell_type == "markdown":  # the formgrader and the feedback render it: no active HTML
                cell.source = sanitize_markdown(cell.source)
            if cell.cell_type == "code":
                cell.outputs = []
                cell.execution_count = None
                ran = by_index.get(i)
                if planned.kind == "demo":
                    cell.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                                           text="(a demo cell: not run while grading)\n")]
                elif ran is not None:
                    cell.outputs = [nbformat.from_dict(o) for o in plain_outputs(graded_outputs(ran))]
            cells.append(cell)
        failed = [c for c in result.cells if c.kind == "test" and not c.passed]
        entries = {}
        if self.diagnosis_file and Path(self.diagnosis_file).exists():
            entries = json.loads(Path(self.diagnosis_file).read_text(encoding="utf-8"))
        mistakes = [] if result.tampered else diagnose(entries.get(assignment, []), {c.grade_id for c in failed})
        if mistakes:  # under the first failing test: the feedback shows it there
            cells[failed[0].index].outputs.append(nbformat.v4.new_output("stream", name="stdout",
                                                                         text=diagnosis_text(mistakes)))
        nb.cells = cells
        report = {"student": student, "assignment": assignment, "notebook": notebook, "seconds": result.seconds,
                  "flags": result.flags, "review": result.review, "problems": result.problems,
                  "sandbox": result.sandbox,
                  "tests": {c.grade_id: c.passed for c in result.cells if c.kind == "test"},
                  "diagnosis": mistakes,
                  "slowest_cells": [[c.index, c.kind, c.grade_id, c.seconds] for c in
                                    sorted(result.cells, key=lambda c: -c.seconds)[:5]]}
        out = Path(self.report_root) / assignment
        out.mkdir(parents=True, exist_ok=True)
        tmp = out / f".{student}.json.tmp"
        tmp.write_text(json.dumps(report, indent=1), encoding="utf-8")
        tmp.replace(out / f"{student}.json")
        return nb, resources


def neutralize_markers(source: str) -> str:
    """Student text that quotes nbgrader's markers must not be read as markers by later steps (feedback)."""
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS",
                   "BEGIN MARK SCHEME", "END MARK SCHEME"):
        source = source.replace(marker, marker.replace(" ", "_", 1) + " (quoted by the student)")
    return source


def graded_outputs(ran) -> list[dict]:
    """A test cell's outputs: the verdict is the judge's; stderr of a passing test does not cost its points."""
    outputs = []
    for out in ran.outputs:
        if ran.kind == "test" and ran.passed and out.get("output_type") == "stream":
            out = dict(out, name="stdout")
        if ran.kind == "test" and out.get("output_type") == "execute_result":
            continue  # no partial credit from a value a test cell leaves behind
        outputs.append(out)
    if ran.kind == "test" and not ran.passed and not any(o.get("output_type") == "error" for o in outputs):
        outputs.append({"output_type": "error", "ename": "TestFailed", "evalue": "", "traceback": []})
    return outputs
