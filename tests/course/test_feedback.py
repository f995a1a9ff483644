"""Feedback pages: a failing visible test shows its message (the student has it in their notebook anyway), a
failing hidden test shows only that a hidden test failed, no traceback is ever shown, and the page loads nothing
from the network. Unit tests of the preprocessor; the class run checks real feedback (test_roundtrip.py)."""

from __future__ import annotations

import traceback

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from minibert_course.nbgrader_ext import HideTestTracebacks, failing_line, hidden_test_lines

TEST_CELL = """got = answer()
assert got == 2, f"expected 2, got {got}"
### BEGIN HIDDEN TESTS
assert got != 3, "the secret case: never 3"
### END HIDDEN TESTS
print("OK")"""


def judged_error(source: str, namespace: dict) -> dict:
    """The error output the judge makes for a failing cell (same traceback shape: compiled as "<cell>")."""
    try:
        exec(compile(source, "<cell>", "exec"), namespace)
    except Exception as exc:  # noqa: BLE001
        tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
        return {"output_type": "error", "ename": type(exc).__name__, "evalue": str(exc), "traceback": tb[-20:]}
    pytest.fail("the cell was expected to fail")


def feedback(answer_value: int, answer_raises: bool = False) -> str:
    namespace: dict = {}
    exec(compile("def answer():\n    if RAISE:\n        raise NotImplementedError('minibert.x.answer -- complete "
                 "chapter 01 and run its export cell')\n    return VALUE\n", "<cell>", "exec"), namespace)
    namespace.update(RAISE=answer_raises, VALUE=answer_value)
    cell = new_code_cell(TEST_CELL, metadata={"nbgrader": {"grade": True, "solution": False, "grade_id": "t",
                                                           "points": 1}})
    cell.outputs = [judged_error(TEST_CELL, namespace)]
    nb = new_notebook(cells=[cell])
    HideTestTracebacks().preprocess(nb, {})
    return "".join(out.get("text", "") for out in nb.cells[0].outputs)


def test_hidden_lines_and_failing_line():
    assert hidden_test_lines(TEST_CELL) == {3, 4, 5}
    assert failing_line(judged_error(TEST_CELL, {"answer": lambda: 5})) == 2  # the visible assert
    hidden_fails = TEST_CELL.replace("assert got != 3", "assert got != 2")
    assert failing_line(judged_error(hidden_fails, {"answer": lambda: 2})) == 4  # the hidden one


def test_a_visible_failure_shows_its_message_and_no_traceback():
    text = feedback(5)
    assert "AssertionError: expected 2, got 5" in text and "a visible test failed" in text
    assert "Traceback" not in text and "<cell>" not in text


def test_a_stub_reached_from_a_visible_line_shows_what_to_complete():
    text = feedback(2, answer_raises=True)
    assert "NotImplementedError: minibert.x.answer -- complete chapter 01" in text


def test_a_hidden_failure_shows_nothing_of_the_hidden_test():
    namespace = {"answer": lambda: 2}
    exec("got = 2", namespace)
    cell_source = TEST_CELL.replace("assert got != 3", "assert got != 2")  # the hidden assert fails for 2
    cell = new_code_cell(cell_source, metadata={"nbgrader": {"grade": True, "solution": False, "grade_id": "t",
                                                             "points": 1}})
    cell.outputs = [judged_error(cell_source, namespace)]
    nb = new_notebook(cells=[cell])
    HideTestTracebacks().preprocess(nb, {})
    text = "".join(out.get("text", "") for out in nb.cells[0].outputs)
    assert "a hidden test failed" in text and "secret" not in text and "never 3" not in text


def test_an_error_without_a_cell_frame_is_treated_as_hidden():
    cell = new_code_cell(TEST_CELL, metadata={"nbgrader": {"grade": True, "solution": False, "grade_id": "t",
                                                           "points": 1}})
    cell.outputs = [nbformat.from_dict({"output_type": "error", "ename": "TimeoutError", "evalue": "secret detail",
                                        "traceback": []})]
    nb = new_notebook(cells=[cell])
    HideTestTracebacks().preprocess(nb, {})
    text = "".join(out.get("text", "") for out in nb.cells[0].outputs)
    assert "a hidden test failed" in text and "secret detail" not in text
