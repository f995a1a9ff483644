"""The checker: where every test cell of a graded notebook runs, visible and hidden, and where verdicts are decided.

    python -I -m minibert_course.checker      (started by minibert_course.sealed.run_cells; JSON on stdin/stdout)

No student code ever runs in this process. The given and answer cells run in the sandboxed worker
(`minibert_course.judge`); this process runs the test cells (and the given cells they build on) in a namespace
where each name that the exercise defines (`BertEmbeddings`, `mask_tokens`, `quiz`, ...) is fetched from the worker
as data (a tensor, a dict, a course dataclass) or as a `Remote` proxy of a worker object. Using a proxy is a
request to the worker: calling it sends the arguments as data and gets the result back as data (`wire`), reading an
attribute or an item does the same. What the worker sends is decoded by `wire.Decoder` only: nothing is unpickled,
imported or executed. So a test reads as it does in the student's kernel, where the visible tests run unchanged.

What a proxy carries over so that tests mean the same thing in both places:
- the global torch random state (sent when the checker's changed since it was last sent: `torch.manual_seed(5)`
  before a call in training mode draws the same dropout masks there as the reference draws here);
- grad mode (`torch.no_grad()` blocks), and autograd itself: a call with inputs that require grad, or whose result
  does, becomes one node of this process's graph (`RemoteFunction`); `.backward()` here sends the output gradients
  to the worker, which back-propagates through the student's code and returns the input gradients;
- mutation of arguments: a tensor changed in place, a list or dict changed, a generator or `random.Random`
  advanced, come back and are written into the checker's objects;
- exceptions: rebuilt from type name, builtin bases and message (`wire.remote_exception`).
A test that swaps a name inside the student's code for a stand-in (a reference `corrupt` while `mask_tokens` is
graded) uses `minibert_course.grading.stand_in`, which sets the name in the worker to a callback into this process.

Each test cell talks to its own copy of the worker, forked after every given and answer cell has run
(`Connection.fork`): what student code keeps while a test runs (a hidden input in a global, a file, a process, System
V IPC) ends with the copy, so no later test's message can show it. Processes are stopped from outside the sandbox,
where the submission cannot hide them (`kill_strays`); the worker puts /tmp and /work back as the cells left them.
A test that keeps an object the student's code made in its copy, for a later cell to use, keeps the copy too.

A copy that dies or does not answer in time fails its test, with the reason, and flags the submission for review; the
next test gets a fresh copy. A reply that breaks the format, or a worker that dies during the cells, is handled the
same way, but the worker is restarted and the cells before are replayed. Nothing else costs points: there is no
static screen here.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import dataclasses
import io
import json
import os
import signal
import subprocess
import sys
import time
import traceback

from minibert_course import streams, wire

MAX_CALLS_PER_TEST = 200_000
MAX_STREAM = 20_000


class WorkerLost(BaseException):
    """The worker died, did not answer in time, or broke the message format."""


class CopyLost(WorkerLost):
    """The test's copy of the worker (a fork) ended or ran out of time: the test fails; the notebook's state (the
    process the copies are made from) is intact, so the next test runs without a replay."""


class GraderFault(BaseException):
    """A limit or a broken reply during a test: fails the test with the reason (a BaseException, so that a test's
    own `except Exception` cannot turn it into a pass)."""


# ---- the connection to the worker ----------------------------------------------------------------------------


class Connection:
    def __init__(self, start, setup: dict):
        self.start_worker = start
        self.setup = setup
        self.proc = None
        self.reader = None
        self.callbacks: dict[int, object] = {}
        self.next_id = 1
        self.deadline: float | None = None
        self.last_rng = None
        self.calls = 0
        self.sent: dict[int, tuple] = {}  # id of a large argument -> (key, fingerprint, the object)
        self.sent_keys = 0  # keys only grow: a key is never reused for another object
        self.arg_stack: list[list] = []  # the arguments of the requests in progress (callbacks refer to them)
        self.zygote: int | None = None  # the worker's pid here: the process each test's copy is forked from
        self.copy = False  # requests go to a test's copy
        self.copy_id: int | None = None  # the fork request that made it
        self.epoch = 0  # 0: the worker itself; n: the n-th copy (student objects made in a copy die with it)
        self.copies = 0
        self.saved: tuple | None = None
        self.clean = False  # the channel drained and no request to the worker since (the next fork needs no reset)

    def start(self, deadline: float, meanwhile=None) -> None:
        """Start the worker; `meanwhile` runs here while the worker starts (both import torch: on two cores the
        imports overlap instead of adding up)."""
        self.proc = self.start_worker()
        self.reader = wire.Reader(self.proc.stdout.fileno())
        self.outbox = wire.Outbox(self.proc.stdin.fileno())
        self.last_rng = None
        self.sent = {}
        rid = self.next_id
        self._send({"op": "setup", **self.setup, "id": rid}, [], deadline)
        if meanwhile is not None:
            meanwhile()
        self.next_id += 1
        reply, _ = self._await(rid, deadline)
        self.copy, self.epoch, self.clean = False, 0, False
        self.zygote = _find_process(self.proc.pid, reply.get("pid"))  # (no student code has run yet)

    def stop(self) -> None:
        if self.proc is not None:
            from minibert_course.sealed import _kill

            _kill(self.proc)
            self.proc = None

    def exit_code(self):
        if self.proc is None:
            return None
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return None
        return self.proc.returncode

    def request(self, header: dict, enc: wire.Encoder | None = None, deadline: float | None = None):
        """Send one request and wait for its reply, answering the worker's callbacks meanwhile."""
        if self.proc is None:
            raise WorkerLost("the grading worker is not running")
        rid = self.next_id
        self.next_id += 1
        header = dict(header, id=rid)
        self.clean = self.clean and self.copy
        self._send(header, enc.blobs if enc is not None else [], deadline)
        return self._await(rid, deadline)

    def _deadline(self, deadline: float | None) -> float:
        """The request's own deadline, else the test's, else two minutes from now (set-up and housekeeping)."""
        return deadline or self.deadline or time.monotonic() + 120

    def _send(self, header: dict, blobs: list, deadline: float | None = None) -> None:
        """Write one request; a worker that ended, or stopped reading until the deadline, is lost (a test's copy
        only fails its test)."""
        try:
            self.outbox.send(header, blobs, self._deadline(deadline))
        except TimeoutError:
            if self.copy:
                self._copy_lost("the student's code stopped the grader's requests from reaching it")
            raise WorkerLost("the grading worker stopped reading the grader's requests") from None
        except OSError:  # (BrokenPipeError among them)
            raise WorkerLost(self._died()) from None

    def _finish_cut_write(self) -> None:
        """A request cut short (its copy stopped reading) is finished once the copy is stopped: the worker reads
        and skips it, and the messages after it are read as messages again."""
        if self.outbox.rest:
            self.kill_strays()
            try:
                self.outbox.flush(time.monotonic() + 30)
            except (TimeoutError, OSError):
                raise WorkerLost("the grading worker stopped reading the grader's requests") from None

    def _await(self, rid: int, deadline: float | None):
        deadline = self._deadline(deadline)
        while True:
            got = self._next(deadline)
            if got is None:
                if self.copy:
                    self._copy_lost("the student's code ran past the time limit and was stopped")
                raise WorkerLost("the student's code ran past the time limit and was stopped")
            reply, blobs = got
            if reply.get("op") == "callback":
                self._callback(reply, blobs)
                continue
            if reply.get("op") == "ended":
                if self.copy and reply.get("fork") == self.copy_id:
                    self._copy_lost("the student's code ended its process during this test (os._exit, a crash, or "
                                    "a memory or process limit)")
                continue  # (the worker's word that an earlier copy ended, read late)
            if type(reply.get("id")) is int and reply["id"] < rid:
                continue  # the late answer to a request that was given up on (its time limit passed)
            if reply.get("id") != rid:
                if os.environ.get("MINIBERT_CHECKER_DEBUG"):
                    print("unexpected reply", rid, {k: str(v)[:300] for k, v in reply.items()}, file=sys.stderr)
                raise WorkerLost("the grading worker answered a request that was not asked (its channel was written "
                                 "by the submission)")
            return reply, blobs

    # ---- a copy of the worker per test ---------------------------------------------------------------------
    def fork(self) -> dict:
        """The next requests go to a fresh copy of the worker (made by fork, after every cell has run): what the
        student's code keeps during a test, in memory, files or other processes, ends with the test."""
        if self.copy:
            return {}
        if not self.clean:  # (what the cells, or student code called between tests, wrote on the channel: skipped)
            self.kill_strays()
            self._sync()
        self.saved = (dict(self.sent), self.last_rng)
        reply, _ = self.request({"op": "fork"}, deadline=time.monotonic() + 60)
        if not reply.get("ok"):
            raise WorkerLost("the grading worker could not make a copy for the test")
        self.copy, self.copy_id = True, reply["id"]
        self.copies += 1
        self.epoch = self.copies
        return reply

    def unfork(self) -> None:
        """End the test's copy; back to the worker, with its files as the notebook's cells left them."""
        if not self.copy:
            return
        self.copy = False
        if self.outbox.rest:  # (the copy stopped reading: it is stopped, the request finished for the worker)
            self._finish_cut_write()
        else:
            self._send({"op": "exit"}, [], time.monotonic() + 5)
        if not self._wait_ended(time.monotonic() + 5):  # a copy still busy (a call the test gave up on)
            self.kill_strays()
            if not self._wait_ended(time.monotonic() + 10):
                raise WorkerLost("the grading worker did not end a test's copy")
        self._back_to_worker()

    def _copy_lost(self, why: str):
        self.copy = False
        self._back_to_worker()
        raise CopyLost(why)

    def _back_to_worker(self) -> None:
        self.kill_strays()
        self._finish_cut_write()
        self.epoch = 0
        self.sent, self.last_rng = self.saved
        self._sync()
        self.clean = True

    def _sync(self) -> None:
        """Reset, and skip everything the worker's channel holds up to the answer: a process that is gone (a test's
        copy, or the cells before the first test) may have written replies to requests not sent yet, carrying what
        it saw; the nonce is drawn after it ended, so only the worker can echo it."""
        import secrets

        nonce = secrets.token_hex(16)
        rid = self.next_id
        self.next_id += 1
        deadline = time.monotonic() + 60
        self._send({"op": "reset", "nonce": nonce, "id": rid}, [], deadline)
        while True:
            got = self._next(deadline)
            if got is None:
                raise WorkerLost("the grading worker did not answer after a test")
            if got[0].get("nonce") == nonce and got[0].get("id") == rid:
                return

    def _wait_ended(self, deadline: float) -> bool:
        while True:
            got = self._next(deadline)
            if got is None:
                return False
            if got[0].get("op") == "ended" and got[0].get("fork") == self.copy_id:
                return True  # (anything else is what the copy wrote before it ended)

    def _next(self, deadline: float):
        """The next message from the worker, or None when the deadline passed; a worker that ended or broke the
        format is lost."""
        try:
            got = self.reader.read(deadline)
        except TimeoutError:
            return None
        except wire.WireError as exc:
            raise WorkerLost(f"the grading worker sent a malformed reply ({exc})") from None
        if got is None:
            raise WorkerLost(self._died())
        return got

    def kill_strays(self) -> None:
        """Stop every process of the submission but the worker: from outside the sandbox, where it cannot hide."""
        if self.proc is None or self.zygote is None:
            return
        for _ in range(200):
            table = _process_table()
            keep, p = set(), self.zygote
            while p in table and p != self.proc.pid:  # the worker and the sandbox's processes above it
                keep.add(p)
                p = table[p][0]
            roots = [self.proc.pid] + [q for q, (parent, _) in table.items()  # (orphans come to this process,
                                       if parent == os.getpid() and q != self.proc.pid]  # a subreaper)
            strays = [q for r in roots for q in _descendants(table, r) + ([r] if r != self.proc.pid else [])
                      if q not in keep and q != self.zygote and table[q][1] != "Z"]
            if not strays:
                return
            for q in strays:
                with contextlib.suppress(OSError):
                    os.kill(q, signal.SIGKILL)
            for q in strays:
                with contextlib.suppress(OSError):
                    os.waitpid(q, os.WNOHANG)
            time.sleep(0.01)
        raise WorkerLost("processes the submission started could not be stopped")

    def _died(self) -> str:
        code = self.exit_code()
        return (f"the grading worker ended (exit code {code}: os._exit, a crash, or a memory or process limit)")

    def _callback(self, reply, blobs):
        import torch

        fn = self.callbacks.get(reply.get("cb"))
        dec = self.decoder(blobs)
        try:
            self._take_rng(reply, dec)
        except wire.WireError:
            pass
        outer = self.arg_stack[-1] if self.arg_stack else []

        def ref(value, decoder):  # an argument of the call in progress, handed back: the checker's own object
            if type(value[1]) is not int or not 0 <= value[1] < len(outer):
                raise wire.WireError("a reference to an argument that was not passed")
            return outer[value[1]]

        dec.module = ref
        enc = self.encoder()
        try:
            if fn is None:
                raise wire.WireError("a callback that does not exist")
            args = dec.decode(reply["args"])
            kwargs = dec.decode(reply["kwargs"])
            if type(args) is not list or type(kwargs) is not dict or not all(type(k) is str for k in kwargs):
                raise wire.WireError("malformed callback arguments")
            before = {i: repr(a) for i, a in enumerate(args)  # (the checker's own objects need no write-back)
                      if type(a) in (list, dict) and not any(a is o for o in outer)}
            value = fn(*args, **kwargs)
            out = {"op": "callback_result", "ok": True, "value": enc.encode(value),
                   "writeback": [[i, enc.encode(args[i])] for i, r in before.items() if repr(args[i]) != r],
                   "gens": [enc.encode(g) for g in dec.generators]}
        except (GraderFault, WorkerLost) as exc:  # a limit hit inside a stand-in: not for student code to catch
            raise WorkerLost(f"during a stand-in: {exc}") from None
        except BaseException as exc:  # noqa: BLE001 (the stand-in's failure goes back to the caller)
            enc = self.encoder()
            out = {"op": "callback_result", "ok": False, "error": enc.exception(exc)}
        state = torch.get_rng_state()
        if self.last_rng is None or not torch.equal(state, self.last_rng):
            out["rng"] = enc.blob(wire._tensor_blob(state))
        self.last_rng = state
        self._send(out, enc.blobs)

    # ---- values ---------------------------------------------------------------------------------------------
    def encoder(self) -> wire.Encoder:
        return wire.Encoder(handle=None, other=self._other)

    def _other(self, obj, enc):
        import torch
        from torch import nn

        if type(obj) is Remote:
            if object.__getattribute__(obj, "_epoch") not in (0, self.epoch):
                raise GraderFault("an object your code made during an earlier test is gone: each test runs on its "
                                  "own copy of the notebook's state")
            return ["h", object.__getattribute__(obj, "_id"), "Remote"]
        kinds = {nn.Linear: ("Linear", lambda m: {"in_features": m.in_features, "out_features": m.out_features,
                                                  "bias": m.bias is not None}),
                 nn.LayerNorm: ("LayerNorm", lambda m: {"normalized_shape": tuple(m.normalized_shape), "eps": m.eps,
                                                        "elementwise_affine": m.elementwise_affine}),
                 nn.Embedding: ("Embedding", lambda m: {"num_embeddings": m.num_embeddings,
                                                        "embedding_dim": m.embedding_dim,
                                                        "padding_idx": m.padding_idx}),
                 nn.Dropout: ("Dropout", lambda m: {"p": m.p})}
        if type(obj) in kinds:
            kind, init = kinds[type(obj)]
            params = [[name, enc.encode(p)] for name, p in obj.named_parameters(recurse=False)]
            return ["mod", kind, enc.encode(init(obj)), params, obj.training]
        if callable(obj) and not isinstance(obj, torch.nn.Module):
            cid = len(self.callbacks) + 1
            self.callbacks[cid] = obj
            return ["cb", cid]
        raise wire.WireError(f"a {type(obj).__qualname__} cannot be sent to student code: only data can (tensors, "
                             "numbers, strings, lists, dicts, the course's dataclasses) and functions of the test")

    def decoder(self, blobs) -> wire.Decoder:
        return wire.Decoder(blobs, lambda hid, name: Remote(self, hid, name), DATACLASSES.get)

    def do(self, kind: str, target, args=(), kwargs=None):
        """One operation on a worker object; returns its result as local data or proxies."""
        import torch

        self.calls += 1
        if self.calls > MAX_CALLS_PER_TEST:
            raise GraderFault(f"a test made more than {MAX_CALLS_PER_TEST} requests to the student's code")
        enc = self.encoder()
        header = {"op": "do", "kind": kind, "target": enc.encode(target), "args": self._args(args, enc),
                  "kwargs": enc.encode(dict(kwargs or {})), "grad": torch.is_grad_enabled(),
                  "timeout": max(1, int((self.deadline or time.monotonic() + 60) - time.monotonic()))}
        state = torch.get_rng_state()
        if self.last_rng is None or not torch.equal(state, self.last_rng):
            header["rng"] = enc.blob(wire._tensor_blob(state))
            self.last_rng = state
        self.arg_stack.append(list(args))
        try:
            reply, blobs = self.request(header, enc)
        finally:
            self.arg_stack.pop()
        dec = self.decoder(blobs)
        try:
            if not reply.get("ok"):
                if reply.get("timeout"):
                    raise GraderFault("the student's code ran past the time limit of this test")
                raise _error(dec.decode(reply["error"]))
            value = dec.decode(reply["value"])
            self._take_rng(reply, dec)
            self._write_back(args, kwargs or {}, reply.get("writeback", []), dec)
            gens = reply.get("gens", [])
            if len(gens) != len(enc.generators):
                raise wire.WireError("generators came back in another number")
            for local, state_value in zip(enc.generators, gens, strict=True):
                wire.set_generator_state(local, state_value, dec)
        except wire.WireError as exc:
            raise GraderFault(f"the student's code returned something that is not data ({exc})") from None
        if reply.get("graph") is not None and torch.is_grad_enabled():
            outputs = [dec.leaves[i] for i in sorted(dec.leaves)]
            value = _attach_graph(self, reply["graph"], value, outputs, enc.leaves)
        return value

    def _take_rng(self, reply, dec):
        """The global random stream continues where the student's code left it, as in one kernel (a test that
        seeds, calls the student's encoder, then draws its own dropout mask gets the draws that follow), if drawing
        can reach the state it sent (`streams`): a built one would let the submission choose the test's inputs."""
        import torch

        if reply.get("rng") is None:
            self.last_rng = torch.get_rng_state()  # the worker's state did not move: both still agree
            return
        state = wire._tensor_from(dec.blob(reply["rng"]))
        if state.dtype != torch.uint8 or state.shape != torch.get_rng_state().shape:
            raise wire.WireError("a random state of the wrong size")
        if not streams.torch_state_follows(self.last_rng, state):
            self.last_rng = None  # a state no drawing reaches is not taken; the next request sends the checker's
            return
        torch.set_rng_state(state)
        self.last_rng = state

    def _args(self, args, enc):
        """Arguments, with lists and dicts of some size sent once: a later call with the same object, its items
        not rebound, refers to the worker's copy (the student's changes to it come back as write-backs, so both
        copies stay equal). A test that changes such an input in place, deep inside, must pass a new object."""
        items = []
        for a in args:
            if type(a) in (list, dict):
                shallow = (len(a), tuple(map(id, a.values() if type(a) is dict else a)))
                known = self.sent.get(id(a))
                if known is not None and known[1] == shallow and known[2] is a:
                    items.append(["cached", known[0]])
                    continue
                if _size(a) > 64:
                    self.sent_keys += 1
                    key = self.sent_keys
                    self.sent[id(a)] = (key, shallow, a)
                    items.append(["store", key, enc.encode(a)])
                    continue
            items.append(enc.encode(a))
        return ["l", items]

    def _write_back(self, args, kwargs, writeback, dec):
        import torch

        args = list(args)
        for item in writeback:
            i, enc_value = item
            if type(i) is int and 0 <= i < len(args):
                old = args[i]
            elif type(i) is str and i in kwargs:
                old = kwargs[i]
            else:
                raise wire.WireError("a write-back to an argument that was not passed")
            new = dec.decode(enc_value)
            if type(old) is torch.Tensor and type(new) is torch.Tensor and new.shape == old.shape \
                    and new.dtype == old.dtype:
                with torch.no_grad():
                    old.copy_(new)
            elif type(old) is list and type(new) is list:
                old[:] = new
                self.sent.pop(id(old), None)
            elif type(old) is dict and type(new) is dict:
                old.clear()
                old.update(new)
                self.sent.pop(id(old), None)
            else:
                raise wire.WireError("a write-back of another type")

    def backward(self, graph: int, grads: list, n_leaves: int):
        enc = self.encoder()
        header = {"op": "backward", "graph": graph, "grads": enc.encode(grads), "leaves": n_leaves,
                  "timeout": max(1, int((self.deadline or time.monotonic() + 60) - time.monotonic()))}
        reply, blobs = self.request(header, enc)
        dec = self.decoder(blobs)
        if not reply.get("ok"):
            raise _error(dec.decode(reply["error"]))
        out = reply.get("grads", [])
        if type(out) is not list or len(out) != n_leaves:
            raise GraderFault("the student's code returned gradients in another number")
        return [None if g is None else dec.decode(g) for g in out]

    def new(self, class_path: str, args, kwargs):
        return self.do("new", class_path, args, kwargs)

    def set_global_source(self, name: str, source: str) -> None:
        reply, blobs = self.request({"op": "set_global_source", "name": name, "source": source})
        if not reply.get("ok"):
            raise _error(self.decoder(blobs).decode(reply["error"]))

    def set_global(self, name: str, value) -> None:
        enc = self.encoder()
        reply, blobs = self.request({"op": "set_global", "name": name, "value": enc.encode(value)}, enc)
        if not reply.get("ok"):
            raise _error(self.decoder(blobs).decode(reply["error"]))

    def get(self, names: list[str]) -> dict:
        reply, blobs = self.request({"op": "get", "names": names})
        dec = self.decoder(blobs)
        if not reply.get("ok"):
            return {name: Unreadable(name, "the grading worker could not give its value") for name in names}
        out = {}
        for name, enc_value in reply.get("values", []):
            if name in names:
                try:
                    out[name] = dec.decode(enc_value)
                except wire.WireError as exc:
                    out[name] = Unreadable(name, str(exc))
        return out


