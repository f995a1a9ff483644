"""The grading worker: runs the given cells and the student's cells in a plain interpreter, inside the sandbox, and
answers the checker's requests about the objects they made.

    python -I judge.py        (started by minibert_course.checker; framed messages on the old stdin/stdout)

This process decides nothing. Tests, hidden tests and expected values live in the checker (another process, that
never runs student code); here a request is "run this cell", "give me the value of this name", "call this object
with these arguments", "back-propagate these gradients", and every answer is data in the format of
`minibert_course.wire` (tensors, numbers, strings, containers, course dataclasses) or an opaque handle. Student code
may rewrite anything in this process, this loop included: the worst it can do is answer with data of its choice,
which is what a student function returning that data would do anyway.

Output that student code prints while the checker calls it (during tests) is thrown away here, so hidden tests leave
no trace in feedback. Each test is served by a fork of this process (`op_fork`), made after the last cell; this
process waits while the copy lives and then puts /tmp and /work back (`op_reset`), so what student code kept during
one test is not there in the next.

Magics and shell lines are not Python: cells are rewritten line by line before they run (`%time`/`%timeit` keep
their statement, `%%time`/`%%timeit`/`%%capture` keep their body, other magics and `!` lines become `pass` with a
note), so a cell that runs in JupyterLab does not become a SyntaxError here.
"""

from __future__ import annotations

import ast
import builtins
import io
import marshal
import os
import re
import signal
import sys
import time
import traceback

MAX_STREAM = 20_000  # characters of stdout/stderr kept per cell
BODY_MAGICS = ("time", "timeit", "capture", "prun")
STATEMENT_MAGICS = ("time", "timeit", "prun")


class CellTimeout(BaseException):
    """Raised in a cell that ran past its time limit (a BaseException: `except Exception` cannot swallow it)."""


def _alarm(signum, frame):  # noqa: ARG001
    raise CellTimeout("the cell ran past its time limit")


_MAGIC_LINE = re.compile(r"^(\s*)(%{1,2}|!)(\w*)(.*)$")
_MAGIC_ASSIGN = re.compile(r"^(\s*)([A-Za-z_][\w, ]*?)\s*=\s*(%|!)(.*)$")


def strip_magics(source: str) -> tuple[str, list[str]]:
    """IPython syntax as plain Python, line numbers kept; returns (source, notes about what was not run)."""
    lines, notes = source.split("\n"), []
    if lines and lines[0].lstrip().startswith("%%"):
        name = lines[0].strip()[2:].split(" ")[0]
        if name in BODY_MAGICS:
            lines[0] = ""  # the body is Python
        else:
            notes.append(f"%%{name} cell: not run while grading (only Python runs)")
            return "", notes
    out = []
    for line in lines:
        assign = _MAGIC_ASSIGN.match(line)
        match = _MAGIC_LINE.match(line)
        if assign and not line.lstrip().startswith(("%", "!")):
            indent, target, sign, rest = assign.groups()
            notes.append(f"{sign}{rest.strip()[:40]}: not run while grading")
            out.append(f"{indent}{target} = None")
        elif match and line.strip() not in ("", "!"):
            indent, sign, name, rest = match.groups()
            if sign == "%" and name in STATEMENT_MAGICS and rest.strip():
                body = rest.strip()
                while body.startswith("-"):  # %timeit -n 3 -r 1 stmt
                    _, _, body = body.partition(" ")
                    if body[:1].isdigit():
                        _, _, body = body.partition(" ")
                    body = body.strip()
                out.append(indent + body)
            else:
                notes.append(f"{sign}{name}{rest[:40]}: not run while grading")
                out.append(indent + "pass")
        elif line.rstrip().endswith("?") and re.match(r"^\s*[\w.]+\?\??$", line):
            out.append(re.match(r"^(\s*)", line).group(1) + "pass")
        else:
            out.append(line)
    return "\n".join(out), notes


class _Shell:
    """Stands in for get_ipython(): nothing of IPython exists while grading; magics called by name are not run."""

    def __init__(self, ns: dict):
        self.user_ns = ns

    def run_line_magic(self, name, line, _stack_depth=1):
        print(f"[grader] %{name} is not run while grading")

    def run_cell_magic(self, name, line, cell):
        print(f"[grader] %%{name} is not run while grading")

    def system(self, cmd):
        print(f"[grader] shell commands are not run while grading: !{cmd}")

    getoutput = system


class _Discard(io.TextIOBase):
    def write(self, s):
        return len(s)


