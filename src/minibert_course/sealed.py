"""Sealed grading: what a submission runs, where it runs, and where a test's verdict is decided.

1. Only the student's answers come from the submission (`plan_submission`). The graded notebook is the
   instructor's: given cells and test cells (hidden tests included) come from the course's source notebook; from the
   submission we take the answer cells (matched by nbgrader grade_id, else by cell id) and the code cells the
   student added (run after the instructor cell they follow). Deleted, emptied or edited test cells, changed ids, a
   wrong kernel or a 50 MB output change nothing.
2. The verdict is decided outside the process where student code runs (`run_cells` -> `minibert_course.checker`).
   The given and answer cells run in the worker (`minibert_course.judge`), the tests in the checker, which talks to
   the worker only through `minibert_course.wire` (data, never code). A static `screen` of the answers remains, as
   review notes for the instructor only: it never takes a point.
3. The worker runs in a sandbox (`Sandbox`): bubblewrap gives it a private root holding only the system, the
   Python environment (read-only) and the package of the chapters BEFORE the graded one (the graded chapter and
   later ones as stubs, read-only), a private /tmp and working folder (tmpfs), the checker's scratch folder
   read-only (files a test writes for the student's code), no network, its own PID namespace (no process outlives
   it), an unprivileged uid, and rlimits on memory, processes, file size and CPU time. Without bubblewrap the worker
   still runs as an unprivileged uid with the same rlimits in its own process group, a uid of its own for each
   notebook (`fresh_uid`): whatever it leaves (a process, a file in /tmp, System V IPC) is removed when the notebook
   is done (`clear_uid`), so it cannot reach the next student's run; `Sandbox.describe()` says what is missing.
"""

from __future__ import annotations

import ast
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEMO = "#| demo"
MEMORY_BYTES = 6 * 2**30
MAX_PROCESSES = 256  # threads count too (torch, OpenMP)
MAX_FILE_BYTES = 512 * 2**20
SCRATCH_BYTES = 512 * 2**20
PRELOAD = ["numpy", "numpy.testing", "torch", "torch.nn", "torch.nn.functional", "torch.testing", "minibert"]

# ---- 1. the graded notebook ----------------------------------------------------------------------------------


@dataclass
class PlannedCell:
    kind: str  # "given" | "student" | "test" | "demo" | "markdown"
    source: str
    grade_id: str | None = None
    cell_id: str | None = None
    points: float = 0.0
    source_index: int | None = None  # position in the instructor's notebook; None for a cell the student added
    exposes: list[str] = field(default_factory=list)  # answer cells: the names the instructor's solution defines
    imports: str = ""  # answer cells: the import statements of the instructor's solution (the checker runs them)


@dataclass
class Plan:
    cells: list[PlannedCell]
    problems: list[str] = field(default_factory=list)  # reported, not tampering (a missing answer cell, ...)


def nbgrader_meta(cell) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


def instructor_kind(cell) -> str:
    meta = nbgrader_meta(cell)
    if cell.get("cell_type") != "code":
        return "markdown"
    if meta.get("solution"):
        return "student"
    if meta.get("grade"):
        return "test"
    if str(cell.get("source", "")).lstrip().startswith(DEMO):
        return "demo"
    return "given"


def plan_source_notebook(nb) -> Plan:
    """Every cell of an instructor notebook as it stands (solution cells count as the student's code)."""
    cells = []
    for index, cell in enumerate(nb.cells):
        meta = nbgrader_meta(cell)
        kind = instructor_kind(cell)
        cells.append(PlannedCell(kind, cell.source, meta.get("grade_id"), cell.get("id"),
                                 float(meta.get("points", 0) or 0), index,
                                 exposed_names(cell.source) if kind == "student" else [],
                                 solution_imports(cell.source) if kind == "student" else ""))
    return Plan(cells)


def solution_imports(solution_source: str) -> str:
    """The top-level import statements of an instructor's answer cell: the checker runs them in its namespace
    (the definitions around them need those names there too)."""
    try:
        tree = ast.parse(solution_source)
    except SyntaxError:
        return ""
    return "\n".join(ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)))