def _process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state) of every process this one can see."""
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat[stat.rindex(b")") + 2:].split()
            table[int(name)] = (int(fields[1]), fields[0].decode("ascii", "replace"))
    return table


def _descendants(table: dict, root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    out, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def _find_process(root: int, inner_pid) -> int | None:
    """The pid here of the process that is `inner_pid` in its PID namespace, among `root` and its descendants."""
    if type(inner_pid) is not int:
        return None
    table = _process_table()
    for pid in [root] + _descendants(table, root):
        try:
            with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
                line = next((x for x in f if x.startswith("NSpid:")), "")
        except OSError:
            continue
        if line.split()[-1:] == [str(inner_pid)]:
            return pid
    return None


def _become_subreaper() -> None:
    """Orphans of the worker (a process the submission started, then left) become this process's children, so that
    `kill_strays` finds them also without bubblewrap."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def _size(value, depth: int = 0) -> int:
    """Items in a nested list or dict, roughly (to decide what is worth sending once)."""
    if depth > 3 or type(value) not in (list, dict, tuple):
        return 1
    items = value.values() if type(value) is dict else value
    return sum(_size(v, depth + 1) for v in items) if depth < 2 else len(value)


def _error(exc):
    return exc if isinstance(exc, BaseException) else GraderFault("a malformed error from the student's code")