class Worker:
    def __init__(self, requests: int, results: int):
        from minibert_course import wire

        self.wire = wire
        self.reader = wire.Reader(requests)
        self.forking = False  # the worker's own fork (a test's copy) keeps the channel; a fork of student code not
        os.register_at_fork(after_in_child=lambda: self.forking or _close(requests, results))  # (nor its replies)
        self.out = results
        self.ns: dict = {"__name__": "__main__", "__builtins__": builtins}
        self.ns["get_ipython"] = lambda: shell
        shell = _Shell(self.ns)
        self.handles: dict[int, object] = {}
        self.by_object: dict[int, int] = {}
        self.graphs: dict[int, tuple[list, dict, dict]] = {}
        self.package_dataclasses: dict[str, type] = {}
        self.rng = None  # the torch random state both sides last agreed on
        self.stored: dict[int, object] = {}  # large arguments the checker sent once
        self.arg_refs: list[dict[int, int]] = []  # per request in progress: id of a container argument -> position
        self.isolated = False
        self.keep: list[str] = []
        self.files: dict | None = None  # /tmp and /work when the first test began
        self.in_copy = False  # this process is a test's copy (a fork)

    # ---- handles and data -----------------------------------------------------------------------------------
    def handle(self, obj) -> int:
        key = id(obj)
        if key in self.by_object and self.handles.get(self.by_object[key]) is obj:
            return self.by_object[key]
        hid = len(self.handles) + 1
        while hid in self.handles:
            hid += 1
        self.handles[hid] = obj
        self.by_object[key] = hid
        return hid

    def resolve(self, hid: int, type_name: str):  # noqa: ARG002
        if hid not in self.handles:
            raise self.wire.WireError(f"no object with handle {hid}")
        return self.handles[hid]

    def dataclass(self, name: str):
        import dataclasses

        value = self.ns.get(name)
        if isinstance(value, type) and dataclasses.is_dataclass(value):
            return value
        if not self.package_dataclasses:
            for mod_name, mod in list(sys.modules.items()):
                if mod_name.startswith("minibert.") and mod is not None:
                    for obj in list(vars(mod).values()):
                        if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == mod_name:
                            self.package_dataclasses.setdefault(obj.__qualname__, obj)
        return self.package_dataclasses.get(name)

    def callback(self, cid: int):
        worker = self

        def stand_in(*args, **kwargs):
            return worker.call_checker(cid, args, kwargs)

        stand_in.__name__ = stand_in.__qualname__ = f"checker_stand_in_{cid}"
        return stand_in

    def module(self, value, decoder):
        """A small torch module the checker built (Linear, LayerNorm, Embedding, Dropout): rebuilt here with its
        parameters as the leaves that gradients flow back to."""
        import torch
        from torch import nn

        if value[0] == "store":  # a large argument the checker will refer to again by its key
            self.stored[value[1]] = decoder.decode(value[2])
            return self.stored[value[1]]
        if value[0] == "cached":
            return self.stored[value[1]]
        _, kind, init, params, training = value
        classes = {"Linear": nn.Linear, "LayerNorm": nn.LayerNorm, "Embedding": nn.Embedding, "Dropout": nn.Dropout}
        if kind not in classes:
            raise self.wire.WireError(f"a module of kind {kind!r}")
        module = classes[kind](**decoder.decode(init))
        for name, enc in params:
            tensor = decoder.decode(enc)
            param = nn.Parameter(tensor.detach(), requires_grad=tensor.requires_grad)
            if enc[1].get("g") is not None:
                decoder.leaves[enc[1]["g"]] = param
            setattr(module, name, param)
        module.train(bool(training))
        del torch
        return module

    def decoder(self, blobs):
        return self.wire.Decoder(blobs, self.resolve, self.dataclass, self.callback, self.module)

    def encoder(self, grad_outputs: bool = False):
        return self.wire.Encoder(handle=self.handle, grad_outputs=grad_outputs)

    def send(self, header: dict, enc=None) -> None:
        self.wire.send(self.out, header, enc.blobs if enc is not None else [])

    def call_checker(self, cid: int, args, kwargs):
        """A stand-in of the checker's, called by student code: ask the checker, serving its requests meanwhile."""
        enc = self.encoder()
        refs = self.arg_refs[-1] if self.arg_refs else {}

        def arg(value):  # an argument the checker passed in, handed back as a reference to its own object
            return ["ref", refs[id(value)]] if id(value) in refs else enc.encode(value)


        payload = {"op": "callback", "cb": cid, "args": ["l", [arg(a) for a in args]],
                   "kwargs": ["d", [[enc.encode(k), arg(v)] for k, v in kwargs.items()]]}
        self._send_rng(payload, enc)
        self.send(payload, enc)
        while True:
            got = self.reader.read()
            if got is None:
                raise SystemExit(0)
            header, blobs = got
            if header.get("op") != "callback_result":
                self.dispatch(header, blobs)  # the stand-in itself asked something of student code
                continue
            dec = self.decoder(blobs)
            self._take_rng(header, dec)
            if not header.get("ok"):
                raise dec.decode(header["error"])
            value = dec.decode(header["value"])
            for i, new in header.get("writeback", []):  # the stand-in changed a list or dict it was given
                old, new = args[i], dec.decode(new)
                if type(old) is list and type(new) is list:
                    old[:] = new
                elif type(old) is dict and type(new) is dict:
                    old.clear()
                    old.update(new)
            for local, state in zip(enc.generators, header.get("gens", []), strict=False):
                self.wire.set_generator_state(local, state, dec)
            return value

    def _send_rng(self, message: dict, enc) -> None:
        """The global torch random state goes along when it moved since the two processes last agreed on it."""
        import torch

        state = torch.get_rng_state()
        if self.rng is None or not torch.equal(state, self.rng):
            message["rng"] = enc.blob(self.wire._tensor_blob(state))
        self.rng = state

    def _take_rng(self, message: dict, dec) -> None:
        import torch

        if message.get("rng") is not None:
            torch.set_rng_state(self.wire._tensor_from(dec.blob(message["rng"])))
        self.rng = torch.get_rng_state()

    # ---- requests -------------------------------------------------------------------------------------------
    def run(self) -> int:
        signal.signal(signal.SIGALRM, _alarm)
        while True:
            got = self.reader.read()
            if got is None:
                return 0
            self.dispatch(*got)

    def dispatch(self, header: dict, blobs: list[bytes]) -> None:
        op = header.get("op")
        alarm = signal.alarm(0)  # a nested request (inside a stand-in) keeps the outer call's time limit
        try:
            reply, enc = getattr(self, f"op_{op}")(header, blobs)
        except BaseException as exc:  # noqa: BLE001 (every request gets an answer)
            enc = self.encoder()
            reply = {"ok": False, "error": enc.exception(exc)}
        finally:
            signal.alarm(alarm)
        if reply is None:  # (a request answered otherwise: the end of a test's copy)
            return
        reply["id"] = header.get("id")
        try:
            self.send(reply, enc)
        except Exception as exc:  # noqa: BLE001 (a reply that cannot be written is an error reply)
            enc = self.encoder()
            self.send({"id": header.get("id"), "ok": False, "error": enc.exception(exc)}, enc)

    def op_setup(self, header, blobs):
        sys.path[:0] = header.get("path", [])
        self.isolated = bool(header.get("isolated"))  # in bubblewrap: /tmp, /work and System V IPC are ours alone
        self.keep = [str(k) for k in header.get("keep", [])]  # (the checker's read-only scratch folder)
        for module in header.get("preload", []):
            try:
                __import__(module)
            except Exception:  # noqa: BLE001 (a broken import shows up in the cell that needs it)
                pass
        return {"ok": True, "pid": os.getpid()}, None

    # ---- one copy of the notebook's state per test ------------------------------------------------------------
    def op_fork(self, header, blobs):
        """Each test runs in a fork of this process: what student code keeps while a test runs (a hidden input in
        a global, a callback, a changed name) is gone with the copy, so no later test can show it. This process
        runs no student code while a copy lives; it answers when the copy has ended, after the checker removed
        every other process of the sandbox (`op_reset` then puts the files back)."""
        import threading

        if self.files is None:
            self.files = _scratch_snapshot(self.keep) if self.isolated else {}
        threads = threading.active_count()
        _reap()  # processes of the cells', stopped by the checker: they count against the process limit until reaped
        self.forking = True
        try:
            pid = os.fork()
        finally:
            self.forking = False
        if pid == 0:
            self.in_copy = True
            return {"ok": True, "next_handle": len(self.handles) + 1, "threads": threads}, None
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except InterruptedError:
                continue
            except ChildProcessError:
                status = -1
                break
        self.send({"op": "ended", "fork": header.get("id"), "status": status})
        while True:  # what was sent to the copy and not read by it is not for this process: only the reset is
            got = self.reader.read()
            if got is None:
                raise SystemExit(0)
            if got[0].get("op") == "reset":
                reply, _ = self.op_reset(*got)
                self.send(dict(reply, id=got[0].get("id")))
                return None, None

    def op_exit(self, header, blobs):
        if self.in_copy:
            os._exit(0)
        return None, None  # (a copy that died before it read its "exit": nothing to do)

    def op_reset(self, header, blobs):
        """After a test's copy ended (and the checker removed any process it left): the files of /tmp and /work as
        the notebook's cells left them, and no System V IPC object (a channel that outlives processes)."""
        if self.isolated and self.files is not None:
            _scratch_restore(self.files, self.keep)
            _remove_sysv_ipc()
        return {"ok": True, "nonce": header.get("nonce")}, None  # (the checker reads nothing older than this)

    def op_exec(self, header, blobs):
        source, notes = strip_magics(header["source"])
        outputs: list[dict] = []
        out, err = io.StringIO(), io.StringIO()
        sys.stdout, sys.stderr = out, err
        started = time.perf_counter()
        signal.alarm(int(header.get("timeout", 120)))
        try:
            tree = ast.parse(source)
            last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            exec(compile(tree, "<cell>", "exec"), self.ns)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), self.ns)
                if value is not None:
                    outputs.append({"output_type": "execute_result", "data": {"text/plain": _repr(value)},
                                    "metadata": {}, "execution_count": None})
        except BaseException as exc:  # noqa: BLE001 (SystemExit, KeyboardInterrupt and timeouts fail the cell too)
            tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
            outputs.append({"output_type": "error", "ename": type(exc).__name__[:80], "evalue": _str(exc)[:2000],
                            "traceback": [line[:2000] for line in tb[-20:]]})
        finally:
            signal.alarm(0)
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        streams = [{"output_type": "stream", "name": name, "text": buf.getvalue()[:MAX_STREAM]}
                   for name, buf in (("stdout", out), ("stderr", err)) if buf.getvalue()]
        if notes:
            streams.insert(0, {"output_type": "stream", "name": "stdout",
                               "text": "".join(f"[grader] {n}\n" for n in notes)})
        ok = not any(o["output_type"] == "error" for o in outputs)
        return {"ok": ok, "outputs": streams + outputs, "seconds": round(time.perf_counter() - started, 3)}, None

    def op_get(self, header, blobs):
        import types

        enc = self.encoder()
        values = []
        for name in header.get("names", []):
            if name in self.ns and not isinstance(self.ns[name], types.ModuleType):
                value = self.ns[name]
                try:
                    one = self.encoder()
                    one.encode(value)  # a value that cannot be data (a meta tensor, too deep) becomes a handle
                    values.append([name, enc.encode(value)])
                except Exception:  # noqa: BLE001
                    values.append([name, ["h", self.handle(value), type(value).__qualname__[:80]]])
        return {"ok": True, "values": values}, enc

    def op_do(self, header, blobs):
        import torch

        dec = self.decoder(blobs)
        self._take_rng(header, dec)
        target = dec.decode(header["target"])
        args = dec.decode(header["args"])
        kwargs = dec.decode(header["kwargs"])
        kind = header["kind"]
        passed = list(enumerate(args)) + list(kwargs.items())  # (position or keyword, value)
        before = {k: a.detach().clone() for k, a in passed if type(a) is torch.Tensor}
        containers = {k: _snapshot(a) for k, a in passed if type(a) in (list, dict)}
        self.arg_refs.append({id(a): i for i, a in enumerate(args) if type(a) in (list, dict, tuple)})
        sys.stdout = sys.stderr = _Discard()
        signal.alarm(max(1, int(header.get("timeout", 60))))
        try:
            with torch.set_grad_enabled(bool(header.get("grad", True))):
                value = _do(kind, target, args, kwargs)
        except BaseException as exc:  # noqa: BLE001
            signal.alarm(0)
            self.arg_refs.pop()
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
            enc = self.encoder()
            if isinstance(exc, CellTimeout):
                return {"ok": False, "timeout": True, "error": enc.exception(exc)}, enc
            return {"ok": False, "error": enc.exception(exc)}, enc
        signal.alarm(0)
        self.arg_refs.pop()
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        enc = self.encoder(grad_outputs=kind == "call" and torch.is_grad_enabled() and bool(header.get("grad", True)))
        reply = {"ok": True, "value": enc.encode(value)}
        writeback = []  # arguments the call changed in place (compared by value: .data and .numpy() writes too)
        for k, a in passed:
            if k in before and not (a.shape == before[k].shape and torch.equal(a.detach(), before[k])):
                writeback.append([k, enc.encode(a.detach())])
            elif k in containers and _snapshot(a) != containers[k]:
                writeback.append([k, enc.encode(a)])
        reply["writeback"] = writeback
        reply["gens"] = [enc.encode(g) for g in dec.generators]
        self._send_rng(reply, enc)  # one random stream, as in a kernel
        if enc.grad_outputs:
            self.graphs[header["id"]] = (enc.grad_outputs, dec.leaves, {})
            reply["graph"] = header["id"]
        return reply, enc

    def op_backward(self, header, blobs):
        import torch

        dec = self.decoder(blobs)
        outputs, leaves, previous = self.graphs[header["graph"]]
        grads = dec.decode(header["grads"])
        pairs = [(o, g) for o, g in zip(outputs, grads, strict=False) if g is not None and o.requires_grad]
        signal.alarm(max(1, int(header.get("timeout", 60))))
        sys.stdout = sys.stderr = _Discard()
        try:
            if pairs:
                torch.autograd.backward([o for o, _ in pairs], [g for _, g in pairs], retain_graph=True)
        finally:
            signal.alarm(0)
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        enc = self.encoder()
        out = []
        for i in range(int(header.get("leaves", 0))):
            leaf = leaves.get(i)
            grad = None if leaf is None else leaf.grad
            if grad is not None:
                grad = grad.detach().clone()
                if i in previous:
                    grad, previous[i] = grad - previous[i], grad
                else:
                    previous[i] = grad
            out.append(None if grad is None else enc.encode(grad))
        return {"ok": True, "grads": out}, enc

    def op_set_global(self, header, blobs):
        dec = self.decoder(blobs)
        self.ns[header["name"]] = dec.decode(header["value"])
        return {"ok": True}, None

    def op_set_global_source(self, header, blobs):
        """A stand-in written in a test cell, defined here (its globals are the notebook's, as in a kernel)."""
        defined: dict = {}
        exec(compile(header["source"], "<stand-in>", "exec"), self.ns, defined)
        functions = [v for v in defined.values() if callable(v)]
        if len(functions) != 1:
            raise ValueError("a stand-in's source must define one function")
        self.ns[header["name"]] = functions[0]
        return {"ok": True}, None

    def op_release(self, header, blobs):
        self.graphs.clear()
        return {"ok": True}, None