def exposed_names(solution_source: str) -> list[str]:
    """The names an answer cell defines in the instructor's solution (functions, classes, assigned names; not
    imports): the ones the tests may use, fetched from the student's process while grading."""
    import builtins

    from minibert_course.checker import top_level_bindings

    bound, imported = top_level_bindings(solution_source)
    return sorted(n for n in bound - imported if not hasattr(builtins, n) and not n.startswith("__"))


def plan_submission(source_nb, submitted: dict) -> Plan:
    """The instructor's notebook with the student's answers and added code cells put in.

    `submitted` is the submission as parsed JSON (never trusted beyond its answer cells' sources)."""
    sub_cells = [c for c in submitted.get("cells", []) if isinstance(c, dict)]
    known_ids = ({c.get("id") for c in source_nb.cells} | {nbgrader_meta(c).get("grade_id") for c in source_nb.cells})
    known_ids.discard(None)  # a cell without an id (the student's own) is not an instructor cell
    by_grade_id, by_cell_id = {}, {}
    for c in sub_cells:
        gid = nbgrader_meta(c).get("grade_id")
        if isinstance(gid, str):
            by_grade_id.setdefault(gid, c)
        if isinstance(c.get("id"), str):
            by_cell_id.setdefault(c["id"], c)

    def text(c) -> str:
        src = c.get("source", "")
        return "".join(src) if isinstance(src, list) else str(src)

    # cells the student added (unknown id, no known grade_id), kept after the instructor cell they follow
    added: dict[str, list[str]] = {}
    anchor = TOP = "\0top"
    for c in sub_cells:
        gid = nbgrader_meta(c).get("grade_id")
        if c.get("id") in known_ids or gid in known_ids:
            anchor = gid if gid in known_ids else c.get("id")
            continue
        if c.get("cell_type") == "code" and text(c).strip():
            added.setdefault(anchor, []).append(text(c))

    problems, cells = [], []
    for extra in added.get(TOP, []):  # added above every instructor cell
        cells.append(PlannedCell("student", extra))
    for index, cell in enumerate(source_nb.cells):
        meta = nbgrader_meta(cell)
        gid, cid = meta.get("grade_id"), cell.get("id")
        kind = instructor_kind(cell)
        source = cell.source
        if meta.get("solution"):
            answer = by_grade_id.get(gid) or by_cell_id.get(cid)
            if answer is None:
                problems.append(f"answer cell {gid!r} is missing from the submission (deleted, or its metadata "
                                "and id were changed): graded as empty")
                source = ""
            else:
                source = text(answer)
        cells.append(PlannedCell(kind, source, gid, cid, float(meta.get("points", 0) or 0), index,
                                 exposed_names(cell.source) if kind == "student" else [],
                                 solution_imports(cell.source) if kind == "student" else ""))
        keys = [k for k in dict.fromkeys((gid, cid)) if isinstance(k, str)]
        for extra in [source for k in keys for source in added.get(k, [])]:
            cells.append(PlannedCell("student", extra))
    return Plan(cells, problems)


# ---- 2. the screen -------------------------------------------------------------------------------------------

FORBIDDEN_MODULES = {
    "ctypes", "gc", "inspect", "builtins", "importlib", "subprocess", "multiprocessing", "threading", "_thread",
    "signal", "atexit", "pty", "socket", "code", "codeop", "IPython", "ipykernel", "traitlets", "nbgrader",
    "nbformat", "nbclient", "jupyter_client", "minibert_course", "marshal", "pickle", "dill", "cloudpickle",
    "weakref", "faulthandler", "resource", "sqlite3", "sqlalchemy", "unittest", "pytest", "_pytest", "sysconfig",
    "site", "runpy", "types", "asyncio", "concurrent", "shlex", "pdb", "bdb", "trace", "tracemalloc", "posix",
    "fcntl", "mmap", "select", "selectors", "__main__",
    "transformers",  # an answer that imports the reference library instead of writing the code
}
REVIEW_MODULES: dict[str, str] = {}  # module -> why it is flagged for review (graded normally)
INTERPRETER_MODULES = {"os", "sys", "builtins", "importlib", "ctypes", "gc", "inspect", "posix"}
SYS_ALLOWED = {"maxsize", "float_info", "version_info", "platform", "stdout", "stderr", "byteorder", "int_info"}
OS_ALLOWED = {"path", "environ", "getenv", "cpu_count", "listdir", "makedirs", "fspath", "sep", "linesep",
              "scandir", "walk", "stat", "replace", "rename", "remove", "unlink", "getcwd", "PathLike", "mkdir",
              "rmdir", "extsep", "pathsep", "devnull", "curdir", "pardir", "getpid"}