DATACLASSES: dict[str, type] = {}


def register_dataclasses(ns: dict | None = None) -> None:
    """The course's dataclasses by class name: those the reference package defines, and those the given cells do."""
    import importlib
    import pkgutil

    import minibert

    for info in [] if DATACLASSES else pkgutil.iter_modules(minibert.__path__):
        try:
            mod = importlib.import_module(f"minibert.{info.name}")
        except Exception:  # noqa: BLE001 (a module that needs an optional dependency)
            continue
        for obj in vars(mod).values():
            if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == mod.__name__:
                DATACLASSES.setdefault(obj.__qualname__, obj)
    for value in (ns or {}).values():
        if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == "__main__":
            DATACLASSES[value.__qualname__] = value


class Unreadable:
    """A student value that could not be read as data (over a cap, malformed): any use of it fails the test."""

    def __init__(self, name, why):
        self._why = f"{name}: {why}"

    def __getattr__(self, item):
        raise GraderFault(f"the answer {self._why}")

    def __call__(self, *a, **k):
        raise GraderFault(f"the answer {self._why}")


class Remote:
    """A worker object seen from the checker. Every use is a request; the result is data or another Remote.
    What cannot be forwarded (arithmetic, comparison with `==`, hashing by value) raises TypeError: a test must
    compare data, never objects the student made."""

    __slots__ = ("_conn", "_id", "_type", "_epoch")

    def __init__(self, conn: Connection, hid: int, type_name: str):
        object.__setattr__(self, "_conn", conn)
        object.__setattr__(self, "_id", hid)
        object.__setattr__(self, "_type", type_name)
        object.__setattr__(self, "_epoch", conn.epoch)  # made in the worker (0) or in a test's copy

    def _do(self, kind, *args, **kwargs):
        return object.__getattribute__(self, "_conn").do(kind, self, args, kwargs)

    def __call__(self, *args, **kwargs):
        return object.__getattribute__(self, "_conn").do("call", self, args, kwargs)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._do("getattr", name)

    def __setattr__(self, name, value):
        self._do("setattr", name, value)

    def __getitem__(self, key):
        return self._do("getitem", key)

    def __setitem__(self, key, value):
        self._do("setitem", key, value)

    def __len__(self):
        n = self._do("len")
        if type(n) is not int or n < 0:
            raise GraderFault("len() of a student object did not give a non-negative int")
        return n

    def __iter__(self):
        items = self._do("list")
        if type(items) is not list:
            raise GraderFault("iterating a student object did not give a list")
        return iter(items)

    def __contains__(self, item):
        return self._do("contains", item) is True

    def __bool__(self):
        return self._do("bool") is True

    def __repr__(self):
        return f"<{object.__getattribute__(self, '_type')} made by your code>"

    __str__ = __repr__


