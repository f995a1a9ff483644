"""Chapter 09's measures: FLOPs per token, MFU, the benchmark against transformers, and `python -m minibert.train`.

The FLOPs are checked against a count made another way: the weight matrices of a real BertForPreTraining built on
the meta device, grouped by where they run (every position, the MLM targets, once per sequence), not against the
formula re-typed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from minibert import BertConfig, BertForPreTraining
from minibert.bench import pretraining_batch, run
from minibert.pretrain import load_trainer_state
from minibert.train import flops_per_token, mfu, peak_flops


def matrix_weights(config: BertConfig) -> dict[str, int]:
    """Entries of the Linear weights of BertForPreTraining(config), counted on the meta device, grouped by how
    often they run: per position (encoder), per MLM target (transform + tied decoder), per sequence (pooler + NSP)."""
    with torch.device("meta"):
        model = BertForPreTraining(config)
    groups = {"per_position": 0, "per_target": 0, "per_sequence": 0}
    for name, module in model.named_modules():
        if not isinstance(module, torch.nn.Linear):
            continue
        where = ("per_position" if ".encoder." in name else "per_target" if name.startswith("cls.predictions")
                 else "per_sequence")
        groups[where] += module.weight.numel()
    return groups


@pytest.mark.parametrize("size, seq", [("base", 128), ("base", 512), ("large", 128), ("tiny", 32)])
def test_flops_per_token_counts_the_matrix_products_the_step_runs(size, seq):
    config = getattr(BertConfig, size)()
    w = matrix_weights(config)
    assert w["per_target"] == config.hidden_size ** 2 + config.vocab_size * config.hidden_size, "the tied decoder"
    expected = 6 * (w["per_position"] + 0.15 * w["per_target"] + w["per_sequence"] / seq) \
        + 12 * config.num_hidden_layers * config.hidden_size * seq
    assert flops_per_token(config, seq) == pytest.approx(expected, rel=1e-9), f"{size}, T={seq}"


def test_flops_per_token_of_bert_base_at_128_positions():
    # 12 x (4 x 768^2 + 2 x 768 x 3072) = 84.93M encoder weights; 0.15 x (768^2 + 30522 x 768) = 3.60M at the
    # targets; (768^2 + 2 x 768) / 128 = 4.6k per position for the pooler and NSP; attention 12 x 12 x 768 x 128
    assert flops_per_token(BertConfig.base(), 128) == pytest.approx(545.419e6, rel=1e-5)


def test_every_position_in_the_mlm_head_costs_what_full_logits_cost():
    config = BertConfig.base()
    w = matrix_weights(config)
    full, targets = flops_per_token(config, 128, target_fraction=1.0), flops_per_token(config, 128)
    assert full - targets == pytest.approx(6 * 0.85 * w["per_target"], rel=1e-9)


def test_mfu_and_peak():
    assert mfu(1000.0, 5e8, 1e12) == pytest.approx(0.5)
    assert mfu(1000.0, 5e8, None) is None
    assert peak_flops("cpu") is None, "no table knows a CPU's peak"
    assert peak_flops("cpu", tflops=2.0) == 2e12


@pytest.mark.parametrize("name, tflops", [
    ("NVIDIA H100 80GB HBM3", 989.0), ("NVIDIA H100 PCIe", 756.0), ("NVIDIA H100 NVL", 835.0),
    ("NVIDIA H200", 989.0), ("NVIDIA H200 NVL", 835.0), ("NVIDIA A100-SXM4-80GB", 312.0),
    ("NVIDIA A100 80GB PCIe", 312.0), ("NVIDIA GeForce RTX 4090", None),
])
def test_peak_by_gpu_name(monkeypatch, name, tflops):
    """A PCIe or NVL board must not get the SXM board's peak because its name contains "H100" too."""
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: name)
    got = peak_flops("cuda")
    assert got == (tflops * 1e12 if tflops else None), f"{name}: expected {tflops} TFLOP/s, got {got}"


