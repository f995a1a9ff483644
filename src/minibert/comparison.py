# Generated from notebook 08_finetuning.ipynb by minibert_course.export: edit the notebook, not this file.
"""The fine-tuning comparison of chapter 08: every task from every starting point (`scratch`, our pretrained
checkpoint, MiniLM's weights), with the same data, loop and settings, and its table and figure.

Why a module of its own: `minibert.finetune` is the loop that fine-tunes one task from one start; the comparison is
a study built on it (`python -m minibert.finetune --compare`, `make finetune-compare`), which only calls `train`.
"""

from __future__ import annotations

import json
from pathlib import Path

from minibert import finetune  # the loop (the module, not its names: this cell runs in chapter 08's notebook too)

__all__ = ["compare", "comparison_table", "plot_comparison", "write_comparison", "COMPARE_INITS", "COMPARE_RECIPE"]

COMPARE_INITS = ("scratch", "runs/tiny/checkpoint", "minilm")
COMPARE_RECIPE = {  # per task, for every start: about 30 minutes on 2 cores in all, most of it for MiniLM
    "sentiment": dict(limit_train=4000, epochs=2),
    "ner": dict(epochs=3),  # all 1,837 training tweets
    "qa": dict(limit_train=1000, epochs=2),  # questions (each one or more windows of 192 positions)
}


def compare(tasks: tuple[str, ...] = tuple(finetune.TASKS), inits: tuple[str, ...] = COMPARE_INITS,
            out_root: str = "runs/finetune", progress: bool = True, **settings) -> list[dict]:
    """Every task from every starting point, with the same data, loop and settings (COMPARE_RECIPE per task, then
    `settings` for all). `scratch` takes the size and vocabulary of the checkpoint folder among `inits` (ours), so
    scratch vs ours differ in the first weights only."""
    ours = next((i for i in inits if i not in ("scratch", "minilm")), None)
    if ours and not (Path(ours) / "config.json").exists():
        raise FileNotFoundError(f"{ours} does not exist: run `make pretrain` first (about 10 minutes on 2 cores), "
                                "or leave it out of the starting points")
    rows = []
    for task in tasks:
        for init in inits:
            cfg = finetune.FinetuneConfig(task=task, init=init, like=ours if init == "scratch" else None,
                                          out_dir=f"{out_root}/{task}-{finetune._init_name(init)}",
                                          **{**COMPARE_RECIPE.get(task, {}), **settings})
            result = finetune.train(cfg, progress=progress)
            score = result["test"][result["metric"]]
            rows.append({"task": task, "init": finetune._init_name(init), "metric": result["metric"],
                         "percent": score if task == "qa" else 100 * score,  # SQuAD scores are percentages already
                         "test": result["test"], "seconds": result["seconds"]})
    return rows


def comparison_table(rows: list[dict]) -> str:
    """The comparison as a text table: test score (%) and wall time of each run."""
    lines = [f"{'task':<10} {'start':<8} {'test metric':<12} {'score':>6} {'wall':>8}"]
    for r in rows:
        lines.append(f"{r['task']:<10} {r['init']:<8} {r['metric']:<12} {r['percent']:6.1f} {r['seconds'] / 60:6.1f} m")
    return "\n".join(lines)


def plot_comparison(rows: list[dict]):
    """One group of bars per task, one bar per starting point (matplotlib figure), scores in percent."""
    import matplotlib.pyplot as plt

    tasks = list(dict.fromkeys(r["task"] for r in rows))
    inits = list(dict.fromkeys(r["init"] for r in rows))
    fig, ax = plt.subplots(figsize=(7, 3.5))
    width = 0.8 / len(inits)
    for k, init in enumerate(inits):
        xs, ys = [], []
        for i, task in enumerate(tasks):
            for r in rows:
                if r["task"] == task and r["init"] == init:
                    xs.append(i + k * width)
                    ys.append(r["percent"])
        bars = ax.bar(xs, ys, width, label=init)
        ax.bar_label(bars, fmt="%.0f", fontsize=8)
    ax.set_xticks([i + width * (len(inits) - 1) / 2 for i in range(len(tasks))],
                  [f"{t}\n({next(r['metric'] for r in rows if r['task'] == t)})" for t in tasks])
    ax.set(ylabel="test score (%)", ylim=(0, 100), title="fine-tuned from scratch vs pretrained")
    ax.legend(title="first weights")
    fig.tight_layout()
    return fig


def write_comparison(rows: list[dict], root: Path = Path("runs/finetune")) -> list[Path]:
    """comparison.json (the rows) and comparison.png (the bars) into `root`; returns their paths."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "comparison.json").write_text(json.dumps(rows, indent=2), encoding="utf-8")
    plot_comparison(rows).savefig(root / "comparison.png", dpi=120)
    return [root / "comparison.json", root / "comparison.png"]