def _attach_graph(conn, graph: int, value, outputs: list, leaves: list):
    """Put a RemoteFunction node between the call's inputs (that require grad) and its outputs."""
    import torch

    if not outputs:
        return value
    anchor = torch.zeros((), requires_grad=True)  # so that the outputs require grad even without input leaves
    plain = [t.detach() for t in outputs]
    new = RemoteFunction.apply(conn, graph, plain, len(leaves), anchor, *leaves)
    new = new if isinstance(new, tuple) else (new,)
    mapping = {id(old): fresh for old, fresh in zip(outputs, new, strict=True)}
    return _substitute(value, mapping)


def _substitute(value, mapping):
    if id(value) in mapping:
        return mapping[id(value)]
    t = type(value)
    if t is list:
        return [_substitute(v, mapping) for v in value]
    if t is tuple:
        return tuple(_substitute(v, mapping) for v in value)
    if t is dict:
        return {k: _substitute(v, mapping) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            object.__setattr__(value, f.name, _substitute(getattr(value, f.name), mapping))
    return value


def _remote_function():
    import torch

    class RemoteFunction(torch.autograd.Function):
        """One call into student code as a node of the checker's autograd graph."""

        @staticmethod
        def forward(ctx, conn, graph, outputs, n_leaves, anchor, *leaves):
            ctx.conn, ctx.graph, ctx.n_leaves = conn, graph, n_leaves
            ctx.shapes = [(t.shape, t.dtype) for t in leaves]
            return tuple(t.clone() for t in outputs)

        @staticmethod
        def backward(ctx, *grad_outputs):
            grads = ctx.conn.backward(ctx.graph, list(grad_outputs), ctx.n_leaves)
            checked = []
            for g, (shape, dtype) in zip(grads, ctx.shapes, strict=True):
                if g is not None and (type(g) is not torch.Tensor or g.shape != shape or g.dtype != dtype):
                    raise GraderFault("the student's code returned a gradient of another shape or dtype")
                checked.append(g)
            return (None, None, None, None, None, *checked)

    return RemoteFunction


class _Lazy:
    def __getattr__(self, name):
        global RemoteFunction
        RemoteFunction = _remote_function()
        return getattr(RemoteFunction, name)


RemoteFunction = _Lazy()


# ---- which cells run here, and which names come from the worker ---------------------------------------------


def top_level_bindings(source: str) -> tuple[set[str], set[str]]:
    """(names a cell binds at top level other than by import, names it binds by import)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set(), set()
    bound, imported = set(), set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            imported |= {(a.asname or a.name).split(".")[0] for a in node.names}
        else:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    bound.add(sub.id)
                elif isinstance(sub, (ast.FunctionDef, ast.ClassDef)):
                    break
    return bound, imported


def loaded_names(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def student_dependent_given(cells: list[dict]) -> dict[int, list[str]]:
    """Given cells' definitions that use the exercise's names (a tokenizer class built on the student's WordPiece,
    a pair builder that calls the student's sampler): per given cell, the names it binds that depend on student code.

    Their code is the instructor's, but what they compute is the student's anyway, so the tests use the worker's
    copies (one request per use instead of one per inner call of student code, and the same objects as in a kernel).
    Definitions that use no student code stay the checker's own: a test may compute expected values with them."""
    exposed = {n for c in cells if c["kind"] == "student" for n in c.get("exposes", [])}
    defs: dict[str, tuple[int, set[str]]] = {}
    for i, c in enumerate(cells):
        if c["kind"] != "given":
            continue
        try:
            tree = ast.parse(c["source"])
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                loads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
                defs[node.name] = (i, loads)
    dependent: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, (_, loads) in defs.items():
            if name not in dependent and loads & (exposed | dependent):
                dependent.add(name)
                changed = True
    out: dict[int, list[str]] = {}
    for name in sorted(dependent - exposed):
        out.setdefault(defs[name][0], []).append(name)
    return out


def checker_given_cells(cells: list[dict]) -> set[int]:
    """Given cells that the checker runs too: exported ones (the module's definitions and imports) and those that
    bind a name a test cell, or another such given cell, reads."""
    needed: set[int] = set()
    wanted: set[str] = set()
    for i in range(len(cells) - 1, -1, -1):
        c = cells[i]
        if c["kind"] == "test":
            wanted |= loaded_names(c["source"])
        elif c["kind"] == "given":
            bound, imported = top_level_bindings(c["source"])
            if c["source"].lstrip().startswith("#| export") or (bound | imported) & wanted:
                needed.add(i)
                wanted |= loaded_names(c["source"])
    return needed


# ---- running a notebook --------------------------------------------------------------------------------------


class Run:
    def __init__(self, request: dict):
        from minibert_course.sealed import Sandbox

        self.cells = request["cells"]
        self.cell_timeout = int(request.get("cell_timeout", 120))
        self.deadline = time.monotonic() + int(request.get("total_timeout", 900))
        sandbox = Sandbox(**request.get("sandbox", {}))
        if request.get("bubblewrap") is False:
            sandbox.works = False
        package = request["package"]
        self.sandbox_text = sandbox.describe()
        worker_path = "/judge" if sandbox.works else package
        from pathlib import Path

        shared = request.get("sandbox", {}).get("shared")
        self.conn = Connection(lambda: sandbox.start(Path(package)),
                               {"path": [worker_path], "preload": request.get("preload", []),
                                "isolated": sandbox.works, "keep": [shared] if shared else []})
        self.later_free = _later_free_names(self.cells)
        self.in_checker = checker_given_cells(self.cells)
        self.dependent = student_dependent_given(self.cells)
        self.flags: list[str] = []
        self.problems: list[str] = []
        self.results: list[dict] = []
        self.done: list[int] = []  # worker cells run so far (replayed after a restart)
        self.snapshots: dict[int, dict] = {}  # answer cell -> the exercise's names after it ran
        self.at = 0  # the cell the checker is running
        self.restarts = 0
        self.noted_threads = False

    def start(self) -> None:
        self.conn.start(min(self.deadline, time.monotonic() + 120), meanwhile=register_dataclasses)
        self.ns = {"__name__": "__main__", "__builtins__": builtins}

    def replay(self, upto: int) -> bool:
        """After the worker was lost: a new worker with every worker cell run again (but those that ended a worker),
        and the checker's namespace built again up to cell `upto`."""
        self.restarts += 1
        self.conn.stop()
        if self.restarts > 3 or time.monotonic() > self.deadline:
            return False
        try:
            self.start()
            self.snapshots = {}
            for i in self.done:
                self.worker_exec(i, self.cells[i])
            self.restore_answers({})
            for i in range(upto):
                self.at = i
                self.checker_prepare(i, self.cells[i])
        except (WorkerLost, GraderFault):
            return False
        return True

    def checker_prepare(self, i: int, cell: dict) -> list[dict]:
        """What the checker runs for a non-test cell: a given cell it needs, or the imports of an answer cell."""
        if cell["kind"] == "student" and cell.get("imports"):
            with contextlib.suppress(Exception):  # the instructor's imports, as the solution has them
                exec(compile(cell["imports"], "<imports>", "exec"), self.ns)
        if cell["kind"] == "given" and i in self.in_checker:
            return self.checker_exec(cell)
        return []

    def worker_exec(self, i: int, cell: dict) -> dict:
        self.conn.deadline = min(self.deadline, time.monotonic() + self.cell_timeout + 10)
        reply, _ = self.conn.request({"op": "exec", "source": cell["source"], "timeout": self.cell_timeout})
        names = cell.get("exposes", []) if cell["kind"] == "student" else self.dependent.get(i, [])
        if names:
            # the exercise's names as this cell left them (a later given cell may rebind them, as in a kernel,
            # where the tests in between still see the student's)
            self.snapshots[i] = self.conn.get([n for n in names if not hasattr(builtins, n)])
        return reply

    def refresh_names(self) -> None:
        """The exercise's names in the checker's namespace: from the last answer cell before the running cell."""
        for i in sorted(self.snapshots):
            if i < self.at:
                self.ns.update(self.snapshots[i])

    def checker_exec(self, cell: dict) -> list[dict]:
        from minibert_course import grading

        grading._CONNECTION, grading._SOURCE = self.conn, cell["source"]
        self.conn.calls = 0
        self.conn.deadline = min(self.deadline, time.monotonic() + self.cell_timeout)
        out, err = io.StringIO(), io.StringIO()
        outputs = []
        previous = signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(self.cell_timeout + 5)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                self.refresh_names()
                exec(compile(cell["source"], "<cell>", "exec"), self.ns)
        except WorkerLost:
            raise
        except BaseException as exc:  # noqa: BLE001 (a failing test is an answer, not a crash of the checker)
            tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
            ename = type(exc).__name__
            if isinstance(exc, wire.RemoteError):
                ename = next(c.__name__ for c in type(exc).__mro__ if c.__module__ == "builtins")
            outputs.append({"output_type": "error", "ename": ename, "evalue": str(exc)[:4000],
                            "traceback": [line[:2000] for line in tb if "<cell>" in line or line == tb[-1]][-20:]})
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
            grading._CONNECTION = None
            with contextlib.suppress(WorkerLost):
                self.conn.request({"op": "release"}, deadline=time.monotonic() + 30)
        if cell["kind"] == "given":
            register_dataclasses(self.ns)
        kept = (("stdout", out),) if cell["kind"] == "test" else (("stdout", out), ("stderr", err))
        streams = [{"output_type": "stream", "name": name, "text": buf.getvalue()[:MAX_STREAM]}  # (a test's stderr
                   for name, buf in kept if buf.getvalue()]  # holds warnings that quote its hidden lines: dropped)
        return streams + outputs

    def run(self) -> dict:
        """Every given and answer cell first, in the worker, in order; then the tests, in order, in the checker.
        No student code runs after the first test has begun except when a test calls it (output discarded), so
        nothing a hidden test passed to it can come out in a later cell's output."""
        started = time.perf_counter()
        results: dict[int, dict] = {}
        try:
            self.start()  # (imports the reference package's dataclasses while the worker starts)
            alive = True
        except WorkerLost as exc:
            alive = False
            register_dataclasses()
            self.problems.append(f"the grading worker did not start: {exc}")
        for i, cell in enumerate(self.cells):  # 1. the worker's cells
            if cell["kind"] not in ("given", "student") or not alive:
                continue
            t0 = time.perf_counter()
            try:
                reply = self.worker_exec(i, cell)
                outputs = reply.get("outputs", []) if type(reply.get("outputs")) is list else []
                results[i] = _result(i, cell, bool(reply.get("ok")), [_clean_output(o) for o in outputs][:20],
                                     time.perf_counter() - t0)
                self.done.append(i)
            except (WorkerLost, GraderFault) as exc:
                self._lost(i, cell, exc, results, t0)
                alive = self.replay(0)
        if alive:
            alive = self.restore_answers(results)
        for i, cell in enumerate(self.cells):  # 2. the checker's cells
            kind = cell["kind"]
            if kind in ("markdown", "demo"):
                continue
            t0 = time.perf_counter()
            self.at = i
            if not alive or time.monotonic() > self.deadline:
                if kind == "test" or i not in results:
                    why = "the notebook ran past its time limit" if alive else "the grading worker was lost"
                    results[i] = _result(i, cell, False, [_grader_error("NotRun", f"not run: {why}")], 0)
                continue
            try:
                if kind == "test":
                    self.isolate()
                    outputs = self.checker_exec(cell)
                    passed = not any(o["output_type"] == "error" for o in outputs)
                    results[i] = _result(i, cell, passed, outputs, time.perf_counter() - t0)
                    if not self.copy_needed_later(i):
                        self.conn.unfork()
                else:
                    checker_out = self.checker_prepare(i, cell)
                    if any(o["output_type"] == "error" for o in checker_out) and results.get(i, {}).get("passed"):
                        self.problems.append(f"given cell {i} failed in the checker: "
                                             f"{checker_out[-1].get('ename')}: {checker_out[-1].get('evalue')}")
            except CopyLost as exc:  # the test fails; the worker is intact: no replay
                self._lost(i, cell, exc, results, t0)
            except (WorkerLost, GraderFault) as exc:
                self._lost(i, cell, exc, results, t0)
                alive = self.replay(i + 1)
        self.conn.stop()
        return {"cells": [results[i] for i in sorted(results)], "flags": list(dict.fromkeys(self.flags)),
                "problems": self.problems, "seconds": time.perf_counter() - started, "sandbox": self.sandbox_text}

    def isolate(self) -> None:
        """Run the next test in a copy of the worker (once per worker: a note when threads of the submission's are
        running in it, which a copy cannot stop)."""
        reply = self.conn.fork()
        if type(reply.get("threads")) is int and reply["threads"] > 1 and not self.noted_threads:
            self.noted_threads = True
            self.problems.append(f"the submission's cells left {reply['threads'] - 1} thread(s) running in the "
                                 "grading worker: tests ran in copies of it, but those threads ran beside them")

    def copy_needed_later(self, i: int) -> bool:
        """Whether a later cell uses an object that the student's code made in this test's copy (then the copy is
        kept for the next test: it would be gone otherwise)."""
        if not self.conn.copy:
            return False
        return any(_made_in_copy(self.ns.get(n), self.conn.epoch) for n in self.later_free[i])

    def restore_answers(self, results) -> bool:
        """After the last cell, the worker's globals hold the exercise's names as the answer cells left them: a
        later given cell that imports the chapter's package for its export (the stubs, while grading) must not
        replace the student's functions that other student code calls (in a kernel it gets the student's own)."""
        self.conn.deadline = min(self.deadline, time.monotonic() + 60)
        final: dict = {}
        for i in sorted(self.snapshots):
            if self.cells[i]["kind"] == "student":
                final.update(self.snapshots[i])
        try:
            for name, value in final.items():
                if not isinstance(value, Unreadable):
                    self.conn.set_global(name, value)
        except WorkerLost as exc:
            self.problems.append(f"the grading worker was lost after the last cell: {exc}")
            return self.replay(0)
        except BaseException as exc:  # noqa: BLE001 (a value that cannot go back: the tests see it anyway)
            self.problems.append(f"could not restore an answer's name in the worker: {exc}")
        return True

    def _lost(self, i, cell, exc, results, t0):
        why = str(exc)
        self.flags.append(f"cell {i} ({cell.get('grade_id') or cell['kind']}): {why}")
        self.problems.append(f"cell {i} ({cell.get('grade_id') or cell['kind']}) {why}")
        results[i] = _result(i, cell, False, [_grader_error("CellError", f"this cell: {why}")],
                             time.perf_counter() - t0)


def _later_free_names(cells: list[dict]) -> dict[int, set[str]]:
    """Cell index -> names that some later checker cell reads without binding them itself."""
    out: dict[int, set[str]] = {}
    later: set[str] = set()
    for i in range(len(cells) - 1, -1, -1):
        out[i] = set(later)
        if cells[i]["kind"] in ("test", "given"):
            bound, imported = top_level_bindings(cells[i]["source"])
            later |= loaded_names(cells[i]["source"]) - bound - imported
    return out


def _made_in_copy(value, epoch: int, depth: int = 0) -> bool:
    if type(value) is Remote:
        return object.__getattribute__(value, "_epoch") == epoch
    if depth < 2 and type(value) in (list, tuple, dict):
        items = list(value.values()) if type(value) is dict else value
        return any(_made_in_copy(v, epoch, depth + 1) for v in items[:1000])
    return False


def _alarm(signum, frame):  # noqa: ARG001
    raise GraderFault("the test ran past its time limit")


def _result(i, cell, passed, outputs, seconds):
    return {"index": i, "kind": cell["kind"], "grade_id": cell.get("grade_id"), "passed": passed,
            "outputs": outputs, "seconds": round(seconds, 3)}


def _grader_error(name: str, text: str) -> dict:
    return {"output_type": "error", "ename": name, "evalue": text, "traceback": [f"{name}: {text}"]}


def _clean_output(o) -> dict:
    """A worker output reduced to the fields and types nbformat expects (the worker is not trusted)."""
    if type(o) is not dict:
        return {"output_type": "stream", "name": "stderr", "text": "(a malformed output)\n"}
    kind = o.get("output_type")
    if kind == "stream":
        return {"output_type": "stream", "name": "stderr" if o.get("name") == "stderr" else "stdout",
                "text": str(o.get("text", ""))[:MAX_STREAM]}
    if kind == "execute_result":
        data = o.get("data") if type(o.get("data")) is dict else {}
        return {"output_type": "execute_result", "data": {"text/plain": str(data.get("text/plain", ""))[:MAX_STREAM]},
                "metadata": {}, "execution_count": None}
    tb = o.get("traceback") if type(o.get("traceback")) is list else []
    return {"output_type": "error", "ename": str(o.get("ename", "Error"))[:80],
            "evalue": str(o.get("evalue", ""))[:2000], "traceback": [str(line)[:2000] for line in tb][:20]}


def main() -> int:
    request = json.loads(sys.stdin.read())
    _become_subreaper()
    out = sys.stdout
    sys.stdout = sys.stderr
    if os.environ.get("MINIBERT_CHECKER_PROFILE"):
        import cProfile

        profiler = cProfile.Profile()
        result = profiler.runcall(Run(request).run)
        profiler.dump_stats(os.environ["MINIBERT_CHECKER_PROFILE"])
    else:
        result = Run(request).run()
    out.write(json.dumps(result))
    out.flush()
    sys.stderr.flush()
    os._exit(0)  # (the verdicts are written: skip the interpreter's teardown of torch, a second or so)


if __name__ == "__main__":
    sys.exit(main())
