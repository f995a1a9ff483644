# Generated from notebook 08_finetuning.ipynb by minibert_course.export: edit the notebook, not this file.
"""The fine-tuning comparison of chapter 08: every task from every starting point (`scratch`, our pretrained
checkpoint, MiniLM's weights), with the same data, loop and settings, several seeds each, and its table and figure.

Why a module of its own: `minibert.finetune` is the loop that fine-tunes one task from one start; the comparison is
a study built on it (`python -m minibert.finetune --compare`, `make finetune-compare`), which only calls `train`.

Why seeds: one run per cell says little. The seed draws the new head, the batch order and dropout (and, from scratch,
every weight); two seeds of the same recipe differ by several points on these small data sets. Each row of the
comparison is one run; `summarize` gives the mean and its standard error (sample standard deviation / sqrt(n)) per
task and start, which is what the text compares.
"""

from __future__ import annotations

import json
import math
import statistics
from importlib import resources
from pathlib import Path

from minibert import finetune  # the loop (the module, not its names: this cell runs in chapter 08's notebook too)

__all__ = ["compare", "summarize", "comparison_table", "plot_comparison", "write_comparison", "shipped_comparison",
           "recipe_for", "COMPARE_INITS", "COMPARE_RECIPE", "MINILM_RECIPE", "COMPARE_SEEDS"]

COMPARE_INITS = ("scratch", "runs/tiny/checkpoint", "minilm")
COMPARE_SEEDS = (0, 1, 2)
COMPARE_RECIPE = {  # per task, for the two tiny starts (scratch and ours); chosen on the dev splits
    "sentiment": dict(epochs=3),  # all 10,201 training snippets
    "ner": dict(epochs=10),  # all 1,837 training tweets: at 3 epochs (171 steps) both tiny models tag everything O
    "qa": dict(limit_train=1000, epochs=2),  # questions (each one or more windows of 192 positions)
}
MINILM_RECIPE = {  # MiniLM is about 25 times the computation per piece: the smaller budget it has had so far
    "sentiment": dict(limit_train=4000, epochs=2),
    "ner": dict(epochs=3),
    "qa": dict(limit_train=1000, epochs=2),
}


def recipe_for(task: str, init: str) -> dict:
    """The settings of `task` from `init`: MINILM_RECIPE for MiniLM's weights, COMPARE_RECIPE for the tiny starts."""
    return dict((MINILM_RECIPE if init == "minilm" else COMPARE_RECIPE).get(task, {}))


def _percent(task: str, value: float) -> float:
    return value if task == "qa" else 100 * value  # SQuAD scores are percentages already


def compare(tasks: tuple[str, ...] = tuple(finetune.TASKS), inits: tuple[str, ...] = COMPARE_INITS,
            out_root: str = "runs/finetune", progress: bool = True, seeds: tuple[int, ...] = (0,),
            **settings) -> list[dict]:
    """Every task from every starting point and seed, with the same data and loop (`recipe_for` per task and start,
    then `settings` for all). `scratch` takes the size and vocabulary of the checkpoint folder among `inits` (ours), so
    scratch vs ours differ in the first weights only. One row per run: test and dev score (%), the dev score after
    each epoch, wall time and the recipe."""
    ours = next((i for i in inits if i not in ("scratch", "minilm")), None)
    if ours and not (Path(ours) / "config.json").exists():
        raise FileNotFoundError(f"{ours} does not exist: run `make pretrain` first (about 15 minutes on 2 cores), "
                                "or leave it out of the starting points")
    rows = []
    for task in tasks:
        for init in inits:
            name = finetune._init_name(init)
            for seed in seeds:
                recipe = {**recipe_for(task, init), **settings, "seed": seed}
                cfg = finetune.FinetuneConfig(task=task, init=init, like=ours if init == "scratch" else None,
                                              out_dir=f"{out_root}/{task}-{name}" + (f"-seed{seed}" if seed else ""),
                                              **recipe)
                result = finetune.train(cfg, progress=progress)
                metric = result["metric"]
                rows.append({"task": task, "init": name, "seed": seed, "metric": metric,
                             "percent": _percent(task, result["test"][metric]), "test": result["test"],
                             "dev": _percent(task, result["dev"][metric]),
                             "dev_curve": [_percent(task, h[metric]) for h in result["history"]],
                             "seconds": result["seconds"], "recipe": recipe})
    return rows


