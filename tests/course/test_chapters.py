"""The chapter registry (minibert_course.chapters) is read from the notebooks, and every list of chapters in the
course is that one: the course map, the certificate, the lecture coverage, the grader, the mutation catalogue."""

from __future__ import annotations

import json
import shutil

import nbformat
import pytest
from conftest import ROOT, SOLUTIONS, _autograder

from minibert_course import certify, chapters, course_map, lecture
from minibert_course.export import INIT, export_cells


def test_every_solution_notebook_is_a_chapter_in_order():
    assert chapters.stems() == [p.stem for p in SOLUTIONS]
    assert [c.number for c in chapters.chapters()] == [f"{i:02d}" for i in range(1, len(SOLUTIONS) + 1)]


def test_modules_are_the_export_cells_and_each_module_has_one_chapter():
    owner = {}
    for c, path in zip(chapters.chapters(), SOLUTIONS, strict=True):
        exported = [e.module for e in export_cells(nbformat.read(path, as_version=4)) if e.module != INIT]
        assert c.modules == tuple(dict.fromkeys(exported)), c.stem
        for module in c.modules:
            assert module not in owner, f"{module} is exported by {owner[module]} and {c.stem}"
            owner[module] = c.stem
    package = {p.stem for p in (ROOT / "src" / "minibert").glob("*.py")} - {INIT}
    assert set(owner) == package, f"modules no chapter exports: {package - set(owner)}; missing: {set(owner) - package}"


def test_each_chapters_package_tests_exist_and_name_its_modules():
    listed = chapters.package_tests()
    assert len(listed) == len(set(listed)), "a test file is listed by two chapters"
    for c in chapters.chapters():
        assert c.tests, f"{c.stem} lists no package tests"
        for name in c.tests:
            assert (ROOT / "tests" / name).is_file(), f"{c.stem} lists tests/{name}, which does not exist"
        text = "".join((ROOT / "tests" / t).read_text(encoding="utf-8") for t in c.tests)
        assert any(f"minibert.{m}" in text or f"minibert import {m}" in text for m in c.modules), c.stem
    assert all(n in chapters.stems() or n in [c.number for c in chapters.chapters()]
               for c in chapters.chapters() for n in c.needs)
    assert all(n < c.number for c in chapters.chapters() for n in c.needs), "a chapter needs a later one"


def test_points_are_the_nbgrader_metadata():
    for c, path in zip(chapters.chapters(), SOLUTIONS, strict=True):
        nb = json.loads(path.read_text(encoding="utf-8"))
        grades = [(cell["cell_type"], cell["metadata"]["nbgrader"]) for cell in nb["cells"]
                  if cell["metadata"].get("nbgrader", {}).get("grade")]
        assert c.auto_points == sum(g.get("points", 0) for kind, g in grades if kind == "code"), c.stem
        assert c.manual_points == sum(g.get("points", 0) for kind, g in grades if kind == "markdown"), c.stem
        assert c.exercises == sum(bool(cell["metadata"].get("nbgrader", {}).get("solution")) for cell in nb["cells"])
    assert chapters.chapter("07").manual_points == 2 and chapters.chapter("10_beyond_bert").manual_points == 7


def test_a_student_kit_reads_the_same_registry_from_the_release_notebooks(tmp_path):
    """A kit has no solutions/: the release notebooks keep the metadata, the export cells and the points."""
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks")
    assert chapters.folder(tmp_path) == tmp_path / "notebooks"
    assert chapters.chapters(tmp_path) == chapters.chapters()


def test_every_list_of_chapters_is_the_registry():
    grade, mutation = _autograder("grade"), _autograder("mutation")
    assert certify.CHAPTERS == course_map.CHAPTERS == chapters.chapters()
    assert certify.PACKAGE_TESTS == chapters.package_tests()
    assert list(lecture.CHAPTERS.values()) == chapters.stems() == grade.all_chapters() == mutation.chapters()
    assert grade.manual_points("10_beyond_bert") == 7


def test_a_notebook_without_its_metadata_or_title_says_what_to_add(tmp_path):
    nb = json.loads(SOLUTIONS[1].read_text(encoding="utf-8"))
    (tmp_path / "solutions").mkdir()
    bare = dict(nb, metadata={k: v for k, v in nb["metadata"].items() if k != "minibert"})
    (tmp_path / "solutions" / SOLUTIONS[1].name).write_text(json.dumps(bare), encoding="utf-8")
    with pytest.raises(ValueError, match="'minibert' entry with 'tests'"):
        chapters.chapters(tmp_path)
    untitled = dict(nb, cells=nb["cells"][1:])
    (tmp_path / "solutions" / SOLUTIONS[1].name).write_text(json.dumps(untitled), encoding="utf-8")
    chapters._chapters.cache_clear()
    with pytest.raises(ValueError, match="no markdown cell has the chapter's heading"):
        chapters.chapters(tmp_path)
    (tmp_path / "solutions" / SOLUTIONS[1].name).write_text('{"cells": [', encoding="utf-8")
    chapters._chapters.cache_clear()
    with pytest.raises(ValueError, match="not a readable notebook"):
        chapters.chapters(tmp_path)
    with pytest.raises(KeyError, match="the chapters are 01_wordpiece"):
        chapters.chapter("11")


def test_the_package_tests_are_tests_and_the_course_tests_are_tests_course():
    """The split is by folder: tests/ holds exactly the package tests the chapters list (the student kit ships them),
    tests/course/ the course's own (notebooks, grader, kit, docs), which need the repository."""
    top = {p.name for p in (ROOT / "tests").glob("test_*.py")}
    assert top == set(chapters.package_tests()), (
        f"in tests/ but no chapter lists them: {sorted(top - set(chapters.package_tests()))} (list them in a "
        "notebook's minibert.tests, or move them to tests/course/)")
    course = {p.name for p in (ROOT / "tests" / "course").glob("test_*.py")}
    assert course and not course & top


def test_a_heading_below_other_cells_a_gap_a_repeat_or_no_notebooks(tmp_path):
    """The title is the first '# Chapter' heading wherever it sits; chapters are numbered 01, 02, ... once each; a
    folder without chapters is an error that names it, not an empty course."""
    folder = tmp_path / "solutions"
    folder.mkdir()
    with pytest.raises(ValueError, match=f"no chapter notebooks .* in {tmp_path}"):  # solutions/ or notebooks/
        chapters.chapters(tmp_path)
    nb = json.loads(SOLUTIONS[0].read_text(encoding="utf-8"))
    nb["cells"].insert(0, {"cell_type": "markdown", "id": "note", "metadata": {}, "source": ["my notes"]})
    (folder / SOLUTIONS[0].name).write_text(json.dumps(nb), encoding="utf-8")
    assert chapters.chapters(tmp_path)[0].title == chapters.chapter("01").title
    chapters._chapters.cache_clear()
    (folder / "03_copy.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    with pytest.raises(ValueError, match=r"numbered \['01', '03'\]"):
        chapters.chapters(tmp_path)
    chapters._chapters.cache_clear()


def test_a_frozen_registry_is_the_registry(tmp_path, monkeypatch):
    """A kit reads chapters.json, written from the notebooks when the kit is built: the same chapters."""
    frozen = chapters.freeze(tmp_path / "chapters.json")
    monkeypatch.setattr(chapters, "FROZEN", frozen)
    chapters._frozen.cache_clear()
    try:
        assert chapters.chapters() == chapters._chapters(chapters.folder(ROOT))
        assert chapters.chapter("10").title == "Beyond BERT: RoBERTa, ELECTRA, the masking rate"
    finally:
        chapters._frozen.cache_clear()
