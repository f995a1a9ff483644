"""nbgrader configuration of the minibert course (used by `make release` and `make grade`).

Run nbgrader from the course folder (it reads nbgrader_config.py from the current folder only), with the
course's venv `bin` first on PATH (nbgrader runs `alembic` from PATH).
"""

from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import (
    CheckCellMetadata,
    ClearHiddenTests,
    ClearMarkScheme,
    ClearOutput,
    ComputeChecksums,
    GetGrades,
    IncludeHeaderFooter,
    InstantiateTests,
    LockCells,
    SaveCells,
)

from minibert_course.nbgrader_ext import HideTestTracebacks, NamedStubs

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
    ClearOutput,
    CheckCellMetadata,
    ComputeChecksums,
    SaveCells,
    ClearHiddenTests,
    ClearMarkScheme,
    ComputeChecksums,
    CheckCellMetadata,
]

# Feedback never shows hidden tests, nor the tracebacks of test cells (they quote the test code).
c.GenerateFeedback.preprocessors = [GetGrades, ClearHiddenTests, HideTestTracebacks, CSSHTMLHeaderPreprocessor]