FORBIDDEN_CALLS = {"exec", "eval", "compile", "__import__", "globals", "locals", "vars", "breakpoint", "exit",
                   "quit", "get_ipython", "input", "memoryview"}
FORBIDDEN_ATTRS = {
    "__subclasses__", "__globals__", "__code__", "__builtins__", "__bases__", "__base__", "__mro__", "__closure__",
    "__func__", "__defaults__", "__kwdefaults__", "__getattribute__", "__delattr__", "__import__", "__loader__",
    "__spec__", "__dict__", "__class__", "__reduce__", "__reduce_ex__", "__setstate__", "__init_subclass__",
    "f_back", "f_locals", "f_globals", "f_code", "f_builtins", "tb_frame", "tb_next", "gi_frame", "cr_frame",
    "ag_frame", "_getframe", "settrace", "setprofile", "addaudithook", "excepthook", "displayhook",
    "meta_path", "path_hooks", "input_transformers_post", "input_transformers_cleanup", "input_transformer_manager",
    "ast_transformers", "events", "set_custom_exc", "showtraceback", "_showtraceback", "run_cell", "user_ns",
    "register_magic_function", "_exit", "fork", "forkpty", "kill", "killpg", "system", "popen", "setrlimit",
    "dup2", "setsid", "__torch_function__", "__torch_dispatch__",
}
FAKE_DUNDERS = {
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__", "__del__", "__getattr__",
    "__getattribute__", "__torch_function__", "__torch_dispatch__", "__array__", "__array_function__",
    "__array_ufunc__", "__instancecheck__", "__subclasscheck__", "__init_subclass__", "__hash__", "__float__",
    "__int__", "__index__", "__abs__", "__round__", "__class_getitem__", "__set_name__", "__setattr__",
    "__delattr__", "__reduce__", "__reduce_ex__",
}
VALUE_TYPES = {"int", "float", "str", "bytes", "bool", "list", "tuple", "dict", "set", "frozenset", "Tensor",
               "ndarray", "type", "object"}
SECRET_STRINGS = re.compile(r"__\w+__|gradebook|/source/|autograded|nbgrader|\.db\b|BEGIN (HIDDEN|SOLUTION)")


@dataclass
class Screen:
    tamper: list[str] = field(default_factory=list)
    review: list[str] = field(default_factory=list)


