# Generated from notebook 09_base_pretraining.ipynb by minibert_course.export: edit the notebook, not this file.
"""A training-speed benchmark: minibert, padded and unpadded, vs `transformers.BertForPreTraining`, the same model in
one process (chapter 09).

Why in one process, alternating: two runs in two processes meet different machine states (other jobs, clocks,
caches); rounds of minibert and transformers taken in turn, after a warm-up of both, see the same ones.
Why the same weights and a loss check first: the comparison is only fair if both compute the same function: the
transformers model is loaded from minibert's state dict and, without dropout, must give the same loss on the same
batch before anything is timed (and so must the unpadded path: `minibert.unpadded`).
Why padded batches with 15% targets: that is what pretraining feeds the models (chapter 05 pads pairs to the longest
in the batch; chapter 04 picks the targets); a benchmark on full rows of random ids would measure another workload.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import torch

from minibert.cli import add_fields, arg, config_from_args
from minibert.config import BertConfig
from minibert.data import NSPInstance, PretrainingCollator
from minibert.heads import BertForPreTraining
from minibert.masking import IGNORE_INDEX
from minibert.tokenization import SPECIAL_TOKENS
from minibert.train import flops_per_token, mfu, peak_flops
from minibert.training import autocast
from minibert.unpadded import UnpaddedBertForPreTraining

__all__ = ["run", "BenchConfig", "report", "models", "pretraining_batch", "executed_flops", "main"]


@dataclass
class BenchConfig:
    """One benchmark; every field is also a flag of `python -m minibert.bench`."""

    device: str = field(default="cpu", metadata=arg("cpu or cuda"))
    config: Literal["tiny", "small", "base"] = field(default="tiny", metadata=arg(
        "the model: BertConfig.tiny(), .small() or .base()"))
    seq: int = field(default=128, metadata=arg("positions per row"))
    batch_size: int = field(default=32, metadata=arg("rows per step"))
    vocab_size: int = field(default=30522, metadata=arg("pieces (30,522: bert-base-uncased)"))
    precision: Literal["fp32", "bf16"] | None = field(default=None, metadata=arg(
        "fp32 or bf16; None: bf16 on cuda, fp32 on cpu"))
    rounds: int = field(default=5, metadata=arg("timed rounds per model"))
    steps_per_round: int = field(default=3, metadata=arg("optimizer steps per round"))
    warmup: int = field(default=2, metadata=arg("untimed rounds first"))
    compile: bool = field(default=False, metadata=arg("torch.compile both models"))
    peak_tflops: float | None = field(default=None, metadata=arg("the device's peak, for MFU; None: from the GPU's "
                                                                  "name (none for a CPU)"))
    seed: int = field(default=0, metadata=arg("seed of the weights and the batches"))


class _Vocabulary:
    """What PretrainingCollator reads of a tokenizer, for a vocabulary of `size` pieces: the special tokens at the
    ids a minibert vocabulary gives them (SPECIAL_TOKENS first), and the size."""

    def __init__(self, size: int):
        self.vocab, self.size = {token: i for i, token in enumerate(SPECIAL_TOKENS)}, size

    def __len__(self) -> int:
        return self.size


def pretraining_batch(batch_size: int, seq_len: int, vocab_size: int, generator: torch.Generator,
                      full_share: float = 0.6) -> dict[str, torch.Tensor]:
    """A batch as pretraining feeds it, built by chapter 05's PretrainingCollator (padding, segments, the special
    tokens, chapter 04's masks: 15% of the real pieces as targets, 80/10/10, a fixed count per row) from NSP pairs
    of random pieces: `full_share` of the pairs fill all seq_len positions, the others are shorter (padding is then
    ~20% of the positions), NSP labels half and half."""
    full = torch.rand(batch_size, generator=generator) < full_share
    lengths = torch.where(full, seq_len, torch.randint(8, seq_len + 1, (batch_size,), generator=generator)).tolist()
    labels = torch.randint(0, 2, (batch_size,), generator=generator).tolist()
    pairs = []
    for length, label in zip(lengths, labels, strict=True):
        pieces = torch.randint(len(SPECIAL_TOKENS), vocab_size, (length - 3,), generator=generator).tolist()
        half = (length - 3) // 2  # [CLS] A [SEP] B [SEP]: A and B about as long
        pairs.append(NSPInstance(pieces[:half], pieces[half:], label))
    collate = PretrainingCollator(_Vocabulary(vocab_size), max_length=seq_len, generator=generator, mode="fixed")
    return collate(pairs)


def models(config: BertConfig, device: torch.device, seed: int = 0):
    """(minibert, transformers) BertForPreTraining with the same weights, on `device`, in training mode."""
    import transformers

    torch.manual_seed(seed)
    ours = BertForPreTraining(config)
    hf_config = transformers.BertConfig(**config.to_dict(), attn_implementation="sdpa")
    theirs = transformers.BertForPreTraining(hf_config)
    missing, unexpected = theirs.load_state_dict(ours.state_dict(), strict=False)
    if unexpected or [k for k in missing if not k.endswith("position_ids")]:
        raise RuntimeError(f"state dicts do not match: missing {missing}, unexpected {unexpected}")
    theirs.tie_weights()
    return ours.to(device).train(), theirs.to(device).train()


def executed_flops(config: BertConfig, batch: dict[str, torch.Tensor], path: str) -> int:
    """The FLOPs of the matrix products one training step (forward and backward) on `batch` runs on `path`, counted
    as `flops_per_token` counts them (6 per weight and row, 12·L·H·T per position for attention).

    Why: a rate ratio cannot beat the ratio of work done at equal efficiency, so transformers' count over a path's is
    the speed-up that path gets from skipping work alone. transformers runs every layer and the MLM head at all B·T
    positions; minibert padded runs the head at the targets only; unpadded runs the layers at the N real pieces, and
    the last layer past attention at the M = targets + B rows the heads read. All three run attention in the (B, T)
    layout and the pooler and NSP classifier once per row."""
    paths = ("transformers", "minibert", "minibert_unpadded")
    if path not in paths:
        raise ValueError(f"unknown path {path!r}: one of {', '.join(paths)}")
    B, T = batch["input_ids"].shape
    real, targets = int(batch["attention_mask"].sum()), int((batch["labels"] != IGNORE_INDEX).sum())
    head_rows = B * T if path == "transformers" else targets
    step = flops_per_token(config, T, target_fraction=head_rows / (B * T)) * B * T  # every layer at all B·T positions
    if path == "minibert_unpadded":  # less the layers at the padding, and the last one past attention at rows not kept
        H, L, F = config.hidden_size, config.num_hidden_layers, config.intermediate_size
        step -= 6 * ((B * T - real) * L * (4 * H * H + 2 * H * F) + (real - targets - B) * (H * H + 2 * H * F))
    return round(step)  # an integer count; the float products above are exact to far below 0.5


def _train_step_fn(model, optimizer, precision: str, ours: bool):
    """One optimizer step of `model` on a batch: minibert's as chapter 06 runs it (vocabulary logits at the targets
    only), transformers' as its Trainer would (logits at every position)."""

    def step(batch: dict[str, torch.Tensor]) -> float:
        with autocast(batch["input_ids"].device, precision):
            out = model(**batch, targets_only=True) if ours else model(**batch)
        out.loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return out.loss.item()  # waits for the device: the step is done

    return step


