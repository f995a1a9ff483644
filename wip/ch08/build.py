"""Assemble wip/ch08/08_finetuning.py (a cell script) from markdown, the metrics cells and the module sources."""
import re
from pathlib import Path

HERE = Path(__file__).parent
SRC = HERE.parents[1] / "src" / "minibert"


def module(name: str) -> str:
    text = (SRC / f"{name}.py").read_text(encoding="utf-8")
    return re.sub(r"^# Generated from notebook .*\n", "", text).strip("\n")


def sections(name: str) -> list[str]:
    """The module cut at its '# ----- title' separator lines (dropped: the notebook's headings replace them)."""
    return [p.strip("\n") for p in re.split(r"^# -{20,} ?.*$", module(name), flags=re.M)]


cells = []
add = cells.append
add("#%% md\n" + (HERE / "intro.md").read_text(encoding="utf-8").strip("\n"))
add("#%% code\n#| default_exp finetune\nfrom minibert_course import export_notebook, track_cells\n\ntrack_cells()")
add("#%% md\n" + (HERE / "data.md").read_text(encoding="utf-8").strip("\n"))
add("#%% code\n#| export task_data\n" + module("task_data"))
add("#%% code\n#| export qa_generation\n" + module("qa_generation"))
add("#%% code\n" + (HERE / "data_demo.py").read_text(encoding="utf-8").strip("\n"))
add((HERE / "metrics_cells.py").read_text(encoding="utf-8").strip("\n"))
fin = sections("finetune")
add("#%% md\n" + (HERE / "loop.md").read_text(encoding="utf-8").strip("\n"))
add("#%% code\n#| export\n" + fin[0] + "\n\n\n" + fin[1])
add("#%% md\n" + (HERE / "model.md").read_text(encoding="utf-8").strip("\n"))
add("#%% code\n#| export\n" + fin[2])
add("#%% md\n" + (HERE / "train.md").read_text(encoding="utf-8").strip("\n"))
add("#%% code\n#| export\n" + fin[3])
add("#%% code\n" + (HERE / "run_demo.py").read_text(encoding="utf-8").strip("\n"))
add("#%% md\n" + (HERE / "compare.md").read_text(encoding="utf-8").strip("\n"))
add("#%% code\n#| export\n" + fin[4] + "\n\n\n" + fin[5])
add("#%% code\n" + (HERE / "compare_demo.py").read_text(encoding="utf-8").strip("\n"))
add("#%% md\n" + (HERE / "summary.md").read_text(encoding="utf-8").strip("\n"))
add('#%% code\nfrom minibert_course import export_notebook  # noqa: E402  (run alone, it says what to do first)\n\n'
    'export_notebook("08_finetuning.ipynb")')
(HERE / "08_finetuning.py").write_text("\n".join(cells) + "\n", encoding="utf-8")
print(len(cells), "blocks")
