"""The sandbox, the worker and the checker on their own, with the static screen OFF (it only flags for review now):
each attack here runs for real in the worker, and the operating system must contain it, while the verdicts, decided
in the checker, stay what the tests' own asserts say."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from conftest import ROOT

from minibert_course.sealed import Plan, PlannedCell, Sandbox, exposed_names, run_cells

pytestmark = pytest.mark.skipif(not Sandbox().works, reason="bubblewrap is not installed or cannot create namespaces "
                                "here (apt-get install bubblewrap): the OS isolation cannot be tested")


def run(*cells: tuple[str, str], timeout: int = 60, expose: bool = True):
    plan = Plan([PlannedCell(kind, source, grade_id=f"test-{i}" if kind == "test" else None,
                             exposes=exposed_names(source) if kind == "student" and expose else [])
                 for i, (kind, source) in enumerate(cells)])
    return run_cells(plan, chapter="02_embeddings", sandbox=Sandbox(uid=UID), cell_timeout=timeout,
                     screen_code=False)


def verdicts(result) -> list[bool]:
    return [c.passed for c in result.cells if c.kind == "test"]


UID = 61090  # this module's own uid: processes of concurrent grading runs are not counted as its leftovers


def no_leftovers(wait: float = 5.0) -> list[str]:
    """Processes of the sandbox's uid still there after `wait` seconds (a killed namespace takes a moment)."""
    deadline = time.monotonic() + wait
    while True:
        ps = subprocess.run(["ps", "-eo", "uid=,pid=,args="], capture_output=True, text=True).stdout
        found = [line for line in ps.splitlines() if line.split() and int(line.split()[0]) == UID]
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


@pytest.fixture
def host_dir(tmp_path):
    """A folder every user may write: only the sandbox, not file permissions, keeps the submission out."""
    tmp_path.chmod(0o777)
    for parent in tmp_path.parents:
        if parent == Path("/"):
            break
        parent.chmod(parent.stat().st_mode | 0o005)
    return tmp_path


def test_a_test_passes_only_when_its_asserts_ran():
    result = run(("student", "x = 1"), ("test", "assert x == 1"), ("test", "assert x == 2, 'x is not 2'"))
    assert verdicts(result) == [True, False]
    assert result.sandbox.startswith("bubblewrap")


def test_sys_exit_and_keyboard_interrupt_fail_their_cell_only():
    result = run(("student", "import sys\nsys.exit(0)"), ("student", "raise KeyboardInterrupt"),
                 ("test", "assert True"))
    errors = [o["ename"] for c in result.cells for o in c.outputs if o["output_type"] == "error"]
    assert errors == ["SystemExit", "KeyboardInterrupt"] and verdicts(result) == [True]


def test_os_exit_fails_its_cell_and_the_tests_run_on_a_new_worker():
    result = run(("student", "x = 1"), ("test", "assert x == 1"), ("student", "import os\nos._exit(0)"),
                 ("test", "assert x == 1"))
    assert verdicts(result) == [True, True]
    assert any("ended" in p for p in result.problems), result.problems
    assert result.cells[2].outputs[-1]["ename"] == "CellError"


def test_an_infinite_loop_is_stopped_and_grading_goes_on():
    start = time.monotonic()
    result = run(("student", "while True:\n    pass"), ("test", "assert True"), timeout=3)
    assert verdicts(result) == [True]
    assert result.cells[0].outputs[-1]["ename"] == "CellTimeout"
    assert time.monotonic() - start < 30


def test_a_loop_that_swallows_the_timeout_is_killed():
    code = "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass"
    result = run(("student", code), ("test", "assert True"), timeout=2)
    assert verdicts(result) == [True]  # the loop is killed with its worker; the test runs on a new one
    assert any("time limit" in p for p in result.problems), result.problems
    assert not no_leftovers()


def test_a_huge_allocation_fails_inside_the_sandbox():
    result = run(("student", "hog = bytearray(64 * 2**30)"), ("test", "assert True"))
    assert result.cells[0].outputs[-1]["ename"] == "MemoryError" and verdicts(result) == [True]


def test_a_fork_bomb_is_contained():
    code = ("import os, time\nfor _ in range(5000):\n    try:\n        if os.fork() == 0:\n            time.sleep(60)\n"
            "            os._exit(0)\n    except OSError:\n        break")
    result = run(("student", code), ("test", "assert True"))
    assert verdicts(result) == [True]
    time.sleep(0.5)
    assert not no_leftovers()