def test_pretraining_batch_looks_like_chapter_05s():
    batch = pretraining_batch(64, 48, 1000, torch.Generator().manual_seed(0))
    real = batch["attention_mask"].bool()
    assert 0.1 < 1 - real.float().mean().item() < 0.35, "about a fifth of the positions are padding"
    assert (batch["input_ids"][:, 0] == 2).all(), "[CLS] first"
    assert ((batch["input_ids"] == 0) == ~real).all(), "[PAD] exactly where the mask is 0"
    targets = batch["labels"] != -100
    assert not (targets & ~real).any() and not targets[:, 0].any(), "targets only at real, non-special pieces"
    share = targets.sum().item() / (real.sum().item() - 3 * 64)
    assert 0.12 < share < 0.18, f"{share:.3f} of the real pieces are targets"
    assert set(batch["token_type_ids"][~real].tolist()) == {0} and batch["token_type_ids"].max() == 1
    assert set(batch["next_sentence_label"].tolist()) == {0, 1}


def test_benchmark_compares_the_same_model_and_reports_both(tmp_path):
    result = run(config="tiny", seq=16, batch_size=8, vocab_size=500, rounds=2, steps_per_round=1, warmup=1)
    assert result["loss_difference"] < 1e-4, "minibert and transformers must compute the same loss"
    assert result["unpadded_loss_difference"] < 1e-4, "the unpadded path must compute the same loss"
    assert 0 < result["padding_share"] < 0.5
    for name in ("minibert", "minibert_unpadded", "transformers"):
        assert result[name]["tokens_per_second"] > 0 and result[name]["seconds_per_step"] > 0
        assert result[name]["mfu"] is None, "no peak given for a CPU"
    assert result["minibert_unpadded"]["flop_ratio"] > result["minibert"]["flop_ratio"] > 1
    assert result["transformers"]["flop_ratio"] == 1
    assert result["speedup"] == pytest.approx(result["minibert"]["tokens_per_second"]
                                              / result["transformers"]["tokens_per_second"])
    assert result["speedup_unpadded"] == pytest.approx(result["minibert_unpadded"]["tokens_per_second"]
                                                       / result["transformers"]["tokens_per_second"])
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, "-m", "minibert.bench", "--seq", "16", "--batch-size", "8", "--vocab-size",
                           "500", "--rounds", "1", "--warmup", "1", "--steps-per-round", "1", "--peak-tflops", "1",
                           "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "minibert / transformers:" in proc.stdout and "unpadded / transformers:" in proc.stdout, proc.stdout
    assert "tokens/s" in proc.stdout and "minibert unpadded" in proc.stdout, proc.stdout
    assert "matrix-product FLOPs of minibert" in proc.stdout, proc.stdout
    figures = json.loads(out.read_text(encoding="utf-8"))
    assert figures["peak_tflops"] == 1.0 and 0 < figures["minibert"]["mfu"] < 1


def test_executed_flops_are_what_torch_counts_on_each_path():
    """`executed_flops` against torch's own FLOP counter, forward and backward, on each of the three paths and two
    batches (other padding, other targets): the ratio the benchmark prints is the work each path really runs."""
    from torch.utils.flop_counter import FlopCounterMode

    from minibert.bench import executed_flops, models
    from minibert.unpadded import UnpaddedBertForPreTraining

    config = BertConfig.tiny(vocab_size=500)
    ours, theirs = models(config, torch.device("cpu"), 0)
    unpadded = UnpaddedBertForPreTraining(config).train()
    unpadded.load_state_dict(ours.state_dict())
    generator = torch.Generator().manual_seed(0)
    for batch in (pretraining_batch(8, 16, 500, generator), pretraining_batch(4, 24, 500, generator, full_share=0.2)):
        counted = {}
        for name, model, ours_ in (("minibert", ours, True), ("minibert_unpadded", unpadded, True),
                                   ("transformers", theirs, False)):
            with FlopCounterMode(display=False) as counter:
                (model(**batch, targets_only=True) if ours_ else model(**batch)).loss.backward()
            counted[name] = counter.get_total_flops()
            assert executed_flops(config, batch, name) == counted[name], name
        assert counted["transformers"] > counted["minibert"] > counted["minibert_unpadded"]
    with pytest.raises(ValueError, match="unknown path"):
        executed_flops(config, batch, "padded")


