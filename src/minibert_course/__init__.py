"""Course tooling for minibert: the notebook exporter, the release build and nbgrader extensions.

Students meet two names from here, in the first and the last code cell of each notebook:
`track_cells()` records the cells the kernel runs, and `export_notebook(...)` writes the notebook's
exported cells into the student's own `minibert` package.
"""

from minibert_course.export import ExportError, export_notebook, track_cells

__all__ = ["ExportError", "export_notebook", "track_cells"]