def test_a_detached_child_dies_with_the_run(host_dir):
    marker = host_dir / "owned"
    code = (f"import subprocess\nsubprocess.Popen(['sh', '-c', 'sleep 2; echo owned > {marker}; "
            "echo owned > /tmp/owned'], start_new_session=True)")
    result = run(("student", code), ("test", "assert True"))
    assert verdicts(result) == [True]
    time.sleep(4)
    assert not marker.exists() and not no_leftovers()


def test_the_gradebook_is_out_of_reach_even_when_world_writable(host_dir):
    db = host_dir / "gradebook.db"
    con = sqlite3.connect(db)
    con.execute("create table grade (score real)")
    con.execute("insert into grade values (0)")
    con.commit()
    con.close()
    db.chmod(0o666)
    code = f"import sqlite3\nc = sqlite3.connect({str(db)!r})\nc.execute('update grade set score = 100')\nc.commit()"
    result = run(("student", code), ("test", "assert True"))
    assert result.cells[0].outputs[-1]["output_type"] == "error"
    assert sqlite3.connect(db).execute("select score from grade").fetchall() == [(0.0,)]


def test_the_source_tree_and_the_reference_package_are_not_there():
    code = (f"import os\nseen = os.path.exists({str(ROOT / 'solutions')!r}) or os.path.exists({str(ROOT / 'src')!r})"
            "\nimport minibert.embeddings as e\nsource = open(e.__file__).read()")
    result = run(("student", code), ("test", "assert not seen"),
                 ("test", "assert 'raise NotImplementedError' in source, 'chapter 02 must be a stub'"),
                 ("student", "open('/judge/minibert/__init__.py', 'a').write('x = 1')"))
    assert verdicts(result) == [True, True]
    assert result.cells[-1].outputs[-1]["ename"] in ("OSError", "PermissionError")  # read-only, not ours


def test_no_network():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        code = f"import socket\ns = socket.socket()\ns.settimeout(3)\ns.connect(('127.0.0.1', {port}))"
        result = run(("student", code), ("test", "assert True"))
        assert result.cells[0].outputs[-1]["output_type"] == "error"
    finally:
        server.close()


def test_a_monkeypatch_in_the_students_process_does_not_reach_the_checker():
    result = run(("given", "import torch"), ("student", "import torch\ntorch.allclose = lambda *a, **k: True"),
                 ("test", "assert torch.allclose(torch.zeros(1), torch.ones(1))"))
    assert verdicts(result) == [False]


def test_a_trace_hook_in_the_students_process_changes_no_verdict():
    code = "import sys\ndef jump(frame, event, arg):\n    return jump\nsys.settrace(jump)\ndef f():\n    return 1"
    result = run(("student", code), ("test", "assert f() == 2"), ("test", "assert f() == 1"))
    assert verdicts(result) == [False, True]


def test_ipython_hooks_do_not_exist_and_change_nothing():
    code = "get_ipython().input_transformers_post.append(lambda lines: ['pass\\n'])"
    result = run(("student", code), ("test", "assert 1 == 2"))
    assert result.cells[0].outputs[-1]["ename"] == "AttributeError" and verdicts(result) == [False]


def test_the_instructors_helpers_are_put_back_before_each_test():
    result = run(("given", "def check(x):\n    assert x == 1, f'expected 1, got {x}'"),
                 ("student", "def check(x):\n    pass"), ("test", "check(2)"), expose=False)
    assert verdicts(result) == [False]  # the test's check is the instructor's, in the checker


def test_a_forged_result_on_any_descriptor_is_not_a_verdict():
    code = ("import os\nfor fd in range(0, 64):\n    try:\n        os.write(fd, b'{\"index\": 1, \"nonce\": \"\", "
            "\"passed\": true, \"outputs\": [], \"tampered\": []}\\n')\n    except OSError:\n        pass")
    result = run(("student", code), ("test", "assert 1 == 2"))
    assert verdicts(result) == [False]