def summarize(rows: list[dict]) -> list[dict]:
    """Per task and start, in the rows' order: runs, mean test and dev score (%) and their standard errors (0 for
    one run), mean wall time."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["task"], r["init"]), []).append(r)

    def mean_se(values: list[float]) -> tuple[float, float]:
        if len(values) < 2:
            return values[0], 0.0
        return statistics.mean(values), statistics.stdev(values) / math.sqrt(len(values))

    summary = []
    for (task, init), runs in groups.items():
        test, test_se = mean_se([r["percent"] for r in runs])
        dev, dev_se = mean_se([r["dev"] for r in runs if r.get("dev") is not None] or [math.nan])
        summary.append({"task": task, "init": init, "metric": runs[0]["metric"], "runs": len(runs), "test": test,
                        "test_se": test_se, "dev": dev, "dev_se": dev_se,
                        "seconds": statistics.mean(r["seconds"] for r in runs)})
    return summary


def comparison_table(rows: list[dict]) -> str:
    """The comparison as a text table: every run (test and dev score, wall time), then mean ± standard error."""
    lines = [f"{'task':<10} {'start':<8} {'seed':>4} {'test metric':<12} {'test':>6} {'dev':>6} {'wall':>8}"]
    for r in rows:
        lines.append(f"{r['task']:<10} {r['init']:<8} {r.get('seed', 0):>4} {r['metric']:<12} {r['percent']:6.1f} "
                     f"{r.get('dev', math.nan):6.1f} {r['seconds'] / 60:6.1f} m")
    lines += ["", f"{'task':<10} {'start':<8} {'runs':>4} {'test, mean ± s.e.':>18} {'dev, mean ± s.e.':>18}"]
    for s in summarize(rows):
        lines.append(f"{s['task']:<10} {s['init']:<8} {s['runs']:>4} {s['test']:11.1f} ± {s['test_se']:4.1f} "
                     f"{s['dev']:11.1f} ± {s['dev_se']:4.1f}")
    return "\n".join(lines)


def plot_comparison(rows: list[dict]):
    """One group of bars per task, one bar per starting point (matplotlib figure): mean test score (%), with the
    standard error as an error bar when there are several seeds."""
    import matplotlib.pyplot as plt

    summary = summarize(rows)
    tasks = list(dict.fromkeys(s["task"] for s in summary))
    inits = list(dict.fromkeys(s["init"] for s in summary))
    fig, ax = plt.subplots(figsize=(7, 3.5))
    width = 0.8 / len(inits)
    for k, init in enumerate(inits):
        xs, ys, errors = [], [], []
        for i, task in enumerate(tasks):
            for s in summary:
                if s["task"] == task and s["init"] == init:
                    xs.append(i + k * width)
                    ys.append(s["test"])
                    errors.append(s["test_se"])
        bars = ax.bar(xs, ys, width, yerr=errors, capsize=3, label=init)
        ax.bar_label(bars, fmt="%.0f", fontsize=8)
    ax.set_xticks([i + width * (len(inits) - 1) / 2 for i in range(len(tasks))],
                  [f"{t}\n({next(s['metric'] for s in summary if s['task'] == t)})" for t in tasks])
    ax.set(ylabel="test score (%), mean ± s.e.", ylim=(0, 100), title="fine-tuned from scratch vs pretrained")
    ax.legend(title="first weights")
    fig.tight_layout()
    return fig


def write_comparison(rows: list[dict], root: Path = Path("runs/finetune")) -> list[Path]:
    """comparison.json (the rows) and comparison.png (the bars) into `root`; returns their paths."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "comparison.json").write_text(json.dumps(rows, indent=2), encoding="utf-8")
    plot_comparison(rows).savefig(root / "comparison.png", dpi=120)
    return [root / "comparison.json", root / "comparison.png"]


def shipped_comparison() -> dict:
    """The comparison measured for the course and shipped with the package (minibert/resources/
    finetune_comparison.json): how it was run ("provenance") and its rows, so chapter 08 shows figures without the
    long run."""
    with resources.files("minibert").joinpath("resources/finetune_comparison.json").open(encoding="utf-8") as f:
        return json.load(f)
