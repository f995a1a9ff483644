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
import warnings
from importlib import resources
from pathlib import Path

import torch
from torch.nn import functional as F

from minibert import finetune  # the loop (the module, not its names: this cell runs in chapter 08's notebook too)

__all__ = ["compare", "summarize", "comparison_table", "plot_comparison", "write_comparison", "shipped_comparison",
           "breakdowns", "breakdown_tables", "plot_breakdowns", "recipe_for", "linear_probe", "probe_table",
           "quick_qa_study", "probe_answers_table", "COMPARE_INITS", "COMPARE_RECIPE", "MINILM_RECIPE", "COMPARE_SEEDS",
           "QUICK_QA_RECIPE", "QA_PROBES"]

COMPARE_INITS = ("scratch", "runs/tiny/checkpoint", "minilm")
COMPARE_SEEDS = (0, 1, 2)
COMPARE_RECIPE = {  # per task, for the two tiny starts (scratch and ours); chosen on the dev splits
    "sentiment": dict(epochs=3),  # all 10,201 training snippets
    "ner": dict(epochs=10),  # all 1,837 training tweets: at 3 epochs (171 steps) both tiny models tag everything O
    "qa": dict(limit_train=1000, epochs=2),  # questions (each one or more windows of 192 positions)
}
MINILM_RECIPE = {  # MiniLM is about 25 times the computation per piece: its own recipe, chosen on dev
    "sentiment": dict(epochs=2),  # all 10,201 training snippets (4,000 gave 82.3 +- 0.4 on test)
    "ner": dict(epochs=8),  # at 3 the dev F1 was still climbing (seed 0: 0, 18, 26); 8 levels off
    "qa": dict(epochs=2),  # all 2,524 generated training questions (1,000 gave dev F1 61.5 +- 7.3)
}


def recipe_for(task: str, init: str) -> dict:
    """The settings of `task` from `init`: MINILM_RECIPE for MiniLM's weights, COMPARE_RECIPE for the tiny starts."""
    return dict((MINILM_RECIPE if init == "minilm" else COMPARE_RECIPE).get(task, {}))


def _percent(task: str, value: float) -> float:
    return value if task == "qa" else 100 * value  # SQuAD scores are percentages already


def _mean_se(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return (values[0] if values else math.nan), 0.0
    return statistics.mean(values), statistics.stdev(values) / math.sqrt(len(values))


def compare(tasks: tuple[str, ...] = tuple(finetune.TASKS), inits: tuple[str, ...] = COMPARE_INITS,
            out_root: str = "runs/finetune", progress: bool = True, seeds: tuple[int, ...] = (0,),
            **settings) -> list[dict]:
    """Every task from every starting point and seed, with the same data and loop (`recipe_for` per task and start,
    then `settings` for all). `scratch` takes the size and vocabulary of the checkpoint folder among `inits` (ours), so
    scratch vs ours differ in the first weights only. One row per run: test and dev score (%), the dev score after
    each epoch, wall time and the recipe."""
    ours = next((i for i in inits if i not in ("scratch", "minilm")), None)
    if ours and not (Path(ours) / "config.json").exists():
        raise FileNotFoundError(f"{ours} does not exist: run `make pretrain` first (8 to 9 minutes on 2 cores), "
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
                             "seconds": result["seconds"], "recipe": recipe, "analysis": result["analysis"]})
    return rows


QUICK_QA_RECIPE = dict(  # chapter 08's quick QA model (its demo cell): MiniLM, every generated question once
    epochs=1, batch_size=16, learning_rate=1e-3, qa_context="sentence", freeze_layers=4, max_seq_length=128,
    doc_stride=32)
QA_PROBES = (  # the lecture's question, two rewordings, and three questions on other sentences
    ("Which company released BERT?", "BERT was released by Google in 2018."),
    ("Who released BERT?", "BERT was released by Google in 2018."),
    ("When was BERT released?", "BERT was released by Google in 2018."),
    ("Which company released BERT?", "Google released BERT in 2018."),
    ("Who wrote Hamlet?", "Hamlet is a tragedy written by William Shakespeare around 1600."),
    ("Where was Einstein born?", "Albert Einstein was born in Ulm, Germany, in 1879."),
    ("In what year was Einstein born?", "Albert Einstein was born in Ulm, Germany, in 1879."),
)