def test_fallback_without_bubblewrap_still_drops_privileges_and_limits(monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("switching uid needs root")
    sandbox = Sandbox(uid=UID)
    sandbox.works = False
    # a uid of the notebook's own, from UID+1 on; the grader's own where UID cannot reach this Python (said below)
    expected = f"{UID} < uid <= {UID + 4000}" if sandbox.switch_uid() else f"uid == {os.geteuid()}"
    plan = Plan([PlannedCell("student", "import os, resource\nuid = os.getuid()\n"
                                        "mem = resource.getrlimit(resource.RLIMIT_AS)[0]", exposes=["mem", "uid"]),
                 PlannedCell("test", f"assert {expected}, uid", grade_id="t"),
                 PlannedCell("test", f"assert mem == {sandbox.memory}, mem", grade_id="u")])
    result = run_cells(plan, chapter="02_embeddings", sandbox=sandbox, screen_code=False)
    assert verdicts(result) == [True, True], result.cells
    assert "NO FILESYSTEM ISOLATION" in result.sandbox
    assert ("uid of their own" in result.sandbox) == sandbox.switch_uid(), result.sandbox


# ---- each test runs in its own copy of the notebook's state (a fork of the worker) -------------------------------

KEEPER = '''
import ctypes, os, subprocess

_seen = []


def remember(x):
    _seen.append(x)
    for path in ("/tmp/stash", "/work/stash"):
        with open(path, "w") as f:
            f.write(x)
    with open("/work/vocab.txt", "a") as f:
        f.write(x)
    subprocess.Popen(["sh", "-c", f"sleep 2; echo {x} > /tmp/late"], start_new_session=True)
    libc = ctypes.CDLL(None)
    libc.shmat.restype = ctypes.c_void_p
    sid = libc.shmget(4242, 4096, 0o1000 | 0o600)
    addr = libc.shmat(sid, None, 0)
    ctypes.memmove(addr, x.encode(), len(x))
    return len(_seen)


def recall():
    found = list(_seen)
    for path in ("/tmp/stash", "/work/stash", "/tmp/late"):
        if os.path.exists(path):
            found.append(open(path).read())
    libc = ctypes.CDLL(None)
    libc.shmat.restype = ctypes.c_void_p
    sid = libc.shmget(4242, 4096, 0o600)
    if sid >= 0:
        found.append(ctypes.string_at(libc.shmat(sid, None, 0), 8))
    return found


def vocab():
    return open("/work/vocab.txt").read()


with open("/work/vocab.txt", "w") as f:
    f.write("the notebook's file")
'''


def test_what_student_code_keeps_during_a_test_is_gone_in_the_next():
    """A hidden input kept in a global, a file in /tmp or /work, a process that writes later, System V shared
    memory: none reaches the next test, which could show it in its message. A file the cells wrote is as they left
    it."""
    result = run(("student", KEEPER), ("test", "assert remember('hidden-input') == 1"),
                 ("test", "import time\ntime.sleep(3)\nassert recall() == [], recall()"),
                 ("test", "assert vocab() == \"the notebook's file\", vocab()"))
    assert verdicts(result) == [True, True, True], [c.outputs for c in result.cells]
    assert not no_leftovers()


def test_an_object_made_in_a_test_and_used_by_the_next_still_works():
    code = "class Box:\n    def __init__(self, v):\n        self.v = v\n\n    def value(self):\n        return self.v\n"
    result = run(("student", code), ("test", "box = Box(3)\nassert box.value() == 3"),
                 ("test", "assert box.value() == 3"))
    assert verdicts(result) == [True, True], [c.outputs for c in result.cells]


def test_a_copy_that_dies_or_hangs_fails_its_test_only_and_needs_no_replay():
    code = ("import os, time\n\n\ndef die():\n    os._exit(3)\n\n\ndef spin():\n    while True:\n        try:\n"
            "            time.sleep(1)\n        except BaseException:\n            pass\n\n\nx = 1")
    result = run(("student", code), ("test", "die()"), ("test", "assert x == 1"), ("test", "spin()"),
                 ("test", "assert x == 1"), timeout=3)
    assert verdicts(result) == [False, True, False, True], [c.outputs for c in result.cells]
    assert "ended its process" in result.cells[1].outputs[-1]["evalue"], result.cells[1].outputs
    assert "time limit" in result.cells[3].outputs[-1]["evalue"], result.cells[3].outputs
    assert not any("replay" in p or "did not start" in p for p in result.problems), result.problems
    assert not no_leftovers()


def test_replies_a_copy_wrote_ahead_for_later_requests_are_never_read():
    """A test's copy may forge the worker's word that it has ended, then write answers to requests not sent yet
    (their ids are easy to guess) carrying what it saw: the channel is drained up to a nonce drawn after the copy
    was stopped, so the next test reads only its own answers."""
    code = '''
import gc
import time


def leak(x):
    from minibert_course import wire
    worker = next(o for o in gc.get_objects() if type(o).__name__ == "Worker")
    for fork in range(1, 400):  # "this copy has ended", forged (for every id the copy's fork may have had)
        wire.send(worker.out, {"op": "ended", "fork": fork, "status": 0}, [])
    for rid in range(1, 400):
        enc = worker.encoder()
        wire.send(worker.out, {"id": rid, "ok": True, "value": enc.encode(x), "writeback": [], "gens": []}, enc.blobs)
    while True:  # a copy that hangs is stopped, not waited for: the replies it wrote are still on the channel
        try:
            time.sleep(1)
        except BaseException:
            pass


def echo():
    return "clean"
'''
    result = run(("student", code), ("test", "leak('hidden-input')"),
                 ("test", "got = echo()\nassert got == 'clean', got"), timeout=3)
    assert verdicts(result) == [False, True], [c.outputs for c in result.cells]
    assert "hidden-input" not in str(result.cells[2].outputs)


RANDOM_STATES = '''
import random
import struct

import torch


def forged(state):
    """A torch state whose next 623 draws are one number: the array filled with one word, no twist due."""
    raw = bytearray(state.numpy().tobytes())
    struct.pack_into("<iiQ", raw, 8, 624, 1, 1)  # left, seeded, next
    struct.pack_into("<624Q", raw, 24, *([12345] * 624))
    return torch.frombuffer(raw, dtype=torch.uint8).clone()


def rig_global():
    torch.set_rng_state(forged(torch.get_rng_state()))


def rig_generator(g):
    g.set_state(forged(g.get_state()))


def rig_random(r):
    r.setstate((3, tuple([12345] * 624 + [1]), None))


def draw(n):
    return torch.rand(n).sum()


def reseed_and_draw():
    torch.manual_seed(11)
    return torch.rand(7).sum()


def draw_from(g, r):
    return torch.rand(100, generator=g).sum(), r.random()
'''


def test_a_random_state_built_by_student_code_never_chooses_a_tests_inputs():
    """MT19937's next outputs are whatever its state says, so a function that sets a state it built could make every
    number the test draws afterwards the same, where wrong answers pass: such a state is not taken (streams); the
    test's own stream goes on. A state that drawing reaches (the draws of a call, a manual_seed inside it) is taken,
    so a test still continues the student's stream as in one kernel."""
    many = "assert {draw}.unique().numel() > 40, 'the test drew from a stream the submission chose'"
    tests = [
                 ("test", "rig_global()\n" + many.format(draw="torch.rand(64)")),
                 ("test", "g = torch.Generator().manual_seed(0)\nrig_generator(g)\n"
                          + many.format(draw="torch.rand(64, generator=g)")),
                 ("test", "r = random.Random(0)\nrig_random(r)\nassert len({r.random() for _ in range(64)}) > 40"),
                 ("test", "torch.manual_seed(3)\ndraw(100)\na = torch.rand(5)\n"
                          "torch.manual_seed(3)\ntorch.rand(100)\nassert torch.equal(a, torch.rand(5))"),
                 ("test", "reseed_and_draw()\na = torch.rand(3)\n"
                          "torch.manual_seed(11)\ntorch.rand(7)\nassert torch.equal(a, torch.rand(3))"),
                 ("test", "g, r = torch.Generator().manual_seed(4), random.Random(4)\ndraw_from(g, r)\n"
                          "g2, r2 = torch.Generator().manual_seed(4), random.Random(4)\ntorch.rand(100, generator=g2)\n"
                          "r2.random()\nassert torch.equal(torch.rand(3, generator=g), torch.rand(3, generator=g2))\n"
                          "assert r.random() == r2.random()")]
    result = run(("student", RANDOM_STATES), *[(kind, "import random\nimport torch\n" + src) for kind, src in tests])
    assert verdicts(result) == [True] * 6, [c.outputs for c in result.cells]


def test_a_copy_that_stops_reading_fails_its_test_only():
    """Student code can point the worker's reader at a pipe of its own and keep the real channel open, unread: a
    request larger than the pipe's buffer must not block the checker past the test's time limit."""
    code = '''
import gc
import os


def deaf():
    worker = next(o for o in gc.get_objects() if type(o).__name__ == "Worker")
    worker.reader.fd = os.pipe()[0]  # (the real channel stays open: nobody reads it any more)


def size(t):
    return t.numel()


x = 1
'''
    result = run(("student", code), ("test", "import torch\ndeaf()\nassert size(torch.zeros(4_000_000)) > 0"),
                 ("test", "assert x == 1"), timeout=3)
    assert verdicts(result) == [False, True], [c.outputs for c in result.cells]
    assert "stopped the grader's requests" in result.cells[1].outputs[-1]["evalue"], result.cells[1].outputs
    assert not no_leftovers()


def test_without_bubblewrap_each_notebook_has_its_own_uid_and_leaves_nothing(tmp_path):
    """The fallback's gap was one uid for every student: a process or a file that one left could be read by the
    next student's code (and shown in a visible test's message). Each notebook now runs as a uid no process has,
    and what that uid left (processes that escaped with setsid, files in /tmp, System V shared memory) is removed."""
    if os.geteuid() != 0:
        pytest.skip("switching uid needs root")
    sandbox = Sandbox(uid=UID)
    sandbox.works = False
    if not sandbox.switch_uid():
        pytest.skip(f"uid {UID} cannot run {os.sys.executable} here")
    leave = '''
import ctypes, os, subprocess
uid = os.getuid()
open(f"/tmp/minibert-left-{uid}", "w").write("hidden input")
os.makedirs(f"/dev/shm/minibert-left-{uid}/deeper", exist_ok=True)
subprocess.Popen(["sleep", "300"], start_new_session=True)
libc = ctypes.CDLL(None)
libc.shmget(0x6d62 + uid, 4096, 0o1000 | 0o644)
'''
    uids = []
    for _ in range(2):
        plan = Plan([PlannedCell("student", leave, exposes=["uid"]),
                     PlannedCell("test", "assert uid == -1, uid", grade_id="t")])  # (fails, saying the uid)
        result = run_cells(plan, chapter="02_embeddings", sandbox=sandbox, screen_code=False)
        uids.append(int(result.cells[-1].outputs[-1]["evalue"]))
        assert UID < uids[-1] <= UID + 4000 and "uid of their own" in result.sandbox, (uids, result.sandbox)
    assert uids[0] != uids[1]
    ps = subprocess.run(["ps", "-eo", "uid=,args="], capture_output=True, text=True).stdout
    mine = [line for line in ps.splitlines() if "sleep 300" in line and int(line.split()[0]) != os.geteuid()]
    assert not mine, mine
    assert not list(Path("/tmp").glob("minibert-left-*")) and not list(Path("/dev/shm").glob("minibert-left-*"))
    shm = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    assert not [row for row in shm if UID < int(row.split()[7]) <= UID + 4000], shm


def test_clear_uid_removes_every_process_file_and_shared_memory_of_the_uid():
    """The fallback's clean-up on its own (the test above needs a Python the uid can run): what a uid leaves in the
    folders any uid may write, processes that left their session, and System V IPC, are gone; another uid's stay."""
    if os.geteuid() != 0:
        pytest.skip("switching uid needs root")
    from minibert_course.sealed import clear_uid, fresh_uid

    uid, other = fresh_uid(UID), fresh_uid(UID + 5000)
    assert uid != other and UID < uid <= UID + 4000

    def as_uid(u):
        def drop():
            os.setsid()
            os.setgid(u)
            os.setuid(u)
        return drop

    procs = [subprocess.Popen(["sleep", "300"], preexec_fn=as_uid(u)) for u in (uid, uid, other)]
    files = [Path(f"/tmp/minibert-clear-{uid}"), Path(f"/dev/shm/minibert-clear-{uid}/sub/file")]
    files[1].parent.mkdir(parents=True)
    for f in files:
        f.write_text("left behind")
    for path in (files[0], files[1], files[1].parent, files[1].parent.parent):
        os.chown(path, uid, uid)
    keep = Path(f"/tmp/minibert-clear-other-{other}")
    keep.write_text("another uid's")
    os.chown(keep, other, other)
    subprocess.run(["ipcmk", "-M", "4096"], preexec_fn=as_uid(uid), capture_output=True, check=True)  # (util-linux)
    assert [r for r in Path("/proc/sysvipc/shm").read_text().splitlines()[1:] if r.split()[7] == str(uid)]
    try:
        assert clear_uid(uid) == []
        for p in procs[:2]:
            p.wait(timeout=5)  # (killed: else TimeoutExpired)
        assert procs[2].poll() is None, "another uid's process was killed"
        assert not files[0].exists() and not files[1].parent.parent.exists() and keep.exists()
        rows = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
        assert not [r for r in rows if r.split()[7] == str(uid)], rows
    finally:
        for p in procs:
            p.kill()
            p.wait()
        keep.unlink(missing_ok=True)
        clear_uid(uid)
        clear_uid(other)
