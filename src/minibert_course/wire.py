"""The data format between the grading worker (student code) and the checker (tests): values that cannot carry code.

Why a format of our own: the checker must never unpickle, import or execute anything the worker sends, so every
message is JSON plus raw binary blobs, and every value has an exact tag. Tensors travel through safetensors, numpy
arrays through `numpy.save(..., allow_pickle=False)`; numbers, strings, lists, tuples, dicts, sets, the course's
dataclasses (by field) and exceptions (type name, builtin bases, message) are rebuilt from their tags. Anything else
(a module, a function, a class, a tensor subclass, a dict subclass) is an opaque handle: a number that only the worker
can resolve. Types are matched exactly (`type(x) is dict`, not `isinstance`), so an object that fakes `__eq__` by
subclassing a data type stays a handle and never reaches a comparison in the checker.

A message is: 4 bytes header length, the JSON header, then for each blob 8 bytes length and the bytes. Both sides
cap sizes (message, blobs, nesting depth, nodes, string and integer length); a value over a cap is refused with
`WireError`, never half-decoded.
"""

from __future__ import annotations

import array
import base64
import builtins
import collections
import contextlib
import dataclasses
import io
import json
import os
import pathlib
import random
import select
import struct
import time

MAX_MESSAGE = 512 * 2**20  # bytes of one message, blobs included
MAX_HEADER = 64 * 2**20  # bytes of its JSON part (bulk data travels in blobs)
MAX_BLOBS = 4096
MAX_DEPTH = 48
MAX_NODES = 2_000_000
MAX_STR = 16 * 2**20
MAX_INT_DIGITS = 4000
MAX_ELEMENTS = 100_000_000
_INT_LIMIT = 10**MAX_INT_DIGITS

_EXCEPTIONS = {name: obj for name, obj in vars(builtins).items()
               if isinstance(obj, type) and issubclass(obj, BaseException)}


class WireError(Exception):
    """A message or a value that breaks the format or its caps."""


class Handle:
    """A reference to an object that lives in the worker (decoded on the side that does not own it)."""

    __slots__ = ("id", "type_name")

    def __init__(self, id_: int, type_name: str):
        self.id, self.type_name = id_, type_name


# ---- framing -------------------------------------------------------------------------------------------------


def frame(header: dict, blobs: list[bytes]) -> bytes:
    head = json.dumps(dict(header, blobs=len(blobs)), separators=(",", ":")).encode("utf-8")
    parts = [struct.pack(">I", len(head)), head]
    for blob in blobs:
        parts += [struct.pack(">Q", len(blob)), blob]
    return b"".join(parts)


def send(fd: int, header: dict, blobs: list[bytes]) -> None:
    view = memoryview(frame(header, blobs))
    while view:
        view = view[os.write(fd, view):]


class Outbox:
    """Writes messages with a deadline, so that a reader that stops reading cannot hold the writer (TimeoutError);
    what a write that was cut short left unsent stays in `rest`, to be finished once someone reads the channel
    again, so that the messages after it are still read as messages."""

    def __init__(self, fd: int):
        self.fd = fd
        self.rest = memoryview(b"")

    def send(self, header: dict, blobs: list[bytes], deadline: float) -> None:
        if self.rest:
            raise BrokenPipeError("an earlier message was not finished")
        self.rest = memoryview(frame(header, blobs))
        self.flush(deadline)

    def flush(self, deadline: float) -> None:
        import signal

        alarm = {signal.SIGALRM}  # (the caller's alarm waits: bytes written are always taken off `rest`)
        signal.pthread_sigmask(signal.SIG_BLOCK, alarm)
        os.set_blocking(self.fd, False)
        try:
            while self.rest:
                with contextlib.suppress(BlockingIOError):
                    self.rest = self.rest[os.write(self.fd, self.rest):]
                if self.rest:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise TimeoutError("the reader stopped reading")
                    select.select([], [self.fd], [], min(left, 1.0))
        finally:
            os.set_blocking(self.fd, True)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, alarm)