def quick_qa_study(seeds: tuple[int, ...] = COMPARE_SEEDS, freeze_layers: tuple[int, ...] = (4, 0),
                   out_root: str = "runs/finetune/quick", progress: bool = True, **settings) -> list[dict]:
    """Chapter 08's quick QA model (`QUICK_QA_RECIPE`) for every seed, as the demo trains it and with `freeze_layers`
    changed (0: every layer trained, the control). The demo scores 20 dev and test questions to be quick; here the
    whole splits are scored, and the `QA_PROBES` answered. Rows as `compare`'s (so `comparison_table` prints them;
    init "minilm-quick-fN"), plus "answers", one per probe, and "train_seconds", the wall time before the scoring.
    `settings` override the recipe (a test's few examples).

    Why a study of its own: the quick recipe was chosen by its answers to the lecture's question, which one seed can
    give by luck; the rows say how often it does, and what the freezing adds, from one command."""
    from minibert.tokenization import BertTokenizer

    rows = []
    for frozen in freeze_layers:
        for seed in seeds:
            recipe = {**QUICK_QA_RECIPE, **settings, "freeze_layers": frozen, "seed": seed}
            cfg = finetune.FinetuneConfig(task="qa", init="minilm", out_dir=f"{out_root}/qa-f{frozen}-seed{seed}",
                                          **recipe)
            result = finetune.train(cfg, progress=progress)
            model = finetune.TASKS["qa"].model_class.from_pretrained(result["checkpoint"]).eval()
            tokenizer = BertTokenizer.from_pretrained(result["checkpoint"])
            answers = [{"question": q, "context": c, "answer": finetune.answer_question(
                model, tokenizer, q, c, cfg.max_seq_length, cfg.doc_stride)["text"]} for q, c in QA_PROBES]
            rows.append({"task": "qa", "init": f"minilm-quick-f{frozen}", "seed": seed, "metric": "f1",
                         "percent": _percent("qa", result["test"]["f1"]), "test": result["test"],
                         "dev": _percent("qa", result["dev"]["f1"]),
                         "dev_curve": [_percent("qa", h["f1"]) for h in result["history"]],
                         "seconds": result["seconds"], "train_seconds": result["history"][-1]["seconds"],
                         "recipe": recipe, "analysis": result["analysis"], "answers": answers})
    return rows


def probe_answers_table(rows: list[dict]) -> str:
    """The probes' answers of `quick_qa_study`'s rows as text: one block per probe, one line per run."""
    lines = []
    for i, (question, context) in enumerate(QA_PROBES):
        lines.append(f"{question}  /  {context}")
        for r in rows:
            lines.append(f"    {r['init']:<16} seed {r['seed']}: {r['answers'][i]['answer']!r}")
    return "\n".join(lines)