def _loss(model, batch: dict[str, torch.Tensor], ours: bool) -> float:
    """The model's loss on `batch`, without dropout, in fp32: minibert's as it trains (targets_only=True)."""
    with torch.no_grad():
        model.eval()
        loss = (model(**batch, targets_only=True) if ours else model(**batch)).loss.item()
        model.train()
    return loss


def run(bench: BenchConfig | None = None, **fields) -> dict:
    """Measure the three; the figures as a dict (also what --json writes). `fields` replace those of `bench`:
    `run(config="base", seq=512)`."""
    bench = dataclasses.replace(bench or BenchConfig(), **fields)
    device, seq, batch_size, vocab_size = torch.device(bench.device), bench.seq, bench.batch_size, bench.vocab_size
    rounds, steps_per_round, warmup, compile = bench.rounds, bench.steps_per_round, bench.warmup, bench.compile
    precision, seed = bench.precision or ("bf16" if device.type == "cuda" else "fp32"), bench.seed
    cfg = getattr(BertConfig, bench.config)(vocab_size=vocab_size, max_position_embeddings=max(512, seq))
    ours, theirs = models(cfg, device, seed)
    unpadded = UnpaddedBertForPreTraining(cfg).to(device).train()
    unpadded.load_state_dict(ours.state_dict())  # the same weights again: each model trains its own copy
    generator = torch.Generator().manual_seed(seed)
    batches = [{k: v.to(device) for k, v in pretraining_batch(batch_size, seq, vocab_size, generator).items()}
               for _ in range(4)]
    loss = _loss(ours, batches[0], ours=True)
    difference = abs(loss - _loss(theirs, batches[0], ours=False))
    unpadded_difference = abs(loss - _loss(unpadded, batches[0], ours=True))
    if max(difference, unpadded_difference) > 1e-3:
        raise RuntimeError(f"losses {difference:.3g} (transformers) and {unpadded_difference:.3g} (unpadded) away "
                           "from minibert's on the same batch: the benchmark would compare different models")
    steps = {}
    for name, model in (("minibert", ours), ("minibert_unpadded", unpadded), ("transformers", theirs)):
        # AdamW's fused kernel on either device: one update for all tensors, the same for the three models
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        trained = torch.compile(model) if compile else model
        steps[name] = _train_step_fn(trained, optimizer, precision, ours=name != "transformers")
    times = {name: [] for name in steps}
    memory = dict.fromkeys(steps, None)
    for round_ in range(warmup + rounds):
        for name, step in steps.items():  # in turn: all meet the same machine state
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
            start = time.perf_counter()
            for i in range(steps_per_round):
                step(batches[(round_ * steps_per_round + i) % len(batches)])
            if round_ >= warmup:
                times[name].append((time.perf_counter() - start) / steps_per_round)
            if device.type == "cuda":
                memory[name] = max(memory[name] or 0, torch.cuda.max_memory_allocated(device) / 2**30)
    tokens = batch_size * seq  # positions per step, padding included: the padded models compute them all
    padding = 1 - sum(b["attention_mask"].sum().item() for b in batches) / (len(batches) * tokens)
    per_token = flops_per_token(cfg, seq)
    peak = peak_flops(device, bench.peak_tflops)
    work = {name: sum(executed_flops(cfg, b, name) for b in batches) for name in times}
    figures = {}
    for name, seconds in times.items():
        rate = tokens / statistics.median(seconds)
        useful = rate * (1 - padding)  # MFU counts the model FLOPs of the real pieces, for all three alike
        figures[name] = {"tokens_per_second": rate, "seconds_per_step": statistics.median(seconds),
                         "mfu": mfu(useful, per_token, peak), "peak_memory_gib": memory[name],
                         "flop_ratio": work["transformers"] / work[name]}  # transformers' work over this path's
    speed = {name: figures[name]["tokens_per_second"] for name in figures}
    return {"device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
            "torch_threads": torch.get_num_threads(), "config": bench.config, "layers": cfg.num_hidden_layers,
            "hidden": cfg.hidden_size, "vocab_size": vocab_size, "seq": seq, "batch_size": batch_size,
            "precision": precision, "compile": compile, "padding_share": padding,
            "gflops_per_token": per_token / 1e9, "peak_tflops": peak / 1e12 if peak else None,
            "loss_difference": difference, "unpadded_loss_difference": unpadded_difference, "rounds": rounds,
            "steps_per_round": steps_per_round, **figures,
            "speedup": speed["minibert"] / speed["transformers"],
            "speedup_unpadded": speed["minibert_unpadded"] / speed["transformers"],
            "unpadded_gain": speed["minibert_unpadded"] / speed["minibert"]}