def _do(kind, target, args, kwargs):
    if kind == "call":
        return target(*args, **kwargs)
    if kind == "new":
        from minibert_course.grading import NEW_ALLOWED

        if target not in NEW_ALLOWED:
            raise ValueError(f"new() builds only {NEW_ALLOWED}")
        import importlib

        module, _, name = target.rpartition(".")
        return getattr(importlib.import_module(module), name)(*args, **kwargs)
    if kind == "getattr":
        return getattr(target, args[0])
    if kind == "setattr":
        setattr(target, args[0], args[1])
        return None
    if kind == "getitem":
        return target[args[0]]
    if kind == "setitem":
        target[args[0]] = args[1]
        return None
    if kind == "len":
        return len(target)
    if kind == "list":
        return list(target)
    if kind == "bool":
        return bool(target)
    if kind == "contains":
        return args[0] in target
    if kind == "str":
        return str(target)[:MAX_STREAM]
    raise ValueError(f"unknown request {kind!r}")


def _snapshot(value):
    """Enough to see whether a list or dict argument was changed by the call (then it goes back to the checker):
    its bytes in `marshal`'s format when it holds builtin values only (C speed, runs no code of the student's);
    else its repr, or for a large nested one the identity and length of every list in it (a call that changes an
    item of such an input in place without changing any length is not seen)."""
    try:
        return marshal.dumps(value, 2)  # (version 2: no back-references, which depend on reference counts)
    except Exception:  # noqa: BLE001 (a value marshal cannot write: an object of the student's, a tensor)
        pass
    try:
        shape = _shape(value)
        return shape if shape[0] > 20_000 else repr(value)
    except Exception:  # noqa: BLE001
        return None