class Reader:
    """Reads whole messages from a file descriptor, with a deadline; None on end of file."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buf = bytearray()

    def _fill(self, n: int, deadline: float | None) -> bool:
        while len(self.buf) < n:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no reply before the deadline")
                ready, _, _ = select.select([self.fd], [], [], min(left, 1.0))
                if not ready:
                    continue
            chunk = os.read(self.fd, max(1 << 16, min(n - len(self.buf), 1 << 24)))
            if not chunk:
                return False
            self.buf += chunk
        return True

    def _take(self, n: int) -> bytes:
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def read(self, deadline: float | None = None) -> tuple[dict, list[bytes]] | None:
        if not self._fill(4, deadline):
            return None
        (n,) = struct.unpack(">I", self.buf[:4])
        if n > MAX_HEADER:
            raise WireError(f"a message header of {n} bytes")
        if not self._fill(4 + n, deadline):
            return None
        self._take(4)
        try:
            header = json.loads(self._take(n).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, MemoryError) as exc:
            raise WireError(f"a malformed message header ({exc})") from None
        if type(header) is not dict or type(header.get("blobs")) is not int or not 0 <= header["blobs"] <= MAX_BLOBS:
            raise WireError("a message header without a valid blob count")
        blobs, total = [], n
        for _ in range(header["blobs"]):
            if not self._fill(8, deadline):
                return None
            (size,) = struct.unpack(">Q", self.buf[:8])
            total += size
            if total > MAX_MESSAGE:
                raise WireError(f"a message over {MAX_MESSAGE} bytes")
            if not self._fill(8 + size, deadline):
                return None
            self._take(8)
            blobs.append(self._take(size))
        return header, blobs


# ---- values --------------------------------------------------------------------------------------------------


def _torch():
    import torch

    return torch


def _tensor_blob(t) -> bytes:
    from safetensors.torch import save

    return save({"t": t.detach().cpu().contiguous()})


def _tensor_from(blob: bytes):
    from safetensors.torch import load

    try:
        out = load(blob)
    except Exception as exc:  # noqa: BLE001 (safetensors raises its own error types)
        raise WireError(f"a tensor that safetensors cannot read ({exc})") from None
    if set(out) != {"t"}:
        raise WireError("a tensor blob with other entries")
    return out["t"]


class Encoder:
    """Turns a value into tagged JSON and blobs. `handle(obj)` gives the id of an object that is not data (the worker
    registers it; the checker passes None and may only send its own callables through `callback`)."""

    def __init__(self, handle=None, other=None, dataclass_ok=None, grad_outputs: bool = False):
        self.blobs: list[bytes] = []
        self.handle = handle
        self.other = other
        self.track_grad = grad_outputs
        self.dataclass_ok = dataclass_ok or (lambda cls: True)
        self.grad_outputs: list = []  # tensors that require grad, in the order they were encoded (worker side)
        self.leaves: list = []  # checker tensors that require grad, sent as inputs (checker side)
        self.generators: list = []  # generators and Randoms sent, in order (their new states come back)
        self.nodes = 0

    def blob(self, data: bytes) -> int:
        self.blobs.append(bytes(data))
        return len(self.blobs) - 1

    def encode(self, obj, depth: int = 0):  # noqa: C901 (one branch per tag)
        self.nodes += 1
        if depth > MAX_DEPTH or self.nodes > MAX_NODES:
            raise WireError("a value nested too deeply or with too many parts")
        t = type(obj)
        if obj is None:
            return ["N"]
        if t is bool:
            return ["b", obj]
        if t is int:
            text = str(obj) if -_INT_LIMIT < obj < _INT_LIMIT else None
            if text is None:
                raise WireError("an integer with too many digits")
            return ["i", text]
        if t is float:
            return ["f", obj.hex()]
        if t is str:
            if len(obj) > MAX_STR:
                raise WireError("a string that is too long")
            return ["s", obj]
        if t is bytes:
            return ["B", self.blob(obj)]
        if (t is list or t is tuple) and len(obj) > 4 and all(type(x) is int for x in obj):
            try:  # a list of ints (token ids): packed, one blob instead of a node per int
                return ["I", "l" if t is list else "t", base64.b64encode(array.array("q", obj).tobytes()).decode()]
            except OverflowError:
                pass
        if t in (list, tuple, set, frozenset):
            tag = {list: "l", tuple: "t", set: "S", frozenset: "F"}[t]
            return [tag, [self.encode(x, depth + 1) for x in obj]]
        if t is dict or t is collections.OrderedDict:
            tag = "d" if t is dict else "od"
            return [tag, [[self.encode(k, depth + 1), self.encode(v, depth + 1)] for k, v in obj.items()]]
        if t in (pathlib.PosixPath, pathlib.PurePosixPath):
            return ["P", str(obj), t.__name__]
        if obj is Ellipsis:
            return ["E"]
        if t is slice:
            return ["sl", [self.encode(x, depth + 1) for x in (obj.start, obj.stop, obj.step)]]
        if t is complex:
            return ["c", [obj.real.hex(), obj.imag.hex()]]
        base = _data_base(obj)
        if base is not None:  # a subclass of a data type (namedtuple, Counter, IntEnum, ...): the value it holds;
            return self.encode(base, depth)  # its own methods (a lying __eq__) stay behind
        mod = t.__module__ or ""
        if mod.startswith("torch"):
            torch = _torch()
            if t is torch.Tensor or t is torch.nn.Parameter:
                return self._tensor(obj, depth)
            if t is torch.dtype:
                return ["dt", str(obj).replace("torch.", "")]
            if t is torch.device:
                return ["dv", str(obj)]
            if t is torch.Size:
                return ["t", [self.encode(int(x)) for x in obj]]
            if t is torch.Generator:
                self.generators.append(obj)
                return ["G", self.blob(_tensor_blob(obj.get_state())), None]
        if t is random.Random:
            self.generators.append(obj)
            return ["R", random_state(obj), None]
        if mod == "numpy" or mod.startswith("numpy."):
            import numpy as np

            if t is np.ndarray and obj.dtype.kind in "biufc" and not obj.dtype.hasobject:
                buf = io.BytesIO()
                np.save(buf, obj, allow_pickle=False)
                return ["A", self.blob(buf.getvalue())]
            if isinstance(obj, np.generic) and t.__module__ == "numpy" and obj.dtype.kind in "biuf":
                return ["ns", obj.dtype.str, self.encode(obj.item(), depth + 1)]
            if t is np.dtype:
                return ["nd", obj.str]
        if isinstance(obj, BaseException):
            return self.exception(obj)
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type) and self.dataclass_ok(t):
            fields = [[f.name, self.encode(getattr(obj, f.name), depth + 1)] for f in dataclasses.fields(obj)]
            return ["dc", t.__qualname__, fields, self.ref(obj)]
        if self.other is not None:
            return self.other(obj, self)
        if self.handle is None:
            raise WireError(f"a {t.__qualname__} cannot be sent to student code: only data can (tensors, numbers, "
                            "strings, lists, dicts, the course's dataclasses)")
        return ["h", self.handle(obj), t.__qualname__[:80]]

    def ref(self, obj):
        return self.handle(obj) if self.handle is not None else None

    def _tensor(self, obj, depth):
        torch = _torch()
        if obj.layout is not torch.strided or obj.is_complex() or obj.dtype in (torch.qint8, torch.quint8):
            if self.handle is None:
                raise WireError("only dense real tensors can be sent")
            return ["h", self.handle(obj), "Tensor"]
        meta = {"b": self.blob(_tensor_blob(obj)), "rg": bool(obj.requires_grad)}
        if type(obj) is torch.nn.Parameter:
            meta["p"] = True
        if obj.requires_grad:
            if self.track_grad:  # worker: a call's result that can carry a gradient back
                meta["g"] = len(self.grad_outputs)
                self.grad_outputs.append(obj)
            elif self.handle is None:  # checker: an input the worker must treat as a leaf
                meta["g"] = len(self.leaves)
                self.leaves.append(obj)
        grad = getattr(obj, "grad", None) if obj.is_leaf else None
        if grad is not None and type(grad) is torch.Tensor:
            meta["grad"] = self.blob(_tensor_blob(grad))
        return ["T", meta]

    def exception(self, exc: BaseException):
        bases = [c.__name__ for c in type(exc).__mro__ if c.__name__ in _EXCEPTIONS and c is _EXCEPTIONS[c.__name__]]
        try:
            message = str(exc)
        except Exception:  # noqa: BLE001 (a student exception whose __str__ fails)
            message = "(the error's message could not be read)"
        return ["X", type(exc).__qualname__[:80], bases[:8], message[:4000]]


def _data_base(obj):
    """The plain value inside an instance of a subclass of bool/int/float/str/bytes/tuple/list/dict, read with the
    base type's own methods (never the subclass's); None for anything else."""
    t = type(obj)
    if t in (bool, int, float, str, bytes, tuple, list, dict):
        return None
    if isinstance(obj, int) and not isinstance(obj, bool):
        return int.__index__(obj) if not isinstance(obj, bool) else bool(int.__index__(obj))
    if isinstance(obj, float):
        return float.__float__(obj)
    if isinstance(obj, str):
        return str.__str__(obj)
    if isinstance(obj, bytes):
        return bytes.__bytes__(obj) if hasattr(bytes, "__bytes__") else bytes(memoryview(obj))
    if isinstance(obj, tuple):
        return tuple(tuple.__iter__(obj))
    if isinstance(obj, list):
        return list(list.__iter__(obj))
    if isinstance(obj, dict):
        return dict(dict.items(obj))
    return None


class Decoder:
    """Rebuilds values from tagged JSON. `handle(id, type_name)` makes the local stand-in of a remote object;
    `dataclass(name)` gives the local class of a course dataclass (None: keep it as a handle); `callback(id)` makes a
    local callable for a function of the other side."""

    def __init__(self, blobs, handle, dataclass=None, callback=None, module=None):
        self.blobs = blobs
        self.handle = handle
        self.dataclass = dataclass or (lambda name: None)
        self.callback = callback
        self.module = module
        self.leaves: dict[int, object] = {}  # "g" index -> tensor (inputs that require grad / results with a graph)
        self.generators: list = []  # (local object, reference) of generators and Randoms
        self.nodes = 0

    def blob(self, i):
        if type(i) is not int or not 0 <= i < len(self.blobs):
            raise WireError("a reference to a missing blob")
        return self.blobs[i]

    def decode(self, v, depth: int = 0):
        if depth:
            return self._decode(v, depth)
        try:
            return self._decode(v, 0)
        except WireError:
            raise
        except (ValueError, TypeError, KeyError, IndexError, RuntimeError, OverflowError, RecursionError,
                MemoryError) as exc:
            raise WireError(f"a value that does not decode ({type(exc).__name__}: {str(exc)[:200]})") from None

    def _decode(self, v, depth: int = 0):  # noqa: C901 (one branch per tag)
        self.nodes += 1
        if depth > MAX_DEPTH or self.nodes > MAX_NODES:
            raise WireError("a value nested too deeply or with too many parts")
        if type(v) is not list or not v or type(v[0]) is not str:
            raise WireError("a value without a tag")
        tag = v[0]
        if tag == "N":
            return None
        if tag == "b":
            return _check(v[1], bool)
        if tag == "i":
            text = _check(v[1], str)
            if len(text) > MAX_INT_DIGITS + 1:
                raise WireError("an integer with too many digits")
            return int(text)
        if tag == "f":
            return float.fromhex(_check(v[1], str))
        if tag == "s":
            text = _check(v[1], str)
            if len(text) > MAX_STR:
                raise WireError("a string that is too long")
            return text
        if tag == "B":
            return self.blob(v[1])
        if tag in ("l", "t", "S", "F"):
            items = [self.decode(x, depth + 1) for x in _check(v[1], list)]
            return {"l": list, "t": tuple, "S": set, "F": frozenset}[tag](items) if tag != "l" else items
        if tag == "P":
            return {"PosixPath": pathlib.PosixPath, "PurePosixPath": pathlib.PurePosixPath}.get(v[2], pathlib.Path)(
                _check(v[1], str))
        if tag in ("d", "od"):
            out = {} if tag == "d" else collections.OrderedDict()
            for pair in _check(v[1], list):
                k, val = _check(pair, list)
                out[self.decode(k, depth + 1)] = self.decode(val, depth + 1)
            return out
        if tag == "I":
            packed = array.array("q")
            try:
                data = base64.b64decode(_check(v[2], str), validate=True)
            except ValueError:
                raise WireError("a packed int list that is not base64") from None
            if len(data) % 8:
                raise WireError("a packed int list of a wrong size")
            packed.frombytes(data)
            return packed.tolist() if v[1] == "l" else tuple(packed.tolist())
        if tag == "E":
            return Ellipsis
        if tag == "sl":
            return slice(*[self.decode(x, depth + 1) for x in _check(v[1], list)][:3])
        if tag == "c":
            re_, im = _check(v[1], list)
            return complex(float.fromhex(_check(re_, str)), float.fromhex(_check(im, str)))
        if tag == "T":
            return self._tensor(_check(v[1], dict))
        if tag == "dt":
            torch = _torch()
            dtype = getattr(torch, _check(v[1], str), None)
            if type(dtype) is not torch.dtype:
                raise WireError(f"an unknown dtype {v[1]!r}")
            return dtype
        if tag == "dv":
            return _torch().device(_check(v[1], str))
        if tag == "G":
            torch = _torch()
            g = torch.Generator()
            state = _tensor_from(self.blob(v[1]))
            if state.dtype != torch.uint8 or state.dim() != 1:
                raise WireError("a generator state that is not a byte tensor")
            g.set_state(state)
            self.generators.append(g)
            return g
        if tag == "R":
            version, state, gauss = _check(v[1], list)
            r = random.Random()
            r.setstate(_random_state(version, state, gauss))
            self.generators.append(r)
            return r
        if tag == "A":
            import numpy as np

            try:
                arr = np.load(io.BytesIO(self.blob(v[1])), allow_pickle=False)
            except (ValueError, OSError) as exc:
                raise WireError(f"an array that numpy cannot read without pickle ({exc})") from None
            if arr.size > MAX_ELEMENTS:
                raise WireError("an array with too many elements")
            return arr
        if tag == "ns":
            import numpy as np

            return np.dtype(_check(v[1], str)).type(self.decode(v[2], depth + 1))
        if tag == "nd":
            import numpy as np

            return np.dtype(_check(v[1], str))
        if tag == "X":
            return remote_exception(_check(v[1], str), _check(v[2], list), _check(v[3], str))
        if tag == "dc":
            cls = self.dataclass(_check(v[1], str))
            if cls is None:
                if v[3] is None:
                    raise WireError(f"an unknown dataclass {v[1]!r}")
                return self.handle(_check(v[3], int), v[1])
            names = {f.name for f in dataclasses.fields(cls)}
            if {n for n, _ in _check(v[2], list)} != names:  # another class of that name: keep it a handle
                if v[3] is None:
                    raise WireError(f"{v[1]}: its fields are not the course's")
                return self.handle(_check(v[3], int), v[1])
            obj = cls.__new__(cls)
            for name, value in v[2]:
                object.__setattr__(obj, name, self.decode(value, depth + 1))
            return obj
        if tag == "h":
            return self.handle(_check(v[1], int), _check(v[2], str))
        if tag == "cb":
            if self.callback is None:
                raise WireError("a callback where none is allowed")
            return self.callback(_check(v[1], int))
        if tag in ("mod", "ref", "store", "cached") and self.module is not None:
            return self.module(v, self)
        raise WireError(f"an unknown tag {tag!r}")

    def _tensor(self, meta: dict):
        torch = _torch()
        t = _tensor_from(self.blob(meta.get("b")))
        if t.numel() > MAX_ELEMENTS:
            raise WireError("a tensor with too many elements")
        if meta.get("rg") is True and (t.is_floating_point() or t.is_complex()):
            t.requires_grad_(True)
        if meta.get("p") is True:
            t = torch.nn.Parameter(t.detach(), requires_grad=t.requires_grad)
        if "grad" in meta and t.requires_grad:
            g = _tensor_from(self.blob(meta["grad"]))
            if g.shape == t.shape and g.dtype == t.dtype:
                t.grad = g
        if "g" in meta:
            self.leaves[_check(meta["g"], int)] = t
        return t


def random_state(r: random.Random) -> list:
    version, state, gauss = r.getstate()
    return [version, struct.pack(">625Q", *state).hex(), gauss]


def set_generator_state(local, state_value, decoder: Decoder) -> None:
    """Write back the state a generator or Random reached on the other side (the call consumed draws there), if
    drawing can reach it from the state sent (`streams`); one that was built instead is not taken."""
    from minibert_course import streams

    torch = _torch()
    if type(local) is torch.Generator:
        if type(state_value) is not list or state_value[:1] != ["G"]:
            raise WireError("a generator came back as something else")
        state = _tensor_from(decoder.blob(state_value[1]))
        if state.dtype != torch.uint8 or state.shape != local.get_state().shape:
            raise WireError("a generator state of the wrong size")
        if streams.torch_state_follows(local.get_state(), state):
            local.set_state(state)
    else:
        if type(state_value) is not list or state_value[:1] != ["R"]:
            raise WireError("a random.Random came back as something else")
        state = _random_state(*_check(state_value[1], list))
        if streams.python_state_follows(local.getstate(), state):
            local.setstate(state)


def _check(value, kind):
    if type(value) is not kind:
        raise WireError(f"expected a {kind.__name__} in the message, got {type(value).__name__}")
    return value


def _random_state(version, state, gauss):
    try:
        words = struct.unpack(">625Q", bytes.fromhex(state)) if type(state) is str else None
    except (ValueError, struct.error):
        words = None
    if type(version) is not int or words is None or max(words[:-1]) >= 2**32 or words[-1] > 624 \
            or not (gauss is None or type(gauss) is float):
        raise WireError("a random.Random state that is not one")
    return version, words, gauss


class RemoteError(Exception):
    """Base of exceptions raised by student code whose type is not a builtin one."""


def remote_exception(qualname: str, bases: list, message: str) -> BaseException:
    """The local exception for one raised on the other side: the builtin type itself when it was one, else a new class
    of that name under its first builtin base (so `except ValueError` and `type(exc) is ValueError` behave as there).
    Exits and interrupts become RuntimeError: they must not stop the checker."""
    stopping = tuple(_EXCEPTIONS[n] for n in ("SystemExit", "KeyboardInterrupt", "GeneratorExit", "StopIteration",
                                              "StopAsyncIteration", "BaseExceptionGroup") if n in _EXCEPTIONS)
    builtin = _EXCEPTIONS.get(qualname)
    if builtin is not None and not issubclass(builtin, stopping):
        try:
            return builtin(message)
        except TypeError:  # UnicodeDecodeError & co. need more arguments: the nearest that takes a message
            bases = [c.__name__ for c in builtin.__mro__[1:]]
    base = next((_EXCEPTIONS[b] for b in bases if type(b) is str and b in _EXCEPTIONS
                 and not issubclass(_EXCEPTIONS[b], (UnicodeError,))), Exception)
    if issubclass(base, stopping) or base is BaseException:
        base = RuntimeError
    name = "".join(ch for ch in qualname if ch.isalnum() or ch == "_")[:60] or "StudentError"
    try:
        cls = type(name, (base, RemoteError), {"__module__": "student"})
        return cls(message)
    except TypeError:
        return RuntimeError(f"{name}: {message}")