def _dotted(node) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def screen(sources: list[str], module_aliases: set[str] | None = None) -> Screen:
    """Static screen of the student's code (answer cells and added cells)."""
    out = Screen()
    aliases = set(module_aliases or ()) | {"np", "numpy", "torch", "nn", "F", "math", "os", "sys", "random", "json",
                                           "builtins", "plt", "minibert"}
    trees = []
    for source in sources:
        lines = source.split("\n")
        for line in lines:
            stripped = line.strip()
            if stripped.startswith("!") or stripped.startswith("%%bash") or stripped.startswith("%%sh") \
                    or stripped.startswith("%system") or stripped.startswith("%%script"):
                out.review.append(f"has a shell command (not run while grading): {stripped[:60]!r}")
            elif stripped.startswith("%"):
                out.review.append(f"uses an IPython magic (not run while grading): {stripped[:60]!r}")
        if lines and lines[0].strip().startswith("%%"):
            lines = lines[1:]  # a cell magic's body is Python
        clean = [re.match(r"\s*", ln).group(0) + "pass" if ln.strip().startswith(("%", "!")) else ln for ln in lines]
        try:
            trees.append(ast.parse("\n".join(clean)))
        except SyntaxError:
            continue  # a syntax error fails its own cell when it runs
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                base = node.module if isinstance(node, ast.ImportFrom) else None
                for alias in node.names:
                    name = f"{base}.{alias.name}" if base else alias.name
                    top = (base or alias.name).split(".")[0]
                    aliases.add((alias.asname or alias.name).split(".")[0])
                    if top in FORBIDDEN_MODULES:
                        out.tamper.append(f"imports {name}")
                    elif alias.name in ("os", "sys") and not base and alias.asname not in (None, alias.name):
                        out.tamper.append(f"imports {name} under another name ({alias.asname})")
                    elif top in REVIEW_MODULES:
                        out.review.append(REVIEW_MODULES[top])
                    elif base in ("os", "sys") and alias.name not in (OS_ALLOWED if base == "os" else SYS_ALLOWED):
                        out.tamper.append(f"imports {name}")
                    elif alias.name == "*" and base in ("os", "sys"):
                        out.tamper.append(f"imports * from {base}")
            elif isinstance(node, ast.Attribute):
                dotted = _dotted(node)
                if node.attr in FORBIDDEN_ATTRS and not (node.attr == "environ" and dotted.startswith("os.")):
                    if node.attr == "__class__" and isinstance(getattr(node, "ctx", None), ast.Load):
                        continue  # x.__class__.__name__ in a message is harmless; assignments are not
                    out.tamper.append(f"uses .{node.attr}")
                elif dotted.startswith("sys.") and dotted.split(".")[1] not in SYS_ALLOWED:
                    out.tamper.append(f"uses {dotted}")
                elif dotted.startswith("os.") and dotted.split(".")[1] not in OS_ALLOWED:
                    out.tamper.append(f"uses {dotted}")
            elif isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else None
                if name == "vars" and node.args:
                    out.review.append("calls vars(...)")
                elif name in FORBIDDEN_CALLS:
                    out.tamper.append(f"calls {name}()")
                elif name in ("getattr", "setattr", "delattr", "hasattr") and node.args:
                    target = node.args[1] if len(node.args) > 1 else None
                    owner = _dotted(node.args[0]).split(".")[0]
                    literal = isinstance(target, ast.Constant) and isinstance(target.value, str)
                    if literal and target.value.startswith("__"):
                        out.tamper.append(f"calls {name}() with the special attribute {target.value!r}")
                    elif name in ("setattr", "delattr") and owner in aliases:
                        out.tamper.append(f"{name}() on the module {_dotted(node.args[0])}")
                    elif not literal and owner in INTERPRETER_MODULES | {"__builtins__"}:
                        out.tamper.append(f"calls {name}() on {owner} with a computed name")
                    elif not literal and name != "hasattr" and owner not in ("self", "cls"):
                        out.review.append(f"calls {name}({owner or '...'}, <computed name>)")
                elif name == "type" and len(node.args) == 3:
                    out.tamper.append("builds a class with type(name, bases, dict)")
                elif name == "open" and node.args and isinstance(node.args[0], ast.Constant) \
                        and isinstance(node.args[0].value, int):
                    out.tamper.append("opens a file descriptor")
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                for target in targets:
                    for t in ast.walk(target):
                        if isinstance(t, (ast.Attribute, ast.Subscript)):
                            root = _dotted(t.value if isinstance(t, ast.Subscript) else t).split(".")[0]
                            if root in aliases and root not in ("self", "cls"):
                                out.tamper.append(f"replaces part of the module {_dotted(t) or root}")
                        if isinstance(t, ast.Name) and t.id in ("__builtins__", "__name__", "__file__"):
                            out.tamper.append(f"rebinds {t.id}")
            elif isinstance(node, ast.ClassDef):
                for base in node.bases:
                    base_name = _dotted(base).split(".")[-1]
                    if base_name in VALUE_TYPES:
                        out.tamper.append(f"class {node.name} subclasses {base_name} (could fake comparisons)")
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name in FAKE_DUNDERS:
                        out.tamper.append(f"class {node.name} defines {item.name} (could fake a test's comparison)")
            elif isinstance(node, ast.Raise) and node.exc is not None:
                raised = _dotted(node.exc.func if isinstance(node.exc, ast.Call) else node.exc)
                if raised.split(".")[-1] in ("SystemExit", "KeyboardInterrupt", "GeneratorExit", "BaseException"):
                    out.tamper.append(f"raises {raised} (stops the grader)")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and SECRET_STRINGS.search(node.value):
                match = SECRET_STRINGS.search(node.value).group(0)
                if match not in ("__init__", "__main__", "__name__"):
                    out.tamper.append(f"refers to {match!r}")
            elif isinstance(node, ast.Name) and node.id in ("__builtins__", "__loader__", "__spec__"):
                out.tamper.append(f"uses {node.id}")
            elif isinstance(node, ast.Try):
                for handler in node.handlers:
                    caught = _dotted(handler.type) if handler.type is not None else "everything"
                    if caught.split(".")[-1] in ("BaseException", "KeyboardInterrupt", "SystemExit", "everything"):
                        out.review.append(f"catches {caught} (a time limit cannot stop it cleanly)")
    out.tamper = list(dict.fromkeys(out.tamper))
    out.review = list(dict.fromkeys(out.review))
    return out


