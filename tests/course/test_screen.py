"""The static screen of sealed grading (minibert_course.sealed.screen): it must flag what reaches for the grader's
machinery, and must not flag honest answers (every solution of the course, and the usual honest idioms)."""

from __future__ import annotations

import pytest
from conftest import SOLUTIONS, read

from minibert_course.sealed import module_aliases, plan_source_notebook, screen


@pytest.mark.parametrize("solution", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_the_solutions_pass_the_screen(solution):
    plan = plan_source_notebook(read(solution))
    aliases = module_aliases([c.source for c in plan.cells if c.kind in ("given", "test")])
    verdict = screen([c.source for c in plan.cells if c.kind == "student"], aliases)
    assert verdict.tamper == [] and verdict.review == [], (verdict.tamper, verdict.review)


HONEST = [
    "import os\npath = os.path.join('a', 'b')\nos.makedirs(path, exist_ok=True)",
    "import sys\nprint('warning', file=sys.stderr)",
    "act = getattr(F, config.hidden_act, None) if hasattr(F, 'gelu') else None",
    "for i in range(3):\n    setattr(self, f'layer{i}', nn.Linear(2, 2))",
    "name = x.__class__.__name__",
    "if __name__ == '__main__':\n    pass",
    "try:\n    y = int(s)\nexcept ValueError:\n    y = 0",
    "from dataclasses import dataclass\n@dataclass\nclass Pair:\n    a: int\n"
    "    def __repr__(self):\n        return 'P'",
    "%%time\nx = sum(range(10))",
    "model = nn.Sequential(nn.Linear(2, 2))\nfor m in model.modules():\n    pass",
]


@pytest.mark.parametrize("code", HONEST)
def test_honest_code_is_not_tampering(code):
    assert screen([code], {"torch", "nn", "F", "np"}).tamper == []


TAMPER = {
    "get_ipython().input_transformers_post.append(f)": "get_ipython",
    "import sys\nsys.settrace(None)": "settrace",
    "import sys\nsys.modules['torch'] = None": "sys.modules",
    "import gc\ngc.get_objects()": "gc",
    "import inspect\ninspect.currentframe()": "inspect",
    "torch.allclose = lambda *a, **k: True": "torch.allclose",
    "np.testing.assert_allclose = print": "np.testing",
    "setattr(torch.testing, 'assert_close', print)": "setattr",
    "import builtins\nbuiltins.print = None": "builtins",
    "f = (lambda: 0).__globals__": "__globals__",
    "x = ().__class__.__base__.__subclasses__()": "__subclasses__",
    "class A:\n    def __eq__(self, o):\n        return True": "__eq__",
    "class T(torch.Tensor):\n    pass": "Tensor",
    "exec('1')": "exec",
    "eval('1')": "eval",
    "__import__('os')": "__import__",
    "import os\nos._exit(0)": "_exit",
    "import os\nos.fork()": "fork",
    "import os\nos.write(1, b'x')": "os.write",
    "import os as o\no.system('x')": "another name",
    "from os import system": "os.system",
    "import subprocess": "subprocess",
    "import ctypes": "ctypes",
    "import sqlite3": "sqlite3",
    "import importlib\nimportlib.import_module('os')": "importlib",
    "raise SystemExit": "SystemExit",
    "raise KeyboardInterrupt()": "KeyboardInterrupt",
    "getattr(__builtins__, 'ex' + 'ec')": "__builtins__",
    "import os\ngetattr(os, 'sys' + 'tem')('ls')": "computed",
    "import signal": "signal",
    "import threading": "threading",
    "from transformers import BertModel": "transformers",
    "open('/course/source/02_embeddings/02_embeddings.ipynb')": "/source/",
    "p = 'gradebook.db'": "gradebook",
    "type('X', (object,), {})": "type(",
}


@pytest.mark.parametrize("code", list(TAMPER), ids=list(TAMPER.values()))
def test_tampering_is_flagged_with_a_reason(code):
    verdict = screen([code], {"torch", "nn", "F", "np"})
    assert verdict.tamper, f"not flagged: {code!r}"
    assert any(TAMPER[code] in reason for reason in verdict.tamper), verdict.tamper