def report(r: dict) -> str:
    lines = [f"{r['config']} ({r['layers']} layers x {r['hidden']}, {r['vocab_size']:,} pieces) on {r['device']}, "
             f"batch {r['batch_size']} x {r['seq']} positions ({r['padding_share']:.0%} padding), {r['precision']}"
             f"{', compiled' if r['compile'] else ''}; same loss to "
             f"{max(r['loss_difference'], r['unpadded_loss_difference']):.1e}",
             f"{'':<19}{'tokens/s':>12}{'s/step':>10}{'MFU':>8}{'peak mem':>10}"]
    for name in ("minibert", "minibert_unpadded", "transformers"):
        f = r[name]
        used = f"{f['mfu']:.1%}" if f["mfu"] is not None else "n/a"
        mem = f"{f['peak_memory_gib']:.1f} GiB" if f["peak_memory_gib"] is not None else "n/a"
        lines.append(f"{name.replace('_', ' '):<19}{f['tokens_per_second']:>12,.0f}{f['seconds_per_step']:>10.4f}"
                     f"{used:>8}{mem:>10}")
    lines.append(f"transformers runs {r['minibert']['flop_ratio']:.2f}x the matrix-product FLOPs of minibert and "
                 f"{r['minibert_unpadded']['flop_ratio']:.2f}x those of unpadded (the speed-ups from less work alone)")
    lines.append(f"minibert / transformers: {r['speedup']:.2f}x; unpadded / transformers: {r['speedup_unpadded']:.2f}x"
                 f" (unpadded / padded: {r['unpadded_gain']:.2f}x; {r['gflops_per_token']:.3f} GFLOP per position; "
                 "tokens/s count every position, padding included; MFU the real pieces' FLOPs)")
    return "\n".join(lines)


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m minibert.bench", description="Training speed of minibert vs "
                                     "transformers.BertForPreTraining: same config, batch, length and precision.")
    add_fields(parser, BenchConfig)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = vars(_build_parser().parse_args(argv))
    out = args.pop("json")
    result = run(config_from_args(BenchConfig, args))
    print(report(result))
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__" and "__file__" in globals():
    sys.exit(main())