def test_train_entry_reports_tokens_per_second_and_mfu(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "minibert.train", "--device", "cpu", "--steps", "6", "--eval-every", "3",
           "--limit-documents", "12", "--vocab-size", "800", "--seq-len", "32", "--batch-size", "8",
           "--hidden-size", "32", "--num-hidden-layers", "2", "--num-attention-heads", "2", "--intermediate-size", "64",
           "--precision", "fp32", "--out", str(out), "--no-progress", "--peak-tflops", "1"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "tokens/s" in proc.stdout and "MFU" in proc.stdout, proc.stdout
    state = load_trainer_state(out / "checkpoint")
    assert [h["tokens"] % 8 for h in state["history"]] == [0, 0] and state["history"][-1]["tokens"] <= 6 * 8 * 32
    assert state["history"][-1]["tokens"] > state["history"][0]["tokens"]


def test_gpu_check_needs_a_gpu_and_says_so(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: the check would run for minutes (run `make gpu-check`)")
    proc = subprocess.run([sys.executable, "-m", "minibert_course.gpu_check"], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode != 0 and "sees no GPU" in proc.stderr, proc.stderr[-2000:]


def without_time(history: list[dict]) -> list[dict]:
    return [{k: v for k, v in h.items() if k != "seconds"} for h in history]


def test_gpu_check_steps_on_cpu_at_tiny_size(tmp_path):
    """The GPU check's CPU twin: the same benchmark, the same pretraining stopped by --stop-after-step after step 50
    (as a SIGTERM during that step would stop it, but at a known step: no timer races the run), resumed to the end,
    and run again without a stop, at tiny size, on a corpus exported as .txt (as for a machine without gensim). On a
    CPU the resumed curve is the uninterrupted one exactly. Step 50 is neither an evaluation nor a periodic
    checkpoint (every 20 steps): the stop writes its own checkpoint, and the resumed run evaluates at 60 as the
    uninterrupted one does."""
    from minibert_course.gpu_check import CPU_TWIN, export_corpus, gpu_check

    corpus = export_corpus(tmp_path / "wiki-txt")
    assert len(list(corpus.glob("*.txt"))) == 106
    assert CPU_TWIN["steps"] == 120 and CPU_TWIN["stop_after"] == 50
    figures = gpu_check(tmp_path / "check", corpus=str(corpus), **CPU_TWIN)
    assert figures["bench_tiny_32"]["loss_difference"] < 1e-4
    run = figures["pretrain_tiny"]
    brief = {k: v for k, v in run.items() if "history" not in k}
    assert "cuda" not in run["command"] and "bf16" not in run["command"], brief  # the twin's flags, not the GPU's
    assert run["first_exit"] == 128 + 15 and run["stopped_at_step"] == 50, brief
    assert run["resumed_exit"] == 0 and run["uninterrupted_exit"] == 0 and run["final_step"] == 120
    history = run["history"]
    assert [h["step"] for h in history] == [20, 40, 60, 80, 100, 120]
    assert without_time(history) == without_time(run["uninterrupted_history"]), "resumed != uninterrupted"
    assert run["loss_difference"] == 0.0 and run["curves_match"] and figures["passed"]
    assert history[-1]["loss"] < history[0]["loss"], "the loss goes down"
    saved = json.loads((tmp_path / "check" / "gpu_check.json").read_text(encoding="utf-8"))
    assert saved["pretrain_tiny"]["final_step"] == 120 and saved["passed"]
    log = (tmp_path / "check" / "gpu_check.log").read_text(encoding="utf-8")
    assert "--stop-after-step 50: stopped after step 50" in log and "next, resuming:" in log, log[-3000:]


def test_gpu_check_that_stops_early_says_what_to_run_next(tmp_path, capsys):
    """A pretraining run that fails (here: a flag the CLI does not know) ends the check early: not passed, the
    figures so far in gpu_check.json, and the command to run next printed and logged."""
    from minibert_course.gpu_check import gpu_check

    figures = gpu_check(tmp_path / "check", corpus="unused", steps=20, device="cpu", config="tiny", shapes=(),
                        pretrain_flags=("--no-such-flag",))
    assert figures["passed"] is False and figures["pretrain_tiny"]["first_exit"] == 2, figures
    printed = capsys.readouterr().out
    assert "GPU check stopped early: the stopped run exited with status 2, not 143" in printed, printed[-3000:]
    next_line = printed[printed.index("Next, once the cause is fixed:"):]
    assert "-m minibert.train" in next_line and "--stop-after-step 10" in next_line, next_line
    saved = json.loads((tmp_path / "check" / "gpu_check.json").read_text(encoding="utf-8"))
    assert saved["passed"] is False and "stopped run" in saved["pretrain_tiny"]["problem"]
    assert "Next, once the cause is fixed:" in (tmp_path / "check" / "gpu_check.log").read_text(encoding="utf-8")


def test_the_benchmark_presets_are_bertconfigs_presets():
    """`--config tiny|small|base` builds BertConfig's own presets, not a second copy of their sizes."""
    import typing

    from minibert.bench import BenchConfig

    presets = typing.get_args(typing.get_type_hints(BenchConfig)["config"])
    assert set(presets) == {"tiny", "small", "base"} and BenchConfig().config == "tiny"
    assert all(isinstance(getattr(BertConfig, name)(), BertConfig) for name in presets)
    small = BertConfig.small(vocab_size=30522)
    assert (small.num_hidden_layers, small.hidden_size, small.num_attention_heads, small.intermediate_size) == (
        4, 512, 8, 2048)
    with torch.device("meta"):
        from minibert import BertModel

        count = sum(p.numel() for p in BertModel(small).parameters())
    assert 28e6 < count < 30e6, f"BERT-Small has about 29M parameters, got {count:,}"


def test_benchmark_batches_come_from_the_pretraining_collator():
    """The benchmark measures what pretraining feeds: [CLS] A [SEP] B [SEP] rows with the special ids of a minibert
    vocabulary, segments, padding, and a fixed 15% of the real pieces as targets."""
    from minibert.tokenization import SPECIAL_TOKENS

    batch = pretraining_batch(32, 40, 500, torch.Generator().manual_seed(3))
    ids = {token: i for i, token in enumerate(SPECIAL_TOKENS)}
    real = batch["attention_mask"].bool()
    lengths = real.sum(1)
    targets = batch["labels"] != -100
    for row in range(32):
        n = int(lengths[row])
        assert int(batch["labels"][row, 0]) == -100 and batch["input_ids"][row, n:].eq(ids["[PAD]"]).all()
        assert int(batch["input_ids"][row, 0]) == ids["[CLS]"] and int(batch["input_ids"][row, n - 1]) == ids["[SEP]"]
        assert int(targets[row].sum()) == max(1, round((n - 3) * 0.15)), "a fixed count per row: 15% of real pieces"
        assert not targets[row, n:].any() and batch["token_type_ids"][row, n:].eq(0).all()


def test_the_benchmark_command_line_is_made_from_bench_config():
    from minibert.bench import BenchConfig, _build_parser
    from minibert.cli import config_from_args

    parser = _build_parser()
    assert config_from_args(BenchConfig, vars(parser.parse_args([]))) == BenchConfig()
    args = vars(parser.parse_args(["--config", "base", "--seq", "512", "--precision", "bf16", "--compile",
                                   "--json", "out.json"]))
    assert args.pop("json") == Path("out.json")
    assert config_from_args(BenchConfig, args) == BenchConfig(config="base", seq=512, precision="bf16", compile=True)
    with pytest.raises(SystemExit):
        parser.parse_args(["--config", "huge"])  # not a preset of BertConfig