def module_aliases(sources: list[str]) -> set[str]:
    """Names bound by imports in the instructor's cells (np, torch, nn, F, ...): assigning into them is patching."""
    names = set()
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {(a.asname or a.name).split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("torch", "numpy"):
                names |= {a.asname or a.name for a in node.names if a.name[:1].islower()}
    return names


# ---- 3/4. running the cells in the sandbox -------------------------------------------------------------------


@dataclass
class CellResult:
    index: int
    kind: str
    grade_id: str | None
    passed: bool
    outputs: list[dict]
    ran: bool = True
    seconds: float = 0.0


@dataclass
class RunResult:
    cells: list[CellResult]
    flags: list[str] = field(default_factory=list)  # tampering: graded 0, flagged for review
    review: list[str] = field(default_factory=list)  # flagged for review, graded normally
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    sandbox: str = ""

    @property
    def tampered(self) -> bool:
        return bool(self.flags)


class Sandbox:
    """How the judge is started: bubblewrap when it is there, else an unprivileged uid with rlimits only."""

    def __init__(self, uid: int = 61000, memory: int = MEMORY_BYTES, cpu_seconds: int = 1800,
                 shared: str | None = None):
        self.uid = uid
        self.memory = memory
        self.cpu_seconds = cpu_seconds
        self.shared = shared  # the checker's scratch folder: files tests write for the student's code (read-only)
        self.bwrap = shutil.which("bwrap")
        self.root = os.geteuid() == 0
        self.works = self.bwrap is not None and self._probe()
        self._switch_uid: bool | None = None  # without bubblewrap: can the uid run this Python at all?

    def switch_uid(self) -> bool:
        if self._switch_uid is None:
            self._switch_uid = False
            if self.root:
                try:
                    run = subprocess.run([sys.executable, "-I", "-c", "pass"], preexec_fn=self._drop_to_uid,
                                         capture_output=True, timeout=60)
                    self._switch_uid = run.returncode == 0
                except (OSError, subprocess.SubprocessError):
                    self._switch_uid = False
        return self._switch_uid

    def _probe(self) -> bool:
        try:
            run = subprocess.run(self._bwrap_args(Path("/nonexistent")) + ["/bin/true"], capture_output=True,
                                 timeout=30)
            return run.returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    def describe(self) -> str:
        if self.works:
            return (f"bubblewrap sandbox: private root (system, Python env and chapter package read-only), tmpfs "
                    f"scratch, no network, own PID namespace, uid {self.uid}, rlimits")
        missing = "bubblewrap not installed (apt-get install bubblewrap)" if not self.bwrap else \
            "bubblewrap cannot create namespaces here"
        if self.switch_uid():
            who = "an unprivileged uid of their own for each notebook, cleared after it"
        elif self.root:
            who = f"the grading user (uid {self.uid} cannot run {sys.executable})"
        else:
            who = "the grading user (not root: cannot switch uid)"
        return (f"NO FILESYSTEM ISOLATION ({missing}): submissions ran as {who} with rlimits in their own process "
                "group; files readable to that uid (the source tree) were readable to them")

    def _bwrap_args(self, package: Path) -> list[str]:
        args = [self.bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net",
                "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc",
                "--proc", "/proc", "--dev", "/dev",
                "--perms", "1777", "--size", str(SCRATCH_BYTES), "--tmpfs", "/tmp",
                "--perms", "0777", "--size", str(SCRATCH_BYTES), "--tmpfs", "/work", "--chdir", "/work"]
        for link in ("bin", "lib", "lib64", "sbin"):
            target = Path("/") / link
            if target.is_symlink():
                args += ["--symlink", os.readlink(target), f"/{link}"]
            elif target.is_dir():
                args += ["--ro-bind", str(target), f"/{link}"]
        made = set()
        for prefix in sorted({Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve()}):
            if str(prefix).startswith("/usr/"):
                continue
            for parent in reversed(prefix.parents[:-1]):  # bwrap would make missing parents 0700
                if parent not in made and str(parent) not in ("/work", "/tmp"):
                    args += ["--perms", "0755", "--dir", str(parent)]
                    made.add(parent)
            args += ["--ro-bind", str(prefix), str(prefix)]
        if package.exists():
            args += ["--ro-bind", str(package), "/judge"]
        if self.shared and Path(self.shared).is_dir():
            args += ["--ro-bind", self.shared, self.shared]
        args.append("--")
        if self.root:
            args += [shutil.which("setpriv") or "/usr/bin/setpriv", f"--reuid={self.uid}", f"--regid={self.uid}",
                     "--clear-groups", "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all"]
        return args

    def _limits(self) -> None:  # runs in the child before exec
        os.setsid()
        resource.setrlimit(resource.RLIMIT_AS, (self.memory, self.memory))
        resource.setrlimit(resource.RLIMIT_NPROC, (MAX_PROCESSES, MAX_PROCESSES))
        resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_CPU, (self.cpu_seconds, self.cpu_seconds))

    def _drop_to_uid(self) -> None:
        os.setgroups([])
        os.setgid(self.uid)
        os.setuid(self.uid)

    def _drop_privileges(self) -> None:
        self._limits()
        if self._switch_uid:
            self._drop_to_uid()

    def start(self, package: Path, script: str = "judge.py") -> subprocess.Popen:
        env = {"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp",
               "MPLBACKEND": "Agg", "MPLCONFIGDIR": "/tmp/matplotlib", "NBGRADER_EXECUTION": "autograde",
               "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1",
               "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
               "LANG": "C.UTF-8", "TQDM_DISABLE": "1"}
        if self.works:
            cmd = self._bwrap_args(package) + [sys.executable, "-I", f"/judge/{script}"]
            preexec = self._limits
        else:
            self.switch_uid()
            cmd = [sys.executable, "-I", str(package / script)]
            env["HOME"] = env["MPLCONFIGDIR"] = str(package)  # read-only; matplotlib falls back to a temp dir
            preexec = self._drop_privileges
        return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                env=env, cwd="/tmp", preexec_fn=preexec, bufsize=0)