def _shape(value, depth: int = 0):
    if type(value) not in (list, dict, tuple) or depth > 4:
        return [1]
    items = list(value.values()) if type(value) is dict else value
    parts = [_shape(v, depth + 1) for v in items] if items and type(items[0]) in (list, dict, tuple) else []
    return [sum(p[0] for p in parts) if parts else len(items), id(value), len(items), parts]


def _close(*fds: int) -> None:
    """In a process that student code forked: the channel is not its to read or write."""
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


SCRATCH_ROOTS = ("/tmp", "/work")
SCRATCH_KEPT_BYTES = 64 * 2**20


def _scratch_walk(keep: list[str]):
    """Every path under the sandbox's writable folders (tmpfs), not crossing into other mounts or `keep`."""
    for root in SCRATCH_ROOTS:
        try:
            device = os.lstat(root).st_dev
        except OSError:
            continue
        for folder, dirs, files in os.walk(root, topdown=True):
            dirs[:] = [d for d in dirs if os.path.join(folder, d) not in keep
                       and _same_device(os.path.join(folder, d), device)]
            for name in dirs + files:
                yield os.path.join(folder, name)


def _same_device(path: str, device: int) -> bool:
    try:
        return os.lstat(path).st_dev == device
    except OSError:
        return False


def _scratch_snapshot(keep: list[str]) -> dict:
    """path -> (kind, mode, identity, content) of /tmp and /work; file contents up to 64 MiB in all (beyond that a
    file is kept only by identity: a change to it is not undone)."""
    import stat

    snap, total = {}, 0
    for path in _scratch_walk(keep):
        try:
            st = os.lstat(path)
            ident = (st.st_ino, st.st_size, st.st_mtime_ns)
            if stat.S_ISDIR(st.st_mode):
                snap[path] = ("dir", st.st_mode & 0o7777, ident, None)
            elif stat.S_ISLNK(st.st_mode):
                snap[path] = ("link", 0, ident, os.readlink(path))
            elif stat.S_ISREG(st.st_mode):
                data = None
                if total + st.st_size <= SCRATCH_KEPT_BYTES:
                    with open(path, "rb") as f:
                        data = f.read()
                    total += len(data)
                snap[path] = ("file", st.st_mode & 0o7777, ident, data)
        except OSError:
            continue
    return snap


