"""nbgrader configuration of the minibert course (used by `make release` and `make grade`).

Run nbgrader from the course folder (it reads nbgrader_config.py from the current folder only), with the
course's venv `bin` first on PATH (nbgrader runs `alembic` from PATH).
"""

from pathlib import Path

import nbgrader
from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import (
    AssignLatePenalties,
    CheckCellMetadata,
    ClearHiddenTests,
    ClearMarkScheme,
    ClearOutput,
    ComputeChecksums,
    GetGrades,
    IgnorePattern,
    IncludeHeaderFooter,
    InstantiateTests,
    LimitOutput,
    LockCells,
    SaveAutoGrades,
    SaveCells,
)

import minibert_course
from minibert_course.nbgrader_ext import ClearGraderMetadata, HideTestTracebacks, NamedStubs, SealedExecute

c = get_config()  # noqa: F821 (injected by traitlets)

c.CourseDirectory.course_id = "minibert"
c.ExecutePreprocessor.kernel_name = "python3"
c.Execute.kernel_name = "python3"
c.Execute.timeout = 300  # seconds per cell; every solution notebook runs in under 2 minutes in all
c.Execute.interrupt_on_timeout = True
c.LimitOutput.max_lines = 200

# nbgrader's default list, with ClearSolutions replaced by stubs that name the missing function.
c.GenerateAssignment.preprocessors = [
    IncludeHeaderFooter,
    InstantiateTests,
    LockCells,
    NamedStubs,
    ClearGraderMetadata,
    ClearOutput,
    CheckCellMetadata,
    ComputeChecksums,
    SaveCells,
    ClearHiddenTests,
    ClearMarkScheme,
    ComputeChecksums,
    CheckCellMetadata,
]

# Autograde runs the submission sealed (minibert_course.sealed): the instructor's notebook with the student's
# answers, in a sandboxed plain interpreter, instead of nbgrader's Execute (an IPython kernel that the submission
# could hook). The rest of nbgrader's autograde pipeline is unchanged.
c.Autograde.autograde_preprocessors = [
    SealedExecute,
    IgnorePattern,
    ClearMetadataPreprocessor,
    LimitOutput,
    SaveAutoGrades,
    AssignLatePenalties,
    CheckCellMetadata,
]

# Feedback never shows hidden tests, nor the tracebacks of test cells (they quote the test code); a failing visible
# test shows its message. HideTestTracebacks runs before ClearHiddenTests: it needs the hidden-test markers.
c.GenerateFeedback.preprocessors = [GetGrades, HideTestTracebacks, ClearHiddenTests, CSSHTMLHeaderPreprocessor]
# Feedback pages render offline: our feedback/mathjax.html.j2 (first on the path) replaces the CDN MathJax.
c.HTMLExporter.extra_template_basedirs = [
    str(Path(minibert_course.__file__).parent / "templates"),
    str(Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates"),
]