def build_judge_package(dest: Path, chapter: str, solutions: list[Path], releases: list[Path]) -> Path:
    """The folder the judge imports from: minibert with the reference code of chapters before `chapter` and the
    released stubs of `chapter` and later; the course tooling the notebooks call; the judge itself."""
    from minibert_course.export import PACKAGE, build_package

    order = [p.stem for p in solutions]
    n = order.index(chapter)
    by_stem = {p.stem: p for p in releases}
    notebooks = solutions[:n] + [by_stem[s] for s in order[n:]]
    if dest.exists():
        shutil.rmtree(dest)
    (dest / PACKAGE).mkdir(parents=True)
    for name, text in build_package(notebooks).items():
        (dest / PACKAGE / name).write_text(text, encoding="utf-8")
    shutil.copytree(HERE, dest / "minibert_course", ignore=shutil.ignore_patterns("__pycache__", "sealed.py",
                                                                                  "release.py"))
    shutil.copy2(HERE / "judge.py", dest / "judge.py")
    for path in [dest, *dest.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return dest


def run_cells(plan: Plan, package: Path | None = None, chapter: str | None = None, **kwargs) -> RunResult:
    """Run a plan's cells: given and answer cells in the sandboxed worker, tests in the checker."""
    return run_cells_checked(plan, package, chapter, **kwargs)


def run_cells_checked(plan: Plan, package: Path | None = None, chapter: str | None = None, *,
                      sandbox: Sandbox | None = None, cell_timeout: int = 120, total_timeout: int = 900,
                      screen_code: bool = True) -> RunResult:
    """Run a plan: its given and answer cells in the sandboxed worker, its test cells in the checker.

    The checker (`python -m minibert_course.checker`) is a process of its own, started here; it starts the worker.
    This process only plans and reads the checker's verdicts. The static screen only adds review notes."""
    start = time.perf_counter()
    sandbox = sandbox or Sandbox()
    if package is None:
        package = _default_package(plan, chapter)
    result = RunResult([], problems=list(plan.problems), sandbox=sandbox.describe())
    if screen_code:
        student_sources = [c.source for c in plan.cells if c.kind == "student"]
        aliases = module_aliases([c.source for c in plan.cells if c.kind in ("given", "test")])
        verdict = screen(student_sources, aliases)
        result.review += [f"screen: {t}" for t in verdict.tamper + verdict.review]
    run_uid = fresh_uid(sandbox.uid) if not sandbox.works and sandbox.switch_uid() else sandbox.uid
    names = sorted({n for c in plan.cells for n in c.exposes})
    request = {
        "cells": [{"kind": c.kind, "source": c.source, "grade_id": c.grade_id, "exposes": c.exposes,
                   "imports": c.imports} for c in plan.cells],
        "student_names": names, "package": str(Path(package).resolve()), "preload": PRELOAD,
        "sandbox": {"uid": run_uid, "memory": sandbox.memory, "cpu_seconds": sandbox.cpu_seconds},
        "bubblewrap": sandbox.works,  # a caller that turned bubblewrap off (a test of the fallback) keeps it off
        "cell_timeout": cell_timeout, "total_timeout": total_timeout,
    }
    env = dict(os.environ, NBGRADER_EXECUTION="autograde", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               MPLBACKEND="Agg", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               PYTHONDONTWRITEBYTECODE="1")
    scratch = Path(tempfile.mkdtemp(prefix="minibert-checker-"))
    scratch.chmod(0o755)
    env["TMPDIR"] = str(scratch)  # files a test writes for the student's code: bound read-only into the sandbox
    request["sandbox"]["shared"] = str(scratch)
    try:
        proc = subprocess.run([sys.executable, "-m", "minibert_course.checker"], input=json.dumps(request),
                              capture_output=True, text=True, env=env, cwd=str(scratch),
                              timeout=total_timeout + 120, preexec_fn=_checker_limits)
        reply = json.loads(proc.stdout) if proc.returncode == 0 and proc.stdout.strip() else None
        if os.environ.get("MINIBERT_CHECKER_DEBUG"):
            sys.stderr.write(proc.stderr[-5000:])
        why = None if reply else f"the checker failed (exit code {proc.returncode}): {proc.stderr[-2000:]}"
    except subprocess.TimeoutExpired:
        reply, why = None, "the checker ran past the notebook's time limit"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if run_uid != sandbox.uid:
            clear_uid(run_uid)
    if reply is None:
        result.problems.append(why)
        for i, c in enumerate(plan.cells):
            if c.kind == "test":
                result.cells.append(CellResult(i, c.kind, c.grade_id, False, [_error("NotRun", why[:500])],
                                               ran=False))
        result.seconds = time.perf_counter() - start
        return result
    for c in reply["cells"]:
        result.cells.append(CellResult(c["index"], c["kind"], c["grade_id"], bool(c["passed"]), c["outputs"],
                                       seconds=float(c.get("seconds", 0))))
    result.flags += reply.get("flags", [])
    result.problems += reply.get("problems", [])
    result.sandbox = reply.get("sandbox", result.sandbox)
    result.seconds = time.perf_counter() - start
    return result


CHECKER_MEMORY_BYTES = 8 * 2**30
UIDS_PER_BASE = 4000
SCRATCH_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm")  # where any uid may write on a Debian system


def _uids_in_use() -> set[int]:
    """The uids of the processes alive now (a zombie has ended: it only waits for its parent to read its status)."""
    used = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                uid = os.stat(entry.path).st_uid
                if Path(entry.path, "stat").read_text().rpartition(")")[2].split()[0] != "Z":
                    used.add(uid)
            except (OSError, IndexError):
                pass
    return used


def fresh_uid(base: int) -> int:
    """Without bubblewrap: a uid for one notebook that no process has now (two notebooks graded at once, or one
    after another, never share one), drawn from base+1 .. base+4000."""
    import secrets

    used = _uids_in_use()
    for _ in range(100):
        uid = base + 1 + secrets.randbelow(UIDS_PER_BASE)
        if uid not in used:
            return uid
    raise RuntimeError(f"no free uid between {base + 1} and {base + UIDS_PER_BASE}")


def _remove_owned(folder: str, uid: int, left: list[str], depth: int = 0) -> None:
    """Remove what `uid` owns in `folder`, looking only where it could have written: into folders any uid may
    write (sticky /tmp and the like), not a build tree owned by someone else."""
    import stat

    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        try:
            st = entry.stat(follow_symlinks=False)
            if st.st_uid == uid:
                if stat.S_ISDIR(st.st_mode):
                    shutil.rmtree(entry.path)
                else:
                    os.unlink(entry.path)
            elif stat.S_ISDIR(st.st_mode) and st.st_mode & 0o002 and depth < 8:
                _remove_owned(entry.path, uid, left, depth + 1)
        except OSError:
            left.append(entry.path)


def clear_uid(uid: int) -> list[str]:
    """Remove what a notebook's uid left without bubblewrap: its processes (a killer that takes the uid and signals
    every process of it, until none is left), its files in the folders any uid can write, its System V IPC. Returns
    what could not be removed."""
    for _ in range(50):
        if uid not in _uids_in_use():
            break
        pid = os.fork()
        if pid == 0:  # kill(-1) as the uid itself: every process of that uid, at once (never this one's parent)
            try:
                os.setgid(uid)
                os.setuid(uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        time.sleep(0.05)
    left = [f"processes of uid {uid}"] if uid in _uids_in_use() else []
    for folder in SCRATCH_FOLDERS:
        _remove_owned(folder, uid, left)
    for kind, flag in (("shm", "-m"), ("msg", "-q"), ("sem", "-s")):
        try:
            header, *rows = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
        except (OSError, ValueError):
            continue
        header = header.split()
        for row in rows:
            fields = dict(zip(header, row.split(), strict=False))
            if fields.get("uid") == str(uid):
                subprocess.run(["ipcrm", flag, fields.get("shmid") or fields.get("msqid") or fields.get("semid")],
                               capture_output=True)
    return left


def _checker_limits() -> None:  # the checker decodes what student code sent: it gets limits of its own
    resource.setrlimit(resource.RLIMIT_AS, (CHECKER_MEMORY_BYTES, CHECKER_MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _default_package(plan: Plan, chapter: str | None) -> Path:
    from minibert_course.release import ROOT

    if chapter is None:
        raise ValueError("run_cells needs the judge package or the chapter")
    dest = ROOT / "build" / "judge" / chapter
    solutions = sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb"))
    releases = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    return build_judge_package(dest, chapter, solutions, releases)


def _error(name: str, text: str) -> dict:
    return {"output_type": "error", "ename": name, "evalue": text, "traceback": [f"{name}: {text}"]}


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    for stream in (proc.stdin, proc.stdout):
        try:
            stream.close()
        except (OSError, BrokenPipeError):
            pass