def summarize(rows: list[dict]) -> list[dict]:
    """Per task and start, in the rows' order: runs, mean test and dev score (%) and their standard errors (0 for
    one run), mean wall time."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["task"], r["init"]), []).append(r)

    summary = []
    for (task, init), runs in groups.items():
        test, test_se = _mean_se([r["percent"] for r in runs])
        dev, dev_se = _mean_se([r["dev"] for r in runs if r.get("dev") is not None] or [math.nan])
        summary.append({"task": task, "init": init, "metric": runs[0]["metric"], "runs": len(runs), "test": test,
                        "test_se": test_se, "dev": dev, "dev_se": dev_se,
                        "seconds": statistics.mean(r["seconds"] for r in runs)})
    return summary


def comparison_table(rows: list[dict]) -> str:
    """The comparison as a text table: every run (test and dev score, wall time), then mean ± standard error."""
    w = max([8, *(len(r["init"]) for r in rows)])  # the start's column, as wide as its longest name
    lines = [f"{'task':<10} {'start':<{w}} {'seed':>4} {'test metric':<12} {'test':>6} {'dev':>6} {'wall':>8}"]
    for r in rows:
        lines.append(f"{r['task']:<10} {r['init']:<{w}} {r.get('seed', 0):>4} {r['metric']:<12} {r['percent']:6.1f} "
                     f"{r.get('dev', math.nan):6.1f} {r['seconds'] / 60:6.1f} m")
    lines += ["", f"{'task':<10} {'start':<{w}} {'runs':>4} {'test, mean ± s.e.':>18} {'dev, mean ± s.e.':>18}"]
    for s in summarize(rows):
        lines.append(f"{s['task']:<10} {s['init']:<{w}} {s['runs']:>4} {s['test']:11.1f} ± {s['test_se']:4.1f} "
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


def breakdowns(rows: list[dict]) -> dict:
    """Where the test errors are, per task and start, over the seeds of rows that carry an "analysis" (`compare`):
    sentiment's confusion matrix summed over the seeds; NER's F1 per entity type and QA's F1 per question type, each
    as (mean, s.e.) over the seeds with the type's size; and the first seed's wrong answers."""
    out: dict = {}
    for r in rows:
        if not r.get("analysis"):
            continue
        task, analysis = r["task"], r["analysis"]
        entry = out.setdefault(task, {}).setdefault(r["init"], {"runs": 0, "errors": analysis["errors"]})
        entry["runs"] += 1
        if "confusion" in analysis:
            entry["classes"] = analysis["classes"]
            old = entry.get("confusion")
            entry["confusion"] = analysis["confusion"] if old is None else [
                [a + b for a, b in zip(x, y, strict=True)] for x, y in zip(old, analysis["confusion"], strict=True)]
        for kind, score in analysis.get("per_type", {}).items():
            size = score.get("support", score.get("n"))
            entry.setdefault("per_type", {}).setdefault(kind, {"size": size, "f1": []})["f1"].append(
                _percent(task, score["f1"]))
    for starts in out.values():
        for entry in starts.values():
            for score in entry.get("per_type", {}).values():
                score["f1"], score["f1_se"] = _mean_se(score["f1"])
    return out


def _wrong_shares(confusion: list[list[int]]) -> list[float]:
    """Per true class (a row of the confusion matrix), the share of its examples predicted as another class."""
    return [(sum(row) - row[i]) / max(sum(row), 1) for i, row in enumerate(confusion)]


def _types_by_size(starts: dict) -> list[tuple[str, int]]:
    """(type, size) of every type with gold examples in any start's breakdown, largest first."""
    sizes = {k: s["size"] for e in starts.values() for k, s in e.get("per_type", {}).items() if s["size"]}
    return sorted(sizes.items(), key=lambda item: (-item[1], item[0]))


def breakdown_tables(rows: list[dict], errors: int = 3) -> str:
    """`breakdowns` as text: the confusion matrices, F1 per entity type and per question type (mean ± s.e. over the
    seeds, largest types first; a type with no gold entity in the test split scores 0 and is left out), and `errors`
    wrong answers per task and start."""
    parts, found = [], breakdowns(rows)
    for task, starts in found.items():
        if task == "sentiment":
            parts.append("sentiment: test confusion matrix, summed over the seeds (rows: the true class)")
            for init, e in starts.items():
                (a, b), (c, d) = e["confusion"]
                names, wrong = e["classes"], _wrong_shares(e["confusion"])
                parts.append(f"  {init} ({e['runs']} seeds): true {names[0]}: {a:5} {names[0]}, {b:5} {names[1]} "
                             f"({wrong[0]:.0%} wrong) | true {names[1]}: {c:5} {names[0]}, {d:5} {names[1]} "
                             f"({wrong[1]:.0%} wrong)")
        else:
            label = "entity type (gold entities)" if task == "ner" else "question type (questions)"
            inits = list(starts)
            parts.append(f"{task}: test F1 (%) per {label.split(' (')[0]}, mean ± s.e. over the seeds")
            parts.append(f"  {label:<30}" + "".join(f"{i:>16}" for i in inits))
            for kind, size in _types_by_size(starts):
                cells = []
                for init in inits:
                    s = starts[init].get("per_type", {}).get(kind)
                    cells.append(f"{s['f1']:9.1f} ± {s['f1_se']:4.1f}" if s else f"{'-':>16}")
                parts.append(f"  {kind + f' ({size})':<30}" + "".join(cells))
        for init, e in starts.items():
            for error in e["errors"][:errors]:
                text = error.get("text") or error.get("question")
                parts.append(f"  {init} wrong: {text[:90]!r}: gold {error['gold']}, predicted {error['predicted']}")
        parts.append("")
    return "\n".join(parts)


