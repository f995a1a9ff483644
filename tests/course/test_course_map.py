"""The course map (notebook 00) and the README's chapter table come from one source, minibert_course.course_map:
every chapter, in order, with its points read from the solution notebooks and its measured run time."""

from __future__ import annotations

import json
import re

from conftest import ROOT, SOLUTIONS

from minibert_course import course_map


def test_every_solution_notebook_is_on_the_map_in_order():
    assert [c.stem for c in course_map.CHAPTERS] == [p.stem for p in SOLUTIONS]


def test_the_readme_table_is_the_generated_one():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert course_map.readme_table() in readme, "README's chapter table is stale: paste `python -m " \
        "minibert_course.course_map`'s table into the README"


def test_notebook_00_is_released_and_lists_every_chapter_with_its_points_and_time():
    nb = json.loads((ROOT / "notebooks" / course_map.MAP_NOTEBOOK).read_text(encoding="utf-8"))
    assert nb == course_map.notebook(), "notebooks/00_course_map.ipynb is stale: run `make release`"
    text = "".join("".join(c["source"]) for c in nb["cells"])
    for heading in ("## The chapters", "## How grading works", "## Your package, at the end", "Validate",
                    "Hidden tests", "import minibert"):
        assert heading in text, heading
    times = course_map.measured()["seconds"]
    for chapter in course_map.CHAPTERS:
        row = next(line for line in text.splitlines() if line.startswith(f"| {chapter.number} |"))
        auto, manual, exercises = course_map.points(chapter.stem)
        assert f"| {exercises} | {auto:g}" in row, row
        assert chapter.stem in times and "not measured" not in row, f"{chapter.stem} has no measured run time"


def test_points_are_read_from_the_notebooks():
    auto, manual, exercises = course_map.points("07_task_heads")
    nb = json.loads((ROOT / "solutions" / "07_task_heads.ipynb").read_text(encoding="utf-8"))
    grades = [c["metadata"]["nbgrader"] for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade")]
    assert auto + manual == sum(g["points"] for g in grades) and manual == 2  # the one-checkpoint answer
    assert exercises == len(re.findall(r'"solution": true', json.dumps(nb)))
    assert course_map.points("10_beyond_bert")[1] == 7  # the comparison's why and the five self-check answers


def test_chapters_give_no_run_time_of_their_own():
    """One run time per chapter, the map's: a chapter that says "this notebook runs in about two minutes" drifts
    from the measured figure."""
    claims = re.compile(r"(notebook|chapter) runs[^.]{0,60}?\b(in about|in under|about) [\w.]+ (seconds?|minutes?|s\b)",
                        re.IGNORECASE)
    for path in SOLUTIONS:
        nb = json.loads(path.read_text(encoding="utf-8"))
        for cell in nb["cells"]:
            if cell["cell_type"] == "markdown":
                found = claims.search("".join(cell["source"]))
                assert not found, f"{path.name} {cell['id']}: {found.group(0)!r}: point to the course map's run time"


def test_notebook_00_has_a_korean_summary_and_says_where_the_review_has_no_checks():
    text = "".join("".join(c["source"]) for c in course_map.notebook()["cells"])
    assert "## 핵심 정리 (Korean summary)" in text and "docs/lecture_coverage.md" in text
    assert "chapter 10's review" in text and "only the **form**" in text
