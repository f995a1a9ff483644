"""The course's GPU check (`make gpu-check`, chapter 09 section 6): course machinery, not part of the library.

    python -m minibert_course.gpu_check [--out runs/gpu-check] [--corpus wikipedia|FOLDER]
    python -m minibert_course.gpu_check --export-corpus FOLDER     # where gensim is installed, for a GPU machine
    python -m minibert_course.gpu_check --cpu-twin --corpus FOLDER  # the same steps at tiny size on a CPU

It runs `minibert.bench` at Base size (128 and 512 positions), then Base-size pretraining (`python -m
minibert.train`) three times: stopped by `--stop-after-step` after a given step, resumed to the end, and once
without a stop; the resumed curve must be the uninterrupted one. It needs torch and transformers, nothing else of
the course's environment, so a GPU machine with its own Python runs it as `PYTHONPATH=src python3 -m
minibert_course.gpu_check --corpus FOLDER`. Its CPU twin (`--cpu-twin`: the same benchmark and the same stopped,
resumed and uninterrupted runs, at tiny size) runs in tests/test_train.py and, in the GPU machine's versions of Python,
torch and transformers, in `make gpu-rehearsal`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import torch
import transformers

import minibert
from minibert.bench import report, run
from minibert.training import load_trainer_state

GPU_CHECK_PRETRAIN = ["--device", "cuda", "--precision", "bf16", "--seq-len", "128", "--batch-size", "64",
                      "--vocab-size", "8000", "--lr", "2e-4", "--warmup", "30", "--eval-every", "50",
                      "--eval-batches", "4", "--checkpoint-every", "100", "--no-progress"]
CPU_TWIN_PRETRAIN = ["--device", "cpu", "--precision", "fp32", "--seq-len", "32", "--batch-size", "8", "--vocab-size",
                     "800", "--hidden-size", "32", "--num-hidden-layers", "2", "--num-attention-heads", "2",
                     "--intermediate-size", "64", "--lr", "2e-4", "--warmup", "5", "--eval-every", "20",
                     "--eval-batches", "4", "--checkpoint-every", "20", "--limit-documents", "20", "--no-progress"]
CPU_TWIN = dict(steps=120, device="cpu", config="tiny", shapes=((32, 8),), pretrain_flags=CPU_TWIN_PRETRAIN,
                stop_after=50)  # the same steps at tiny size, on a CPU, in a minute: --cpu-twin, make gpu-rehearsal


def export_corpus(folder: Path) -> Path:
    """The Wikipedia sample as one .txt per article, paragraphs separated by blank lines: the corpus of the GPU check
    on a machine without gensim and mwparserfromhell (give the folder to --corpus there)."""
    from minibert.corpus import load_wikipedia_sample

    folder.mkdir(parents=True, exist_ok=True)
    for i, article in enumerate(load_wikipedia_sample()):
        (folder / f"{i:03d}.txt").write_text("\n\n".join(article.paragraphs) + "\n", encoding="utf-8")
    return folder


CURVE_KEYS = ("train_loss", "loss", "mlm_loss", "nsp_loss")  # what the GPU check compares, at every evaluation


def _curve_difference(a: list[dict], b: list[dict], up_to: int | None = None) -> float:
    """The largest |difference| of the losses (CURVE_KEYS) of two pretraining histories, evaluation by evaluation
    (those up to step `up_to`); inf when they were not evaluated at the same steps and token counts."""
    a, b = ([h for h in x if up_to is None or h["step"] <= up_to] for x in (a, b))
    if [(h["step"], h["tokens"]) for h in a] != [(h["step"], h["tokens"]) for h in b]:
        return math.inf

    def gap(x: float, y: float) -> float:
        if math.isnan(x) or math.isnan(y):  # the training loss of step 0 (eval_at_start) is nan
            return 0.0 if math.isnan(x) and math.isnan(y) else math.inf
        return abs(x - y)

    return max((gap(x[k], y[k]) for x, y in zip(a, b, strict=True) for k in CURVE_KEYS), default=0.0)


def gpu_check(out: Path = Path("runs/gpu-check"), corpus: str = "wikipedia", steps: int = 300, device: str = "cuda",
              config: str = "base", shapes: tuple = ((128, 128), (512, 32)),
              pretrain_flags: Sequence[str] | None = None, stop_after: int | None = None,
              tolerance: float | None = None) -> dict:
    """The course's GPU check, on whatever Python runs it (torch and transformers installed, nothing downloaded):
    the benchmark at Base size, 128 and 512 positions; then Base-size pretraining on the Wikipedia sample, stopped by
    `--stop-after-step` after step `stop_after` (default: half the steps; the run stops exactly as a SIGTERM during
    that step would stop it, with no timer to race), resumed to the end, and run once more without a stop. The resumed
    run's losses must be the uninterrupted run's at every evaluation: exactly on a CPU, within `tolerance` on a GPU
    (default 0.05: CUDA kernels that add with atomics, such as the embedding gradient's, round differently from run to
    run; the difference before the stop, where both runs computed the same steps, shows that noise).

    Every figure goes to gpu_check.json (after each part), the output to gpu_check.log; a run that fails ends the
    check early with the command to run next. `figures["passed"]`: every run ended as expected and the curves match.
    (`device`, `config`, `shapes` as (positions, rows) and `pretrain_flags`, which replace GPU_CHECK_PRETRAIN, are
    there for its CPU twin, CPU_TWIN: the same steps at tiny size.)"""

    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("the GPU check: PyTorch sees no GPU here (torch.cuda.is_available() is False); its CPU twin "
                         "is tests/test_train.py::test_gpu_check_steps_on_cpu_at_tiny_size")
    stop_after = steps // 2 if stop_after is None else stop_after
    if not 0 < stop_after < steps:
        raise ValueError(f"stop_after={stop_after}: give a step between 1 and {steps - 1}")
    tolerance = (0.0 if device == "cpu" else 0.05) if tolerance is None else tolerance
    out.mkdir(parents=True, exist_ok=True)
    log = (out / "gpu_check.log").open("a", encoding="utf-8")

    def say(text: str) -> None:
        print(text, flush=True)
        log.write(text + "\n")
        log.flush()

    began = time.perf_counter()
    figures = {"python": sys.version.split()[0], "torch": torch.__version__, "transformers": transformers.__version__,
               "device": torch.cuda.get_device_name(0) if device == "cuda" else device,
               "started": time.strftime("%Y-%m-%d %H:%M:%S"), "passed": False}

    def save() -> None:
        (out / "gpu_check.json").write_text(json.dumps(figures, indent=2), encoding="utf-8")

    try:
        for seq, rows in shapes:
            start = time.perf_counter()
            result = run(device=device, config=config, seq=seq, batch_size=rows, rounds=5, steps_per_round=5)
            figures[f"bench_{config}_{seq}"] = {**result, "wall_seconds": time.perf_counter() - start}
            say(report(result))
            save()
        run_dir, straight_dir = out / config, out / f"{config}-uninterrupted"
        for folder in (run_dir, straight_dir):  # a new check, new runs: a finished run would not stop again
            shutil.rmtree(folder, ignore_errors=True)

        def command(folder: Path, *extra: str) -> list[str]:
            return [sys.executable, "-m", "minibert.train", "--out", str(folder), "--corpus", corpus, "--steps",
                    str(steps), *(GPU_CHECK_PRETRAIN if pretrain_flags is None else pretrain_flags), *extra]

        package = str(Path(minibert.__file__).resolve().parents[1])  # the runs import the minibert this one does
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package, os.environ.get("PYTHONPATH")]))}
        state = run_dir / "checkpoint" / "trainer_state.pt"
        start = time.perf_counter()
        pretrain = figures[f"pretrain_{config}"] = {"command": shlex.join(command(run_dir)),
                                                     "stop_after_step": stop_after, "tolerance": tolerance}
        parts = (("first", "stopped", command(run_dir, "--stop-after-step", str(stop_after)), 128 + signal.SIGTERM),
                 ("resumed", "resumed", command(run_dir), 0),
                 ("uninterrupted", "uninterrupted", command(straight_dir), 0))
        for key, name, cmd, expected in parts:
            if key == "uninterrupted":  # the stopped run's vocabulary: the runs differ only by the stop
                straight_dir.mkdir(parents=True, exist_ok=True)
                shutil.copy(run_dir / "vocab.txt", straight_dir / "vocab.txt")
            say(f"pretraining, {name} run: {shlex.join(cmd)}")
            try:
                proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
            except KeyboardInterrupt:  # the run saved its last whole step, or the one before: the command resumes it
                say(f"GPU check stopped early: Ctrl+C during the {name} run. Next: {shlex.join(cmd)}")
                raise
            say(proc.stdout[-3000:])
            pretrain[f"{key}_exit"] = proc.returncode
            pretrain["wall_seconds"] = time.perf_counter() - start
            problem = f"exited with status {proc.returncode}, not {expected}" if proc.returncode != expected else None
            if key == "first":
                pretrain["stopped_at_step"] = load_trainer_state(state.parent)["step"] if state.exists() else None
                if problem is None and pretrain["stopped_at_step"] != stop_after:
                    problem = f"stopped at step {pretrain['stopped_at_step']}, not {stop_after}"
            if problem is not None:
                pretrain["problem"] = f"{name} run: {problem}"
                save()
                say(f"GPU check stopped early: the {name} run {problem} (its output is above and in "
                    f"{out / 'gpu_check.log'}). Next, once the cause is fixed: {shlex.join(cmd)}")
                return figures
            if key == "first":
                say(f"stopped after step {stop_after} as asked; next, resuming: {shlex.join(command(run_dir))}")
            save()
        history = load_trainer_state(state.parent)["history"]
        straight = load_trainer_state(straight_dir / "checkpoint")["history"]
        difference = _curve_difference(history, straight)
        before = _curve_difference(history, straight, up_to=stop_after)
        pretrain.update(final_step=history[-1]["step"] if history else None, history=history,
                        uninterrupted_history=straight, loss_difference=difference,
                        loss_difference_before_stop=before, curves_match=difference <= tolerance,
                        wall_seconds=time.perf_counter() - start)
        figures["passed"] = pretrain["curves_match"]
        figures["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
        figures["wall_seconds"] = time.perf_counter() - began
        save()
        say(f"stopped at step {stop_after} and resumed vs uninterrupted: losses differ by at most {difference:.3g} "
            f"over {len(history)} evaluations ({before:.3g} before the stop; tolerance {tolerance:g}): "
            + ("the same curve" if pretrain["curves_match"] else "DIFFERENT curves: the resume is broken"))
        say(f"GPU check: {figures['wall_seconds'] / 60:.1f} min in all (Python {figures['python']}, torch "
            f"{figures['torch']}, transformers {figures['transformers']}); figures in {out / 'gpu_check.json'}")
        return figures
    finally:
        log.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minibert_course.gpu_check", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("runs/gpu-check"), help="figures, log and runs (default: "
                        "%(default)s)")
    parser.add_argument("--corpus", default="wikipedia", help="the pretraining corpus: 'wikipedia' (needs gensim) or "
                        "a folder of .txt made by --export-corpus")
    parser.add_argument("--export-corpus", type=Path, default=None, metavar="FOLDER",
                        help="write the Wikipedia sample to FOLDER as .txt files, then exit")
    parser.add_argument("--cpu-twin", action="store_true", help="the same steps at tiny size on the CPU (a few "
                        "minutes): rehearses the check where there is no GPU")
    args = parser.parse_args(argv)
    if args.export_corpus:
        print(f"wrote {len(list(export_corpus(args.export_corpus).glob('*.txt')))} articles to {args.export_corpus}")
        return 0
    return 0 if gpu_check(args.out, corpus=args.corpus, **(CPU_TWIN if args.cpu_twin else {}))["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
