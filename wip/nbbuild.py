"""Build a solution notebook from a cell script.

Cells start with a line `#%% KIND [key=value ...]`:
  md                      markdown
  code                    given code (exported when it starts with #| export ...)
  solution id=GRADE_ID    an answer cell (nbgrader solution)
  test id=GRADE_ID pts=N  a graded test cell (locked)
  manual id=GRADE_ID pts=N  a manually graded markdown answer (nbgrader solution + grade)
Cell ids: PREFIX-NN for md/code, the grade_id for nbgrader cells.
"""
import json, sys, re
src_path, out_path, prefix = sys.argv[1], sys.argv[2], sys.argv[3]
text = open(src_path, encoding="utf-8").read()
parts = re.split(r"^#%% ?(.*)$", text, flags=re.M)
cells, n = [], 0
for header, body in zip(parts[1::2], parts[2::2]):
    kind, *kv = header.split()
    opts = dict(x.split("=", 1) for x in kv)
    body = body.strip("\n")
    meta = {}
    if kind in ("md", "code"):
        n += 1
        cid = f"{prefix}-{n:02d}"
    else:
        cid = opts["id"]
        meta = {"nbgrader": {"grade": kind in ("test", "manual"), "grade_id": cid, "locked": kind == "test",
                             "schema_version": 3, "solution": kind in ("solution", "manual"), "task": False}}
        if kind in ("test", "manual"):
            meta["nbgrader"]["points"] = int(opts["pts"])
        if "scheme" in opts:
            pass
    cell_type = "markdown" if kind in ("md", "manual") else "code"
    cell = {"cell_type": cell_type, "id": cid, "metadata": meta, "source": body.splitlines(keepends=True)}
    if cell_type == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    cells.append(cell)
nb = {"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python",
      "name": "python3"}, "language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
open(out_path, "w", encoding="utf-8").write(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
print(len(cells), "cells")
