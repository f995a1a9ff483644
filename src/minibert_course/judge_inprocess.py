"""The in-process judge (the grader before the checker): runs one submission's cells, tests included, in one plain

    python -I judge.py        (started by minibert_course.sealed; talks JSON lines over stdin/stdout)

Why not an IPython kernel: a kernel lets the code it runs rewrite every later cell (input and AST transformers),
swallow errors (custom exception handlers, event hooks) and so make tests "pass" without running their asserts.
Here there is no shell to hook: each cell is compiled and executed by this loop, and a test cell passes only when
its code ran to the end. Before and after every test cell the judge checks that nothing a test relies on was
replaced (builtins, numpy/torch testing helpers, the reference package, this module, the interpreter's trace
hooks) and puts back the helpers the instructor's cells defined; a replacement is reported as tampering.

The parent sends one request per cell, each with a fresh nonce, and reads one result per request: a result must
echo the nonce of the request it answers, so code that writes into the result channel cannot answer for a cell
that has not run yet. The file descriptors of that channel are moved away from 0/1 before any cell runs.
"""

from __future__ import annotations

import ast
import builtins
import io
import json
import os
import signal
import sys
import time
import traceback
import types

MAX_STREAM = 20_000  # characters of stdout/stderr kept per cell


class CellTimeout(BaseException):
    """Raised in a cell that ran past its time limit (a BaseException: `except Exception` cannot swallow it)."""


def _alarm(signum, frame):  # noqa: ARG001
    raise CellTimeout("the cell ran past its time limit")


class _Shell:
    """Stands in for get_ipython() while grading: magics are not run (except %time/%timeit/%%capture bodies)."""

    def __init__(self, ns: dict):
        self.user_ns = ns

    def run_line_magic(self, name, line, _stack_depth=1):
        if name in ("time", "timeit") and line.strip():
            exec(compile(line, "<magic>", "exec"), self.user_ns)
            return None
        print(f"[grader] %{name} is not run while grading")

    def run_cell_magic(self, name, line, cell):
        if name in ("time", "timeit", "capture"):
            exec(compile(cell, "<magic>", "exec"), self.user_ns)
            return None
        print(f"[grader] %%{name} is not run while grading")

    def system(self, cmd):
        print(f"[grader] shell commands are not run while grading: !{cmd}")

    getoutput = system


def _transform(source: str) -> str:
    """IPython syntax (magics, shell lines) as Python calls; plain Python is left alone (no IPython import)."""
    if not any(line.lstrip().startswith(("%", "!")) for line in source.split("\n")):
        return source
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


# ---- what a test relies on, and how to see that it was replaced -------------------------------------------

WATCHED_MODULES = ["builtins", "json", "os", "sys", "io", "math", "operator", "functools", "signal", "traceback",
                   "numpy", "numpy.testing", "torch", "torch.testing", "torch.nn", "torch.nn.functional"]
WATCHED_PREFIXES = ("minibert", "minibert_course")
SYS_HOOKS = ["settrace", "setprofile", "gettrace", "getprofile", "excepthook", "displayhook", "audit", "exit",
             "addaudithook", "modules", "meta_path", "path_hooks", "_getframe"]


class Integrity:
    """A snapshot of the objects tests use; `changes()` lists any that were replaced since."""

    def __init__(self) -> None:
        self.keep: dict[tuple[str, str], object] = {}
        self.codes: dict[tuple[str, str], object] = {}
        self.modules: dict[str, types.ModuleType] = {}

    def watch(self) -> None:
        names = [m for m in WATCHED_MODULES if m in sys.modules]
        names += [m for m in list(sys.modules) if m.startswith(WATCHED_PREFIXES)]
        names.append(__name__)
        for name in names:
            module = sys.modules.get(name)
            if module is None or name in self.modules:
                continue
            self.modules[name] = module
            for attr, value in list(vars(module).items()):
                if attr.startswith("__") and attr not in ("__import__", "__build_class__"):
                    continue
                if name == "sys" and attr not in SYS_HOOKS:
                    continue  # sys.stdout & co. change legitimately
                if name.startswith(WATCHED_PREFIXES) and attr.startswith("_"):
                    continue  # the package's private state (caches) may change
                self.keep[(name, attr)] = value
                code = getattr(value, "__code__", None)
                if code is not None:
                    self.codes[(name, attr)] = code
        for cls_path in ["torch.Tensor", "torch.nn.Module", "numpy.ndarray"]:
            mod, _, cls_name = cls_path.rpartition(".")
            cls = getattr(sys.modules.get(mod), cls_name, None)
            if cls is not None and (cls_path, "") not in self.keep:
                self.keep[(cls_path, "")] = cls
                for attr, value in list(vars(cls).items()):
                    self.keep[(cls_path, attr)] = value

    def changes(self) -> list[str]:
        found = []
        if sys.gettrace() is not None or sys.getprofile() is not None:
            found.append("a trace or profile hook is installed (sys.settrace / sys.setprofile)")
        for name, module in self.modules.items():
            if sys.modules.get(name) is not module:
                found.append(f"sys.modules[{name!r}] was replaced")
        classes = {path: cls for (path, attr), cls in self.keep.items() if attr == ""}
        for (name, attr), value in self.keep.items():
            if attr == "":
                continue
            if name in classes:
                now = vars(classes[name]).get(attr, _MISSING)
            else:
                now = vars(self.modules[name]).get(attr, _MISSING)
            if now is not value:
                if _library_wrapper(now, value):
                    self.keep[(name, attr)] = now  # e.g. torch._dynamo wraps torch.manual_seed on first import
                    self.codes[(name, attr)] = getattr(now, "__code__", None)
                    continue
                found.append(f"{name}.{attr} was replaced")
            elif (name, attr) in self.codes and getattr(value, "__code__", None) is not self.codes[(name, attr)]:
                found.append(f"the code of {name}.{attr} was replaced")
        return found

    def restore(self) -> None:
        classes = {path: cls for (path, attr), cls in self.keep.items() if attr == ""}
        for name, module in self.modules.items():
            sys.modules[name] = module
        for (name, attr), value in self.keep.items():
            if attr == "":
                continue
            try:
                setattr(classes[name] if name in classes else self.modules[name], attr, value)
            except (AttributeError, TypeError):
                pass
            code = self.codes.get((name, attr))
            if code is not None and getattr(value, "__code__", code) is not code:
                try:
                    value.__code__ = code
                except (AttributeError, TypeError):
                    pass
        sys.settrace(None)
        sys.setprofile(None)


