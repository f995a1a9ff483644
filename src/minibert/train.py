# Generated from notebook 09_base_pretraining.ipynb by minibert_course.export: edit the notebook, not this file.
"""Pretraining at Base size: what a step costs in FLOPs, how much of the device a run uses (MFU), and the entry point
that runs chapter 06's loop on one GPU or several (chapter 09).

Why FLOPs and not seconds: a step's time depends on the device, its FLOPs do not. Dividing the FLOPs a run does per
second by the device's peak gives the model FLOPs utilization (MFU), which says how far a run is from what the
hardware allows, on any device, and tells a slow kernel from a small device.
Why the MLM head counts only at the targets: MFU counts the model's FLOPs, those the objective needs, and the MLM
loss needs the vocabulary logits at the ~15% target rows only (chapter 06 computes just those). One count for every
implementation: a library that computes the logits everywhere spends the extra time without extra credit.
Why the loop is not here: `python -m minibert.train` is `python -m minibert.pretrain` with the settings of a GPU run
and a report in FLOPs; the loop, its checkpoints and its DDP are chapter 06's `pretrain.train`.
"""

from __future__ import annotations

from pathlib import Path

import torch

from minibert.config import BertConfig
from minibert.training import exit_command

__all__ = ["flops_per_token", "mfu", "peak_flops", "speed_report", "main"]

# Dense bf16 tensor-core peaks in TFLOP/s (without 2:4 sparsity), from NVIDIA's data sheets, matched in this order
# against the GPU's name: the PCIe and NVL boards before the SXM ones that share their model number.
PEAK_TFLOPS = {"H100 PCIe": 756.0, "H100 NVL": 835.0, "H200 NVL": 835.0, "H100": 989.0, "H200": 989.0,
               "A100": 312.0}


def flops_per_token(config: BertConfig, seq_len: int, target_fraction: float = 0.15) -> float:
    """FLOPs of one training step (forward + backward), per input position: 6N + 12·L·H·T.

    N counts the weights of the matrix products each position goes through: every encoder layer (Q, K, V, the
    attention output, the two feed-forward matrices); the MLM head (transform H x H, decoder V x H) for the share
    `target_fraction` of positions whose logits the loss needs (the targets), however many an implementation
    computes; the pooler and the NSP classifier once per sequence, so 1/seq_len of them per position. A weight
    costs 2 FLOPs per position forward (a multiply and an add) and 4 backward (gradients of the input and of the
    weight): 6N. Attention adds what depends on T: the scores Q·K^T
    and the mix of values, 2·H·T FLOPs each per position and layer forward, x3 with backward: 12·L·H·T.
    Embedding lookups, biases, LayerNorm and softmax are not matrix products and are left out.
    """
    H, L, F, V = config.hidden_size, config.num_hidden_layers, config.intermediate_size, config.vocab_size
    encoder = L * (4 * H * H + 2 * H * F)
    mlm_head = target_fraction * (H * H + V * H)
    nsp_head = (H * H + 2 * H) / seq_len
    return 6 * (encoder + mlm_head + nsp_head) + 12 * L * H * seq_len


def mfu(tokens_per_second: float, flops_per_token: float, peak: float | None) -> float | None:
    """Model FLOPs utilization: the FLOPs the model's training needs per second, at the measured rate, as a share of
    the device's peak FLOP/s; None when the peak is not known."""
    return tokens_per_second * flops_per_token / peak if peak else None


def peak_flops(device: torch.device | str, tflops: float | None = None) -> float | None:
    """The device's peak in FLOP/s: `tflops` when given, else from PEAK_TFLOPS by the GPU's name; None for a CPU
    (no table can know it: give --peak-tflops)."""
    if tflops:
        return tflops * 1e12
    device = torch.device(device)
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((peak * 1e12 for key, peak in PEAK_TFLOPS.items() if key in name), None)


def speed_report(history: list[dict], config: BertConfig, seq_len: int, peak: float | None) -> str:
    """Tokens/s, MFU and peak GPU memory over the last two evaluations of a `pretrain.train` history."""
    if len(history) < 2:
        return "speed: needs two evaluations"
    a, b = history[-2], history[-1]
    rate = (b["tokens"] - a["tokens"]) / (b["seconds"] - a["seconds"])
    used = mfu(rate, flops_per_token(config, seq_len), peak)
    text = f"{rate:,.0f} tokens/s, {flops_per_token(config, seq_len) / 1e9:.3f} GFLOP/token"
    text += f", MFU {used:.1%}" if used is not None else ", MFU n/a (give --peak-tflops)"
    if torch.cuda.is_available():
        text += f", peak memory {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB"
    return text


def main(argv: list[str] | None = None) -> int:
    """`python -m minibert.train` (or under `torchrun`): chapter 06's loop with the GPU settings as defaults (Base
    size, bf16, 128 positions) and a speed report in tokens/s and MFU at the end. Every flag of
    `python -m minibert.pretrain` is accepted, and --unpadded trains `minibert.unpadded`'s model (section 6): the
    same weights, checkpoints and losses, without the work on padding."""
    from minibert import pretrain

    model = BertConfig.base()
    base = pretrain.PretrainConfig(out_dir="runs/base", model=model, vocab_size=model.vocab_size, learning_rate=1e-4,
                                   batch_size=256, precision="bf16")
    parser = pretrain.build_parser(base)
    parser.prog = "python -m minibert.train"
    parser.add_argument("--peak-tflops", type=float, default=None, help="the device's peak (default: from the GPU's"
                        f" name: {', '.join(PEAK_TFLOPS)})")
    parser.add_argument("--unpadded", action="store_true", help="run the encoder on the real pieces only "
                        "(minibert.unpadded: the same weights, checkpoints and losses)")
    extra = {"peak_tflops": None, "unpadded": False}
    parsed = parser.parse_known_args(argv)[0]
    if parsed.unpadded:  # imported only when asked for: chapter 09's later section
        from minibert.unpadded import UnpaddedBertForPreTraining as model_class
    else:
        from minibert.heads import BertForPreTraining as model_class
    # chapter 06's command: parse, check, train, tear down
    outcome = pretrain.run_command(parser, argv, extra, base, model_class)
    if isinstance(outcome, int):
        return outcome
    cfg, result = outcome
    final = result["final"]
    config = BertConfig.from_json_file(Path(result["checkpoint"]) / "config.json")
    print(f"step {result['step']}{' (unpadded)' if extra['unpadded'] else ''}: loss {final['loss']:.3f}, "
          f"masked-token accuracy {final['mlm_accuracy']:.3f}; "
          + speed_report(result["history"], config, cfg.max_seq_length, peak_flops(result["device"],
                                                                                   extra["peak_tflops"])))
    return 0


if __name__ == "__main__" and "__file__" in globals():
    exit_command(main)
