"""Helpers that test cells use, and that mean the same in the student's kernel and in the grader's checker.

In the kernel the student's objects are right there; while grading they live in another process (the worker) and the
test cell runs in the checker (`minibert_course.checker`). A test that only calls the student's functions and
compares what they return needs nothing from here. A test that changes what the student's code *sees* needs one of
these, because rebinding a name in the test's namespace would not reach the worker:

    with stand_in(globals(), corrupt=reference_corrupt):   # mask_tokens, graded alone, calls this corrupt
        inputs, labels = mask_tokens(...)
"""

from __future__ import annotations

import contextlib

_CONNECTION = None  # set by the checker while a test cell runs there


_SOURCE = ""  # the test cell the checker is running (stand-ins defined in it can be sent as source)


@contextlib.contextmanager
def stand_in(namespace: dict, *, where: str = "checker", **names):
    """Within the block, the student's code finds `names` under those names instead of its own functions.

    In the kernel this rebinds them in the notebook's namespace. In the checker it also rebinds them in the worker:
    with `where="checker"` each stand-in becomes a call back into the checker (use it when the test reads what the
    stand-in saw); with `where="worker"` the stand-in's source is defined there (a pure helper called thousands of
    times, whose results the test checks anyway)."""
    if where not in ("checker", "worker"):
        raise ValueError(f"where must be 'checker' or 'worker', got {where!r}")
    missing = object()
    before = {name: namespace.get(name, missing) for name in names}
    conn = _CONNECTION
    try:
        for name, value in names.items():
            namespace[name] = value
            if conn is not None and where == "worker":
                conn.set_global_source(name, function_source(value, _SOURCE))
            elif conn is not None:
                conn.set_global(name, value)
        yield
    finally:
        for name, value in before.items():
            if value is missing:
                namespace.pop(name, None)
            else:
                namespace[name] = value
            if conn is not None and value is not missing:
                conn.set_global(name, value)


def grading() -> bool:
    """True while the grader's checker runs this test cell (the student's objects are proxies of another process)."""
    return _CONNECTION is not None


NEW_ALLOWED = ("torch.nn.Embedding", "torch.nn.Linear", "torch.nn.LayerNorm",
               "minibert_course.probes.StubSelfAttention")


def new(class_path: str, *args, **kwargs):
    """An object built where the student's code runs (a plain torch layer, or a course probe), so that the student's
    modules can hold it and the test can still reach it. In the kernel it is simply built here."""
    if class_path not in NEW_ALLOWED:
        raise ValueError(f"new() builds only {', '.join(NEW_ALLOWED)}, not {class_path}")
    if _CONNECTION is not None:
        return _CONNECTION.new(class_path, args, kwargs)
    import importlib

    module, _, name = class_path.rpartition(".")
    return getattr(importlib.import_module(module), name)(*args, **kwargs)


def function_source(fn, cell_source: str) -> str:
    """The source of a function that a test cell defines (found by its first line), dedented."""
    import ast
    import textwrap

    line = fn.__code__.co_firstlineno
    for node in ast.walk(ast.parse(cell_source)):
        if isinstance(node, ast.FunctionDef) and line in (node.lineno, *(d.lineno for d in node.decorator_list)):
            return textwrap.dedent(ast.get_source_segment(cell_source, node, padded=True))
    raise ValueError(f"the source of {fn.__name__} is not in the test cell")
