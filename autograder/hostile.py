"""Hostile and broken submissions, each with the outcome the grader must produce (tests/test_grading.py).

Every case is a submission of chapter 02 built from the released notebook: most answer the exercises with stubs or a
wrong answer and add an attack that, under plain nbgrader (an IPython kernel with the course folder and the
reference package in reach), would earn points, read the hidden tests, or rewrite the class's grades. The rest are
honest answers in a broken or unusual file (ids changed, metadata stripped, a 50 MB output, renamed, ...), which must
keep the points they earn.

    Case.expect: the score it must get: "zero" (every attack: its answers are wrong, so any point is undeserved),
        "full" (honest answers in an odd file), "all-but-count" (right embeddings, wrong parameter count);
    Case.flagged: whether the summary must flag it for review (None: either is right);
    Case.graded: False when it cannot be graded (it is reported, with the reason).
"""

from __future__ import annotations

import copy
import json
import uuid
from dataclasses import dataclass
from pathlib import Path

import nbformat

CHAPTER = "02_embeddings"
ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Case:
    name: str
    what: str
    expect: str = "zero"
    flagged: bool | None = True
    graded: bool = True
    filename: str | None = None  # write the notebook under this name instead of <chapter>.ipynb
    raw: bytes | None = None  # write these bytes instead of a notebook
    code: str = ""  # the attack: appended to a wrong count-solution answer (the embeddings answer is wrong too)
    honest: bool = False  # answers with the solutions (markers dropped) instead of wrong ones
    needs_sandbox: bool = False  # only the OS sandbox stops it: not submitted where bubblewrap is missing


def answered(honest: bool) -> nbformat.NotebookNode:
    """The released notebook, answered with the solutions (honest) or left with its stubs."""
    if honest:
        from mutation import submission  # the same builder as the mutation catalogue's control

        return submission(CHAPTER, None)
    return nbformat.read(ROOT / "notebooks" / f"{CHAPTER}.ipynb", as_version=4)


def cell(nb, grade_id: str):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


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
             flagged=None, code="""
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
             what="prints the hidden tests from the course's source folder into its feedback",
             flagged=None, code=f"""
print(open({str(src)!r}, encoding="utf-8").read())
"""),
        Case("import-reference", "imports the reference implementation instead of writing one", flagged=False,
             code="""
from minibert.embeddings import BertEmbeddings, embedding_parameter_count
"""),
        Case("import-transformers", "wraps transformers' BertEmbeddings", code="""
from transformers.models.bert.modeling_bert import BertEmbeddings
"""),
        Case("edit-reference-package", needs_sandbox=True,
             what="appends code to the reference package's __init__.py", flagged=None, code=f"""
with open({str(pkg)!r}, "a") as f:
    f.write("\\nraise SystemExit('owned')\\n")
"""),
        Case("write-site-packages", needs_sandbox=True, what="installs a .pth file that every later kernel runs",
             flagged=None, code=f"""
with open({str(site / 'zz_owned.pth')!r}, "w") as f:
    f.write("import os\\n")
"""),
        Case("sys-exit", "calls sys.exit(0) before the tests", code="import sys\nsys.exit(0)\n"),
        Case("os-exit", "calls os._exit(0) before the tests", code="import os\nos._exit(0)\n"),
        Case("keyboard-interrupt", "raises KeyboardInterrupt", code="raise KeyboardInterrupt\n"),
        Case("infinite-loop", "loops forever at import time", flagged=False, code="while True:\n    pass\n"),
        Case("huge-allocation", "allocates 64 GiB", flagged=False, code="hog = bytearray(64 * 2**30)\n"),
        Case("fork-bomb", "forks without end", code="import os\nwhile True:\n    os.fork()\n"),
        Case("forge-result", "writes a forged 'passed' result to the grader's channel", code="""
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
        # ---- odd files with honest answers: they keep their points ----
        Case("deleted-test-cells", "deleted every test cell (honest answers)", honest=True, expect="full",
             flagged=False),
        Case("emptied-test-cells", "emptied every test cell and answered one exercise wrongly", flagged=False,
             expect="all-but-count"),
        Case("edited-test-cells", "replaced every test cell by `pass` and answered one exercise wrongly",
             flagged=False, expect="all-but-count"),
        Case("changed-cell-ids", "every cell id changed (honest answers)", honest=True, expect="full",
             flagged=False),
        Case("stripped-metadata", "nbgrader metadata removed from every cell (honest answers)", honest=True,
             expect="full", flagged=False),
        Case("stripped-everything", "metadata and ids both removed: the answers cannot be found", flagged=False),
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


def build(case: Case) -> bytes:
    """The submitted file of a case, as bytes."""
    if case.raw is not None:
        return case.raw
    nb = answered(case.honest)
    if case.code:
        cell(nb, "embeddings-solution").source = WRONG_EMBEDDINGS
        cell(nb, "count-solution").source = WRONG_COUNT + case.code
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