def plot_breakdowns(rows: list[dict]):
    """One panel per task of `breakdowns` (matplotlib figure): the share of each sentiment class called the other
    one, and F1 per entity type and per question type (mean ± s.e. over the seeds), one bar per start."""
    import matplotlib.pyplot as plt

    found = breakdowns(rows)
    fig, axes = plt.subplots(1, len(found), figsize=(5 * len(found), 3.5), squeeze=False)
    for ax, (task, starts) in zip(axes[0], found.items(), strict=True):
        inits = list(starts)
        width = 0.8 / len(inits)
        if task == "sentiment":
            names = next(iter(starts.values()))["classes"]
            labels = [f"true {names[0]}\ncalled {names[1]}", f"true {names[1]}\ncalled {names[0]}"]
            for k, init in enumerate(inits):
                ax.bar([x + k * width for x in range(2)], [100 * s for s in _wrong_shares(starts[init]["confusion"])],
                       width, label=init)
            ax.set(ylabel="share of the class (%)", title="sentiment: which way the errors go")
        else:
            types = _types_by_size(starts)
            kinds, labels = [kind for kind, _ in types], [f"{kind}\n({size})" for kind, size in types]
            for k, init in enumerate(inits):
                scores = [starts[init].get("per_type", {}).get(kind, {"f1": 0.0, "f1_se": 0.0}) for kind in kinds]
                ax.bar([x + k * width for x in range(len(kinds))], [s["f1"] for s in scores], width,
                       yerr=[s["f1_se"] for s in scores], capsize=2, label=init)
            ax.set(ylabel="test F1 (%), mean ± s.e.",
                   title=f"{task}: F1 per {'entity type' if task == 'ner' else 'question type'} (size)")
        ax.set_xticks([x + width * (len(inits) - 1) / 2 for x in range(len(labels))], labels, fontsize=7,
                      rotation=0 if task == "sentiment" else 45)
        ax.set_ylim(0, max(10.0, ax.get_ylim()[1]))
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _mean_pieces(model, ids: list[list[int]], layer: str, batch_size: int = 256) -> torch.Tensor:
    """(N, H): each row's mean vector over its pieces (`[CLS]` and `[SEP]` included, padding not), of the word
    embeddings alone or of the last layer."""
    means = []
    with torch.no_grad():
        for i in range(0, len(ids), batch_size):
            batch = finetune.collate([{"input_ids": r} for r in ids[i:i + batch_size]])
            input_ids, mask = batch["input_ids"], batch["attention_mask"]  # (B, T) each
            if layer == "word embeddings":
                hidden = model.embeddings.word_embeddings(input_ids)  # (B, T, H)
            else:
                hidden = model(input_ids, mask).last_hidden_state  # (B, T, H)
            weights = mask.unsqueeze(-1).to(hidden.dtype)  # (B, T, 1)
            means.append((hidden * weights).sum(1) / weights.sum(1))  # (B, H)
    return torch.cat(means)