def _scratch_restore(snap: dict, keep: list[str]) -> None:
    import shutil
    import stat

    for path in sorted(_scratch_walk(keep), key=len, reverse=True):  # what the test's copy made: removed
        try:
            st = os.lstat(path)
            old = snap.get(path)
            same = old is not None and old[2] == (st.st_ino, st.st_size, st.st_mtime_ns) and (
                (old[0] == "dir") == stat.S_ISDIR(st.st_mode))
            if not same and old is not None and old[0] == "file" and old[3] is None:
                continue  # a large file of the notebook's, kept by identity only: left as it is
            if not same and old is not None and old[0] == "dir" and stat.S_ISDIR(st.st_mode):
                os.chmod(path, old[1])  # a folder of the notebook's: kept (its contents are checked one by one)
            elif not same:
                if stat.S_ISDIR(st.st_mode) and not stat.S_ISLNK(st.st_mode):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)
        except OSError:
            continue
    for path, (kind, mode, _, data) in sorted(snap.items()):  # and what it removed or changed: put back
        try:
            if os.path.lexists(path):
                continue
            if kind == "dir":
                os.makedirs(path, mode=mode, exist_ok=True)
            elif kind == "link":
                os.symlink(data, path)
            elif data is not None:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
        except OSError:
            continue


def _remove_sysv_ipc() -> None:
    """Shared memory, semaphores and message queues live in the sandbox's IPC namespace until removed."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return
    for kind, remove in (("shm", lambda i: libc.shmctl(i, 0, None)), ("msg", lambda i: libc.msgctl(i, 0, None)),
                         ("sem", lambda i: libc.semctl(i, 0, 0))):
        try:
            with open(f"/proc/sysvipc/{kind}", encoding="ascii") as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 1 and fields[1].isdigit():
                remove(int(fields[1]))


def _repr(value) -> str:
    try:
        return repr(value)[:MAX_STREAM]
    except Exception:  # noqa: BLE001
        return "(a value whose repr failed)"


def _str(exc) -> str:
    try:
        return str(exc)
    except Exception:  # noqa: BLE001
        return ""


def main() -> int:
    # The channel: requests on the old stdin, results on the old stdout; cells see /dev/null on fds 0 and 1.
    requests, results = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(open(os.devnull, "wb"))  # noqa: SIM115
    sys.__stderr__ = sys.stderr
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)  # minibert_course.wire sits next to this file in the judge package
    return Worker(requests, results).run()


if __name__ == "__main__":
    sys.exit(main())
