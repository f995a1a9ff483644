"""Course tools leave the process as they found it: PATH, the export folder and the warnings filters are changed only
while they need them (a test or a notebook that runs after them sees its own environment)."""

from __future__ import annotations

import os
import warnings

from conftest import _autograder

from minibert_course import release


def test_release_puts_the_venv_on_path_only_while_nbgrader_runs(monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin")
    with release.venv_on_path():
        first = os.environ["PATH"].split(os.pathsep)[0]
        assert first != "/usr/bin" and os.path.exists(os.path.join(first, "python")), first
    assert os.environ["PATH"] == "/usr/bin"
    monkeypatch.delenv("PATH")
    with release.venv_on_path():
        pass
    assert "PATH" not in os.environ


def test_merging_gradebooks_leaves_the_warnings_filters_alone(tmp_path):
    grade = _autograder("grade")
    from nbgrader.api import Gradebook

    for name in ("main", "shard"):
        with Gradebook(f"sqlite:///{tmp_path / name}.db", "minibert"):
            pass
    before = list(warnings.filters)
    assert grade.merge_gradebook(tmp_path / "main.db", tmp_path / "shard.db") == 0
    assert warnings.filters == before, "merge_gradebook changed the process-wide warnings filters"