def _logistic_regression(x: torch.Tensor, y: torch.Tensor, steps: int = 200):
    """A logistic regression on standardized features with scikit-learn's default L2 penalty (C = 1), fitted by
    L-BFGS: returns the function that predicts 0/1 for new rows."""
    mean, std = x.mean(0), x.std(0) + 1e-6
    x = (x - mean) / std
    w = torch.zeros(x.shape[1], dtype=x.dtype, requires_grad=True)
    b = torch.zeros((), dtype=x.dtype, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=steps, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = F.binary_cross_entropy_with_logits(x @ w + b, y.to(x.dtype)) + w.square().sum() / (2 * len(x))
        loss.backward()
        return loss

    opt.step(closure)
    return lambda z: (((z - mean) / std) @ w.detach() + b.detach() > 0).long()


def linear_probe(init: str, train_sizes: tuple[int | None, ...] = (1000, None), seeds: tuple[int, ...] = (0, 1, 2),
                 limit_eval: int | None = None) -> list[dict]:
    """What a start's frozen features know about sentiment before any fine-tuning. A logistic regression, the only
    thing trained, reads each snippet's mean piece vector (of the word embeddings, and of the last layer) and is
    scored on the dev split; the same for random weights of the same size and vocabulary, one model per seed (random
    features differ from draw to draw by a few points). One row per weights (and seed), features and number of
    training snippets (None: all): dev accuracy in %.

    Why: the comparison shows that fine-tuning from our checkpoint ends about where a random start ends. Two
    explanations predict different probes: if the checkpoint's frozen features beat random ones, pretraining learned
    something that the labels then taught the random start too; if they do not, pretraining left nothing this task
    could use. (Linear probes: Alain & Bengio 2016, "Understanding intermediate layers using linear classifier
    probes".) Snippets are cut to the model's learned positions (32 for `make pretrain`'s checkpoint)."""
    from minibert import BertModel
    from minibert.task_data import load_rotten_tomatoes
    from minibert.tokenization import BertTokenizer, pretrained_dir

    folder = pretrained_dir() if init == "minilm" else Path(init)
    if not (folder / "config.json").exists():
        raise FileNotFoundError(f"{folder} holds no config.json: give a checkpoint folder (make pretrain writes "
                                "runs/tiny/checkpoint) or 'minilm'")
    tokenizer = BertTokenizer.from_pretrained(folder)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a pretraining checkpoint's heads are not needed here
        pretrained = BertModel.from_pretrained(folder).eval()
    models = [("pretrained", None, pretrained)]
    for seed in seeds:
        torch.manual_seed(seed)
        models.append(("random", seed, BertModel(pretrained.config).eval()))
    cut = finetune.FinetuneConfig(max_seq_length=pretrained.config.max_position_embeddings)
    most = None if None in train_sizes else max(train_sizes)
    train, dev = load_rotten_tomatoes("train")[:most], load_rotten_tomatoes("dev")[:limit_eval]
    ids_train = [f["input_ids"] for f in finetune.sentiment_features(tokenizer, train, cut)]
    ids_dev = [f["input_ids"] for f in finetune.sentiment_features(tokenizer, dev, cut)]
    y_train, y_dev = torch.tensor([label for _, label in train]), torch.tensor([label for _, label in dev])
    rows = []
    for weights, seed, model in models:
        for layer in ("word embeddings", "last layer"):
            x_train, x_dev = _mean_pieces(model, ids_train, layer), _mean_pieces(model, ids_dev, layer)  # (N, H)
            for n in train_sizes:
                predict = _logistic_regression(x_train[:n], y_train[:n])
                rows.append({"weights": weights, "seed": seed, "features": layer, "train": len(x_train[:n]),
                             "dev": 100 * (predict(x_dev) == y_dev).float().mean().item()})
    return rows


def probe_table(rows: list[dict]) -> str:
    """`linear_probe`'s rows as a text table: per features and training snippets, the pretrained weights' dev
    accuracy, the random weights' mean ± standard error over their seeds, and the difference."""
    lines = [f"{'features':<16} {'train':>6} {'pretrained':>10} {'random':>13} {'difference':>10}"]
    for layer in dict.fromkeys(r["features"] for r in rows):
        for n in dict.fromkeys(r["train"] for r in rows):
            cell = [r for r in rows if (r["features"], r["train"]) == (layer, n)]
            ours = [r["dev"] for r in cell if r["weights"] == "pretrained"]
            random, se = _mean_se([r["dev"] for r in cell if r["weights"] == "random"])
            lines.append(f"{layer:<16} {n:>6,} {ours[0]:>10.1f} {random:>6.1f} ± {se:>4.1f} {ours[0] - random:>+10.1f}")
    return "\n".join(lines)


def write_comparison(rows: list[dict], root: Path = Path("runs/finetune")) -> list[Path]:
    """comparison.json (the rows) and comparison.png (the bars) into `root`; returns their paths.

    Rows already in comparison.json are kept unless `rows` has a run of the same task, start and seed, which replaces
    them: `make finetune-compare` (the tiny starts) and `make finetune-compare-minilm` build one comparison. The rows
    are ordered by task, then as they came."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / "comparison.json"
    ran = {(r["task"], r["init"], r["seed"]) for r in rows}
    kept = [r for r in (json.loads(path.read_text(encoding="utf-8")) if path.exists() else [])
            if (r["task"], r["init"], r["seed"]) not in ran]
    order = list(finetune.TASKS)
    rows = sorted(kept + rows, key=lambda r: order.index(r["task"]) if r["task"] in order else len(order))
    path.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    plot_comparison(rows).savefig(root / "comparison.png", dpi=120)
    return [root / "comparison.json", root / "comparison.png"]


def shipped_comparison() -> dict:
    """The comparison measured for the course and shipped with the package (minibert/resources/
    finetune_comparison.json): how it was run ("provenance") and its rows, so chapter 08 shows figures without the
    long run."""
    with resources.files("minibert").joinpath("resources/finetune_comparison.json").open(encoding="utf-8") as f:
        return json.load(f)
