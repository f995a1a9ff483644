"""Each minibert module declares its API in `__all__`, the README's public API table lists exactly that, and no module
name shadows a PyTorch function with a different meaning.

Why: a learner imports `minibert` after the course; what the README promises must be what the package has, and a
teaching helper must be a documented part of the API, not an accident of the namespace.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import torch.nn.functional as F
from conftest import ROOT

import minibert


def public_names(module) -> set[str]:
    """Functions and classes defined in the module itself, without a leading underscore."""
    return {name for name, value in vars(module).items() if not name.startswith("_")
            and (inspect.isfunction(value) or inspect.isclass(value)) and value.__module__ == module.__name__}


def readme_table() -> dict[str, set[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Public API", 1)[1].split("\n## ", 1)[0]
    table = {}
    for line in section.splitlines():
        match = re.match(r"\| `minibert\.(\w+)` \|(.*)\|(.*)\|\s*$", line)
        if match:
            names = re.findall(r"`(\w+)`", match.group(2) + match.group(3))
            table[match.group(1)] = {n for n in names if n[0].isalpha()}
    return table


METHODS = {"from_pretrained", "save_pretrained", "init_weights", "num_parameters",
           "scaled_dot_product_attention"}  # methods, and the PyTorch function named in the text


def test_every_module_declares_its_api_in___all___and_the_readme_lists_it():
    """Each module says what it offers in `__all__`; the README's row is that list; every name there exists; and what
    a module defines without a leading underscore is in it (an internal, such as a CLI's parser, starts with _)."""
    table = readme_table()
    modules = sorted(m.name for m in pkgutil.iter_modules(minibert.__path__))
    assert sorted(table) == modules, f"README's API table has {sorted(table)}, the package has {modules}"
    for name in modules:
        module = importlib.import_module(f"minibert.{name}")
        declared = getattr(module, "__all__", None)
        assert isinstance(declared, list), f"minibert.{name} has no __all__ list"
        assert len(declared) == len(set(declared)), f"minibert.{name}.__all__ repeats a name"
        absent = [n for n in declared if not hasattr(module, n)]
        assert not absent, f"minibert.{name}.__all__ names {absent}, which the module does not define"
        listed = table[name] - METHODS
        assert set(declared) == listed, (
            f"minibert.{name}: in __all__ but not in the README {sorted(set(declared) - listed)}; "
            f"in the README but not in __all__ {sorted(listed - set(declared))}")
        undeclared = public_names(module) - set(declared)
        assert not undeclared, (
            f"minibert.{name} defines {sorted(undeclared)} without an underscore and leaves them out of __all__: "
            "declare them, or mark them internal with a leading underscore")


def test_the_package_declares_the_models_and_tokenizers():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    sentence = text.split("## Public API", 1)[1].split("The modules", 1)[0]
    assert set(minibert.__all__) == set(re.findall(r"\b(Bert\w+|BasicTokenizer|WordPieceTokenizer)\b", sentence))
    assert all(hasattr(minibert, n) for n in minibert.__all__)


def test_package_exports_the_models_and_tokenizers():
    for name in ("BertConfig", "BertModel", "BertForPreTraining", "BertForMaskedLM", "BertTokenizer",
                 "BasicTokenizer", "WordPieceTokenizer"):
        assert hasattr(minibert, name), f"from minibert import {name} should work"


def test_no_module_shadows_a_torch_function():
    """`minibert.attention.scaled_dot_product_attention` used to return (output, probs) under the name of PyTorch's
    function that returns the output only: `from minibert.attention import *` then broke code written for torch."""
    for info in pkgutil.iter_modules(minibert.__path__):
        module = importlib.import_module(f"minibert.{info.name}")
        clashes = sorted(n for n in public_names(module) if inspect.isfunction(getattr(module, n)) and hasattr(F, n))
        assert not clashes, f"minibert.{info.name} defines {clashes}, which shadow torch.nn.functional"