_MISSING = object()


def _library_wrapper(new, old) -> bool:
    """A library's own functools.wraps wrapper of `old` (its code lives in an installed file, not in a cell)."""
    code = getattr(new, "__code__", None)
    filename = getattr(code, "co_filename", "")
    return (getattr(new, "__wrapped__", None) is old and filename.endswith(".py") and os.path.isfile(filename)
            and ("site-packages" in filename or "dist-packages" in filename))


# ---- running cells ------------------------------------------------------------------------------------------


def _execute(source: str, ns: dict, show_result: bool) -> list[dict]:
    """Run one cell; returns its outputs (streams, the last expression's value, or the error)."""
    outputs: list[dict] = []
    out, err = io.StringIO(), io.StringIO()
    sys.stdout, sys.stderr = out, err
    try:
        tree = ast.parse(_transform(source))
        last = tree.body.pop() if show_result and tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, "<cell>", "exec"), ns)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), ns)
            if value is not None:
                outputs.append({"output_type": "execute_result", "data": {"text/plain": repr(value)[:MAX_STREAM]},
                                "metadata": {}, "execution_count": None})
    except BaseException as exc:  # noqa: BLE001 (SystemExit, KeyboardInterrupt and timeouts fail the cell too)
        tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
        outputs.append({"output_type": "error", "ename": type(exc).__name__, "evalue": str(exc)[:2000],
                        "traceback": [line[:2000] for line in tb[-20:]]})
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    streams = [{"output_type": "stream", "name": name, "text": buf.getvalue()[:MAX_STREAM]}
               for name, buf in (("stdout", out), ("stderr", err)) if buf.getvalue()]
    return streams + outputs


def _callable_bindings(ns: dict, before: dict) -> dict:
    """Names a cell (re)bound to a function, class or module: the instructor's helpers to keep."""
    return {k: v for k, v in ns.items() if before.get(k, _MISSING) is not v
            and (callable(v) or isinstance(v, types.ModuleType)) and not k.startswith("__")}


def main() -> int:
    # The channel: requests on the old stdin, results on the old stdout; cells see /dev/null on fds 0 and 1.
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    results = os.fdopen(os.dup(1), "w", encoding="utf-8")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(open(os.devnull, "wb"))  # noqa: SIM115
    sys.__stderr__ = sys.stderr

    setup = json.loads(requests.readline())
    sys.path[:0] = setup.get("path", [])
    for module in setup.get("preload", []):
        try:
            __import__(module)
        except Exception:  # noqa: BLE001 (a broken import shows up in the cell that needs it)
            pass
    integrity = Integrity()
    integrity.watch()
    _send = results.write
    _clock = time.perf_counter
    _flush = results.flush
    _dumps = json.dumps
    signal.signal(signal.SIGALRM, _alarm)

    ns: dict = {"__name__": "__main__", "__builtins__": builtins}
    shell = _Shell(ns)
    ns["get_ipython"] = lambda: shell
    helpers: dict = {}
    _send(_dumps({"ready": True}) + "\n")
    _flush()
    while True:
        line = requests.readline()
        if not line:
            return 0
        req = json.loads(line)
        kind, tampered = req["kind"], []
        if kind == "test":
            tampered = integrity.changes()
            integrity.restore()
            ns["__builtins__"] = builtins
            ns.update(helpers)
        before = dict(ns)
        signal.alarm(int(req.get("timeout", 120)))
        started = _clock()
        try:
            outputs = _execute(req["source"], ns, show_result=kind != "test")
        except BaseException as exc:  # noqa: BLE001 (a timeout that fired between cells)
            outputs = [{"output_type": "error", "ename": type(exc).__name__, "evalue": str(exc), "traceback": []}]
        finally:
            signal.alarm(0)
        if kind in ("given", "test"):
            helpers.update(_callable_bindings(ns, before))
        if kind == "test":
            tampered += [c for c in integrity.changes() if c not in tampered]
            integrity.restore()
        integrity.watch()  # modules first imported by this cell are watched from now on
        passed = not any(o["output_type"] == "error" for o in outputs)
        _send(_dumps({"index": req["index"], "nonce": req["nonce"], "passed": passed, "outputs": outputs,
                      "tampered": tampered, "seconds": round(_clock() - started, 3)}) + "\n")
        _flush()


if __name__ == "__main__":
    sys.exit(main())
