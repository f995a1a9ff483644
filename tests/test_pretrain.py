"""The pretraining loop of chapter 06 on a tiny model: it trains, checkpoints, resumes, fills masks, and reports
bad data clearly.

Runs use a tiny setting (12 Wikipedia articles, 800 pieces, 32 positions, batch 8, hidden 32) so that the module
stays well under a minute and a half on a laptop CPU. Expected values come from the configuration and from
reasoning about the schedule and the data, not from re-running minibert's own code.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

import minibert.pretrain as pretrain
from minibert import BertConfig, BertForMaskedLM, BertForPreTraining, BertTokenizer
from minibert.checkpoint import load_state_dict
from minibert.cli import config_from_args
from minibert.data import PretrainingCollator, continuation_table, pad_and_stack, word_ids_from_ids
from minibert.masking import word_ids_from_tokens
from minibert.pretrain import (
    EpochSampler,
    PretrainConfig,
    Schedule,
    fill_mask,
    latest_checkpoint,
    load_trainer_state,
    make_optimizer,
    save_checkpoint,
    train,
    train_step,
)

TINY = dict(limit_documents=12, vocab_size=800, max_seq_length=32, batch_size=8, warmup_steps=5, eval_every=5,
            eval_batches=2, checkpoint_every=5, model=BertConfig.tiny(hidden_size=32, intermediate_size=64))
TRAIN_STEPS = 30
METRICS = ("loss", "mlm_loss", "nsp_loss", "mlm_accuracy", "nsp_accuracy")


def tiny(out_dir: Path, **overrides) -> PretrainConfig:
    return PretrainConfig(out_dir=str(out_dir), **{**TINY, **overrides})


def scheduled_lr(cfg: PretrainConfig, step: int) -> float:
    """The learning rate of optimizer step `step` (0-based): linear warm-up to the peak, linear decay to 0."""
    if step < cfg.warmup_steps:
        return cfg.learning_rate * (step + 1) / cfg.warmup_steps
    return cfg.learning_rate * (cfg.max_steps - step) / (cfg.max_steps - cfg.warmup_steps)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One short run, shared by the tests that only read its results."""
    cfg = tiny(tmp_path_factory.mktemp("run") / "tiny", max_steps=TRAIN_STEPS)
    return cfg, train(cfg, progress=False)


# 1. A short run trains --------------------------------------------------------------------------------------


def test_short_run_lowers_the_loss(trained):
    cfg, result = trained
    history = result["history"]
    assert result["step"] == TRAIN_STEPS
    assert [h["step"] for h in history] == list(range(5, TRAIN_STEPS + 1, 5))
    assert result["final"] == history[-1]
    assert result["train_pairs"] > 100
    for h in history:
        assert set(METRICS) | {"step", "train_loss", "seconds"} <= set(h), sorted(h)
        assert all(math.isfinite(h[k]) for k in (*METRICS, "train_loss"))
        assert 0.0 <= h["mlm_accuracy"] <= 1.0 and 0.0 <= h["nsp_accuracy"] <= 1.0
        assert h["loss"] == pytest.approx(h["mlm_loss"] + h["nsp_loss"], abs=1e-4)
    first, last = history[0], history[-1]
    # After 5 warm-up steps from a 0.02-std initialization the model is close to uniform: L_MLM ~ ln V, L_NSP ~ ln 2.
    assert first["mlm_loss"] == pytest.approx(math.log(cfg.vocab_size), abs=0.3)
    assert first["nsp_loss"] == pytest.approx(math.log(2), abs=0.1)
    print(f"\neval loss step {first['step']}: {first['loss']:.3f} -> step {last['step']}: {last['loss']:.3f}")
    assert last["loss"] < first["loss"] - 0.05, f"eval loss did not go down: {first['loss']} -> {last['loss']}"
    assert last["mlm_loss"] < first["mlm_loss"] - 0.05
    assert [h["seconds"] for h in history] == sorted(h["seconds"] for h in history)


def test_checkpoint_folder_is_complete_and_loads(trained):
    cfg, result = trained
    out = Path(cfg.out_dir)
    folder = Path(result["checkpoint"])
    assert folder == out / "checkpoint"
    assert {"config.json", "model.safetensors", "vocab.txt", "trainer_state.json", "trainer_state.pt"} <= {
        p.name for p in folder.iterdir()}
    written = json.loads((folder / "trainer_state.json").read_text(encoding="utf-8"))  # step, history, schedule: JSON
    assert written["step"] == TRAIN_STEPS and written["history"] == result["history"] and "schedule" in written
    tensors = torch.load(folder / "trainer_state.pt", weights_only=True)  # no pickle: tensors, dicts and numbers
    assert set(tensors) == {"step", "optimizer", "torch_rng"}, set(tensors)
    assert not (out / "checkpoint-new").exists() and not (out / "checkpoint-old").exists()
    assert (out / "pretrain_config.json").exists()
    assert (folder / "vocab.txt").read_text(encoding="utf-8") == (out / "vocab.txt").read_text(encoding="utf-8")
    model = BertForPreTraining.from_pretrained(folder)
    tokenizer = BertTokenizer(folder / "vocab.txt")
    assert model.config.vocab_size == len(tokenizer) <= cfg.vocab_size
    assert (model.config.hidden_size, model.config.intermediate_size, model.config.max_position_embeddings) == (
        32, 64, 32)
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    state = load_trainer_state(folder)
    assert state["step"] == TRAIN_STEPS and state["history"] == result["history"]
    assert {"optimizer", "schedule", "elapsed", "torch_rng"} <= set(state)
    # the checkpoint holds the final weights: the held-out evaluation gives the final figures again
    _, _, eval_set = pretrain.prepare(cfg, out)
    collate = pretrain.PretrainingCollator(tokenizer, generator=torch.Generator().manual_seed(cfg.seed + 7))
    batches = [collate(eval_set[i * cfg.batch_size:(i + 1) * cfg.batch_size]) for i in range(cfg.eval_batches)]
    again = pretrain.evaluate(model, batches)
    for key in METRICS:
        assert again[key] == pytest.approx(result["final"][key], abs=1e-5), key


# 2. Resuming ------------------------------------------------------------------------------------------------


class Interrupted(Exception):
    """Stands for the process being killed right after a checkpoint was written."""


def no_dropout(mp: pytest.MonkeyPatch) -> None:
    original = PretrainConfig.model_config

    def without_dropout(self, vocab_size: int) -> BertConfig:
        model = original(self, vocab_size)
        return dataclasses.replace(model, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)

    mp.setattr(PretrainConfig, "model_config", without_dropout)


INTERRUPT_POINTS = ("forward", "backward", "optimizer-step", "checkpoint-write")


def recorded_run(cfg: PretrainConfig, interrupt_at: int | None = None, signal_at: tuple | None = None) -> dict:
    """Run train(cfg) and record, for every optimizer step, the training batch and the learning rate used.

    interrupt_at: the run stops (an exception) right after writing the checkpoint of that step.
    signal_at: (signal, point, step): the process sends itself the signal during that point of that 0-based step
        (the forward pass, the backward pass, right after optimizer.step() before the step counter moves, or while
        the checkpoint of that step count is being written); signal None raises KeyboardInterrupt there instead.
        `log["stopped"]` is what train() raised.
    """
    log = {"batches": [], "lrs": [], "result": None, "stopped": None}
    real_forward, real_save, real_torch_save = BertForPreTraining.forward, pretrain.save_checkpoint, torch.save
    signum, point, at = signal_at or (None, None, None)

    def send(where: str, step: int) -> None:
        if where == point and step == at:
            if signum is None:  # a KeyboardInterrupt raised by code, not by a signal handler
                raise KeyboardInterrupt
            os.kill(os.getpid(), signum)

    def forward(self, *args, **kwargs):
        if not self.training:
            return real_forward(self, *args, **kwargs)
        step = len(log["batches"])
        log["batches"].append({k: kwargs[k].clone() for k in ("input_ids", "labels", "next_sentence_label")})
        send("forward", step)
        out = real_forward(self, *args, **kwargs)
        if point == "backward" and step == at:
            out.mlm_loss.register_hook(lambda grad: send("backward", step))  # runs inside the backward pass
        return out

    def save_checkpoint(folder, model, optimizer, tokenizer, state):
        def torch_save(obj, path, *args, **kwargs):  # the trainer state: the last file of the checkpoint
            send("checkpoint-write", state["step"])
            return real_torch_save(obj, path, *args, **kwargs)

        with pytest.MonkeyPatch.context() as inner:
            inner.setattr(pretrain.torch, "save", torch_save)
            real_save(folder, model, optimizer, tokenizer, state)
        if state["step"] == interrupt_at:
            raise Interrupted

    pre = register_optimizer_step_pre_hook(lambda opt, args, kwargs: log["lrs"].append(
        [g["lr"] for g in opt.param_groups]))
    post = register_optimizer_step_post_hook(lambda opt, args, kwargs: send("optimizer-step", len(log["lrs"]) - 1))
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(BertForPreTraining, "forward", forward)
            mp.setattr(pretrain, "save_checkpoint", save_checkpoint)
            try:
                log["result"] = train(cfg, progress=False)
            except (Interrupted, KeyboardInterrupt, SystemExit) as exc:
                log["stopped"] = exc
    finally:
        pre.remove()
        post.remove()
    return log


def resume_runs(root: Path, **overrides) -> dict:
    """Run A: 10 steps straight. Run B: the same configuration, killed after its step-6 checkpoint, then resumed.

    B starts from A's vocab.txt: training a WordPiece vocabulary with `tokenizers` is not deterministic (hash-map
    order breaks count ties, huggingface/tokenizers#1794), so two fresh runs would not even share their pieces."""
    settings = dict(max_steps=10, checkpoint_every=3, **overrides)
    a = recorded_run(tiny(root / "a", **settings))
    (root / "b").mkdir()
    shutil.copy(root / "a" / "vocab.txt", root / "b" / "vocab.txt")
    b1 = recorded_run(tiny(root / "b", **settings), interrupt_at=6)
    assert b1["result"] is None and (root / "b" / "checkpoint" / "trainer_state.pt").exists()
    b2 = recorded_run(tiny(root / "b", **settings))
    return {"cfg": tiny(root / "a", **settings), "a": a, "b1": b1, "b2": b2, "root": root}


@pytest.fixture(scope="module")
def resumed(tmp_path_factory):
    return resume_runs(tmp_path_factory.mktemp("resume"))


@pytest.fixture(scope="module")
def resumed_without_dropout(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        no_dropout(mp)
        return resume_runs(tmp_path_factory.mktemp("resume_nodrop"))


def assert_same_weights(a_folder: Path, b_folder: Path, what: str) -> None:
    """Bit for bit: the model weights, the optimizer moments and the random state of two checkpoints."""
    a, b = load_state_dict(a_folder), load_state_dict(b_folder)
    assert set(a) == set(b)
    diffs = {k: (a[k] - b[k]).abs().max().item() for k in a}
    worst = max(diffs, key=diffs.get)
    assert diffs[worst] == 0.0, f"{what}: weights differ from the straight run's by up to {diffs[worst]:.3g} ({worst})"
    sa = load_trainer_state(a_folder)
    sb = load_trainer_state(b_folder)
    assert sa["step"] == sb["step"]
    for (i, x), (j, y) in zip(sa["optimizer"]["state"].items(), sb["optimizer"]["state"].items(), strict=True):
        assert i == j and all(torch.equal(x[k], y[k]) for k in x), f"{what}: AdamW state of parameter {i} differs"
    assert torch.equal(sa["torch_rng"], sb["torch_rng"]), f"{what}: the dropout random state differs"


def test_resume_continues_from_the_checkpoint_with_the_same_batches(resumed):
    a, b1, b2 = resumed["a"], resumed["b1"], resumed["b2"]
    assert len(a["batches"]) == 10 and len(b1["batches"]) == 6
    assert len(b2["batches"]) == 4, "the resumed run should train steps 6..9 only"
    assert b2["result"]["step"] == a["result"]["step"] == 10
    for step, (x, y) in enumerate(zip(a["batches"], b1["batches"] + b2["batches"], strict=True)):
        for key in x:
            assert torch.equal(x[key], y[key]), f"step {step}: {key} differs between the straight and resumed runs"
    history_a, history_b = a["result"]["history"], b2["result"]["history"]
    assert [h["step"] for h in history_b] == [h["step"] for h in history_a] == [5, 10]
    assert {k: history_b[0][k] for k in METRICS} == {k: history_a[0][k] for k in METRICS}, (
        "the step-5 evaluation comes from before the interruption and must be carried over unchanged")
    out = resumed["root"] / "b"
    assert not (out / "checkpoint-new").exists() and not (out / "checkpoint-old").exists()
    assert load_trainer_state(out / "checkpoint")["step"] == 10


def test_learning_rate_follows_the_schedule_straight_and_resumed(resumed):
    cfg = resumed["cfg"]
    expected = [scheduled_lr(cfg, s) for s in range(cfg.max_steps)]
    straight = [lrs[0] for lrs in resumed["a"]["lrs"]]
    assert straight == pytest.approx(expected, rel=1e-9)
    assert all(lrs[0] == lrs[1] for lrs in resumed["a"]["lrs"]), "both parameter groups share the schedule"
    with_resume = [lrs[0] for lrs in resumed["b1"]["lrs"] + resumed["b2"]["lrs"]]
    wrong = [f"step {s}: {got:.3g} instead of {want:.3g}" for s, (got, want) in enumerate(
        zip(with_resume, expected, strict=True)) if not math.isclose(got, want, rel_tol=1e-9)]
    assert not wrong, "the resumed run does not continue the schedule: " + "; ".join(wrong)


def test_resume_is_bit_exact_with_and_without_dropout(resumed, resumed_without_dropout):
    """The checkpoint restores every input of a step, dropout's random state included: the resumed run ends with
    exactly the straight run's weights, AdamW moments and random state."""
    for runs, what in ((resumed, "dropout on"), (resumed_without_dropout, "dropout off")):
        a_batches = runs["a"]["batches"]
        b_batches = runs["b1"]["batches"] + runs["b2"]["batches"]
        assert all(torch.equal(x["input_ids"], y["input_ids"]) for x, y in zip(a_batches, b_batches, strict=True))
        assert_same_weights(runs["root"] / "a" / "checkpoint", runs["root"] / "b" / "checkpoint", what)


def test_eval_at_start_adds_step_0_and_changes_nothing_else(resumed, tmp_path):
    """eval_at_start=True puts the untrained model first in the history (step 0: no training loss yet, learning rate
    0, L_MLM ~ ln V, L_NSP ~ ln 2). Evaluating draws no random numbers, so the rest of the run is run A of `resumed`
    bit for bit; a run killed after its step-6 checkpoint and resumed evaluates step 0 once, not again."""
    vocab = resumed["root"] / "a" / "vocab.txt"
    settings = dict(max_steps=10, checkpoint_every=3, eval_at_start=True)
    for name in ("straight", "killed"):
        (tmp_path / name).mkdir()
        shutil.copy(vocab, tmp_path / name / "vocab.txt")
    straight = recorded_run(tiny(tmp_path / "straight", **settings))["result"]
    history = straight["history"]
    assert [h["step"] for h in history] == [0, 5, 10]
    first = history[0]
    assert math.isnan(first["train_loss"]) and first["lr"] == 0.0
    assert first["mlm_loss"] == pytest.approx(math.log(len(BertTokenizer(vocab))), abs=0.05)
    assert first["nsp_loss"] == pytest.approx(math.log(2), abs=0.05)
    without = resumed["a"]["result"]["history"]
    assert [{k: h[k] for k in METRICS} for h in history[1:]] == [{k: h[k] for k in METRICS} for h in without]
    assert_same_weights(resumed["root"] / "a" / "checkpoint", tmp_path / "straight" / "checkpoint", "eval_at_start")
    killed = recorded_run(tiny(tmp_path / "killed", **settings), interrupt_at=6)
    assert killed["result"] is None
    again = recorded_run(tiny(tmp_path / "killed", **settings))["result"]["history"]
    assert [h["step"] for h in again] == [0, 5, 10]
    assert [{k: h[k] for k in METRICS} for h in again] == [{k: h[k] for k in METRICS} for h in history]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
@pytest.mark.parametrize("point", INTERRUPT_POINTS)
def test_a_signal_at_any_point_of_a_step_stops_between_steps_and_resumes_bit_for_bit(resumed, tmp_path, capsys,
                                                                                      signum, point):
    """Ctrl+C or SIGTERM during step 6 (its forward pass, its backward pass, right after its optimizer step, or
    while the step-6 checkpoint is written) lets the step in flight finish, writes the checkpoint of the last whole
    step, and stops (KeyboardInterrupt, or SystemExit 143). Resuming ends, bit for bit, where the straight run did,
    with dropout on. Before, an interrupt saved whatever half a step left: one update more than the step count."""
    cfg = resumed["cfg"]
    out = tmp_path / "run"
    out.mkdir()
    shutil.copy(Path(cfg.out_dir) / "vocab.txt", out / "vocab.txt")
    settings = dict(max_steps=10, checkpoint_every=3)
    first = recorded_run(tiny(out, **settings), signal_at=(signum, point, 6))
    stopped = first["stopped"]
    if signum == signal.SIGINT:
        assert isinstance(stopped, KeyboardInterrupt), f"Ctrl+C should end train() with KeyboardInterrupt: {stopped!r}"
    else:
        assert isinstance(stopped, SystemExit) and stopped.code == 143, f"SIGTERM: expected exit 143, got {stopped!r}"
    last_whole_step = 6 if point == "checkpoint-write" else 7  # the checkpoint of step count 6 is written after step 5
    assert len(first["lrs"]) == last_whole_step, "the loop should stop after the step in flight, not run on"
    state = load_trainer_state(out / "checkpoint")
    assert state["step"] == last_whole_step, f"the checkpoint says step {state['step']}, {last_whole_step} were taken"
    assert f"stopped after step {last_whole_step}" in capsys.readouterr().out
    assert not (out / "checkpoint-new").exists() and not (out / "checkpoint-old").exists()
    second = recorded_run(tiny(out, **settings))
    assert second["result"]["step"] == 10 and len(second["batches"]) == 10 - last_whole_step
    assert [h["step"] for h in second["result"]["history"]] == [5, 10]
    assert_same_weights(Path(cfg.out_dir) / "checkpoint", out / "checkpoint", f"{point}, {signum.name}")


@pytest.mark.parametrize("point", ["forward", "backward", "optimizer-step"])
def test_a_keyboard_interrupt_raised_inside_a_step_keeps_a_whole_checkpoint(resumed, tmp_path, capsys, point):
    """Without the signal handler (training in another thread, or code that raises KeyboardInterrupt), the
    interrupt arrives inside step 6. Before the update began (forward, backward) nothing of the step was applied: the
    checkpoint of step 6 is written, with the random state from before the step. After the update (right after
    optimizer.step()) the step cannot be undone: the step-6 checkpoint already on disk is kept. Either way the
    resumed run ends bit for bit where the straight run did."""
    cfg = resumed["cfg"]
    out = tmp_path / "run"
    out.mkdir()
    shutil.copy(Path(cfg.out_dir) / "vocab.txt", out / "vocab.txt")
    settings = dict(max_steps=10, checkpoint_every=4)  # the last periodic checkpoint before step 6 is step 4
    first = recorded_run(tiny(out, **settings), signal_at=(None, point, 6))
    assert isinstance(first["stopped"], KeyboardInterrupt)
    state = load_trainer_state(out / "checkpoint")
    want = 4 if point == "optimizer-step" else 6
    assert state["step"] == want, f"interrupted in the {point} of step 6: checkpoint of step {state['step']}"
    printed = capsys.readouterr().out
    assert ("inside the update of step 7" if point == "optimizer-step" else "checkpoint of step 6 saved") in printed
    second = recorded_run(tiny(out, **settings))
    assert second["result"]["step"] == 10 and len(second["batches"]) == 10 - want
    assert_same_weights(Path(cfg.out_dir) / "checkpoint", out / "checkpoint", f"KeyboardInterrupt in the {point}")


def test_a_second_ctrl_c_stops_at_once(resumed, tmp_path):
    """Ctrl+C twice: the second one does not wait for the step in flight (the user insists). It came in the forward
    pass of step 4, before the update: the checkpoint of the 4 whole steps is written, and nothing of step 4."""
    cfg = resumed["cfg"]
    out = tmp_path / "run"
    out.mkdir()
    shutil.copy(Path(cfg.out_dir) / "vocab.txt", out / "vocab.txt")
    real_forward = BertForPreTraining.forward
    calls = []

    def forward(self, *args, **kwargs):
        if self.training:
            calls.append(1)
            if len(calls) == 5:
                os.kill(os.getpid(), signal.SIGINT)
                os.kill(os.getpid(), signal.SIGINT)
                pytest.fail("the second Ctrl+C should have raised KeyboardInterrupt inside the step")
        return real_forward(self, *args, **kwargs)

    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(BertForPreTraining, "forward", forward)
        with pytest.raises(KeyboardInterrupt):
            train(tiny(out, max_steps=10, checkpoint_every=3), progress=False)
    assert load_trainer_state(out / "checkpoint")["step"] == 4
    after = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    assert after == before, "train() must give the Ctrl+C and SIGTERM handlers back"


def without_time(history: list[dict]) -> list[dict]:
    return [{k: v for k, v in h.items() if k != "seconds"} for h in history]


@pytest.mark.parametrize("stop_after", [6, 7, 10], ids=["at-a-checkpoint", "between-checkpoints", "last-step"])
def test_stop_after_step_stops_as_sigterm_would_and_resumes_bit_for_bit(resumed, tmp_path, capsys, stop_after):
    """stop_after_step=N (--stop-after-step N) stops after step N exactly as a SIGTERM during step N does: the same
    checkpoint (weights, AdamW moments, random state, history), the same exit (SystemExit 143), at a known step, with
    no timer. The same configuration run again resumes (step N is done) and ends bit for bit where the straight run
    did. N = 6 is also a periodic checkpoint, N = 10 the last step."""
    cfg = resumed["cfg"]
    settings = dict(max_steps=10, checkpoint_every=3)
    for name in ("flag", "signal"):
        (tmp_path / name).mkdir()
        shutil.copy(Path(cfg.out_dir) / "vocab.txt", tmp_path / name / "vocab.txt")
    by_flag = recorded_run(tiny(tmp_path / "flag", **settings, stop_after_step=stop_after))
    stopped = by_flag["stopped"]
    assert isinstance(stopped, SystemExit) and stopped.code == 143, f"expected exit 143, got {stopped!r}"
    assert len(by_flag["lrs"]) == stop_after, f"{len(by_flag['lrs'])} steps taken, asked to stop after {stop_after}"
    assert f"--stop-after-step {stop_after}: stopped after step {stop_after}" in capsys.readouterr().out
    by_signal = recorded_run(tiny(tmp_path / "signal", **settings), signal_at=(signal.SIGTERM, "forward",
                                                                              stop_after - 1))
    assert isinstance(by_signal["stopped"], SystemExit) and by_signal["stopped"].code == 143
    assert_same_weights(tmp_path / "signal" / "checkpoint", tmp_path / "flag" / "checkpoint", "flag vs SIGTERM")
    states = [load_trainer_state(tmp_path / name / "checkpoint")
              for name in ("flag", "signal")]
    assert states[0]["step"] == stop_after and without_time(states[0]["history"]) == without_time(
        states[1]["history"]), "the checkpoint of --stop-after-step differs from the one of SIGTERM"
    again = recorded_run(tiny(tmp_path / "flag", **settings, stop_after_step=stop_after))
    assert again["stopped"] is None and again["result"]["step"] == 10
    assert len(again["batches"]) == 10 - stop_after, "the resumed run trains the steps after the stop only"
    assert without_time(again["result"]["history"]) == without_time(resumed["a"]["result"]["history"])
    assert_same_weights(Path(cfg.out_dir) / "checkpoint", tmp_path / "flag" / "checkpoint", f"stopped at {stop_after}")


def test_stop_after_step_from_the_command_line_exits_143(resumed, tmp_path):
    """The flag of `python -m minibert.pretrain`: the process ends with SIGTERM's status, 143, and the checkpoint
    of step N; run again without the flag, it resumes and ends with the straight run's weights."""
    cfg = resumed["cfg"]
    out = tmp_path / "run"
    out.mkdir()
    shutil.copy(Path(cfg.out_dir) / "vocab.txt", out / "vocab.txt")
    first = subprocess.run([sys.executable, "-m", "minibert.pretrain", *cli_args(out, 10), "--stop-after-step", "5"],
                           capture_output=True, text=True, timeout=300)
    assert first.returncode == 143, first.stderr[-2000:]
    assert "--stop-after-step 5: stopped after step 5" in first.stdout, first.stdout[-2000:]
    assert load_trainer_state(out / "checkpoint")["step"] == 5
    again = subprocess.run([sys.executable, "-m", "minibert.pretrain", *cli_args(out, 10)], capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == 0 and "starting at step 5" in again.stdout, again.stderr[-2000:]
    assert_same_weights(Path(cfg.out_dir) / "checkpoint", out / "checkpoint", "--stop-after-step 5, resumed")


def test_stop_after_step_must_be_a_step():
    with pytest.raises(ValueError, match="--stop-after-step 0"):
        train(PretrainConfig(max_steps=10, stop_after_step=0), progress=False)


KILL_SCRIPT = """
import os, signal, sys
import torch
import minibert.pretrain as pretrain
real_save = torch.save
def save(obj, path, *args, **kwargs):  # SIGKILL in the middle of writing the step-{kill_step} checkpoint
    if isinstance(obj, dict) and obj.get("step") == {kill_step}:
        with open(path, "wb") as f:
            f.write(b"half a file")
        os.kill(os.getpid(), signal.SIGKILL)
    return real_save(obj, path, *args, **kwargs)
pretrain.torch.save = save
sys.exit(pretrain.main(sys.argv[1:]))
"""


def cli_args(out: Path, steps: int) -> list[str]:
    flags = {"--out": out, "--steps": steps, "--limit-documents": 12, "--vocab-size": 800, "--seq-len": 32,
             "--batch-size": 8, "--warmup": 5, "--eval-every": 5, "--eval-batches": 2, "--checkpoint-every": 3,
             "--hidden-size": 32, "--num-attention-heads": 2, "--intermediate-size": 64}
    return [str(x) for item in flags.items() for x in item] + ["--no-progress"]


def test_sigkill_leaves_a_whole_checkpoint_and_resumes_bit_for_bit(resumed, tmp_path):
    """A run killed with SIGKILL (no handler can run) while it writes its step-6 checkpoint: the folder named
    `checkpoint` is still the whole step-3 one, and resuming from it ends bit for bit where the straight run did."""
    cfg = resumed["cfg"]
    out = tmp_path / "run"
    out.mkdir()
    shutil.copy(Path(cfg.out_dir) / "vocab.txt", out / "vocab.txt")
    killed = subprocess.run([sys.executable, "-c", KILL_SCRIPT.replace("{kill_step}", "6"), *cli_args(out, 10)],
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert (out / "checkpoint-new" / "trainer_state.pt").read_bytes() == b"half a file"
    found = latest_checkpoint(out)
    assert found == out / "checkpoint"
    assert load_trainer_state(found)["step"] == 3
    BertForPreTraining.from_pretrained(found)  # loads: config, weights and vocabulary are whole
    resumed_run = subprocess.run([sys.executable, "-m", "minibert.pretrain", *cli_args(out, 10)],
                                 capture_output=True, text=True, timeout=300)
    assert resumed_run.returncode == 0, resumed_run.stderr[-2000:]
    assert "starting at step 3" in resumed_run.stdout
    assert not (out / "checkpoint-new").exists()
    assert_same_weights(Path(cfg.out_dir) / "checkpoint", out / "checkpoint", "SIGKILL during a checkpoint write")


RANDOM_KILL_SCRIPT = """
import os, pathlib, signal, sys
import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook
import minibert.pretrain as pretrain
from minibert.heads import BertForPreTraining
kill_at, seen, armed = int(sys.argv[1]), [], [False]
def event(what):  # one of the moments after the first whole checkpoint: SIGKILL at the kill_at-th of them
    if armed[0]:
        seen.append(what)
        if len(seen) == kill_at:
            print("SIGKILL before", what, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
real_forward, real_save, real_rename = BertForPreTraining.forward, torch.save, pathlib.Path.rename
def forward(self, *args, **kwargs):
    event("a training forward pass" if self.training else "an evaluation forward pass")
    return real_forward(self, *args, **kwargs)
def save(obj, path, *args, **kwargs):
    event("the trainer state's write")
    return real_save(obj, path, *args, **kwargs)
def rename(self, target):
    event("the rename to " + pathlib.Path(target).name)
    moved = real_rename(self, target)
    armed[0] = armed[0] or pathlib.Path(target).name == "checkpoint"
    return moved
BertForPreTraining.forward, torch.save, pathlib.Path.rename = forward, save, rename
register_optimizer_step_pre_hook(lambda *_: event("an optimizer step"))
code = pretrain.main(sys.argv[2:])
print("the run ended after", len(seen), "moments", flush=True)
sys.exit(code)
"""
# After the step-3 checkpoint, the 10 steps of cli_args(out, 10) have: 7 training forward passes and 7 optimizer
# steps (steps 4..10), 2 evaluations of 2 batches (steps 5 and 10), 3 checkpoints (6, 9, 10) of one trainer-state
# write and two renames each.
MOMENTS_AFTER_FIRST_CHECKPOINT = 7 + 7 + 2 * 2 + 3 * 3


def test_sigkill_at_a_random_moment_resumes_from_the_last_checkpoint(resumed, tmp_path):
    """SIGKILL at a random moment of a command-line run: whatever it interrupted (a forward pass, an evaluation, an
    optimizer step, a checkpoint write, either rename), the run resumes from a whole checkpoint and ends with the
    straight run's weights. The moment is drawn as a count of the run's own events, not as a delay: a timer would
    race the run (on an idle machine the 10 steps end before it fires, and nothing is tested)."""
    cfg = resumed["cfg"]
    out = tmp_path / "run"
    out.mkdir()
    shutil.copy(Path(cfg.out_dir) / "vocab.txt", out / "vocab.txt")
    kill_at = random.Random().randint(1, MOMENTS_AFTER_FIRST_CHECKPOINT)
    killed = subprocess.run([sys.executable, "-c", RANDOM_KILL_SCRIPT, str(kill_at), *cli_args(out, 10)],
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, f"moment {kill_at}: {killed.stdout[-2000:]}{killed.stderr[-2000:]}"
    found = latest_checkpoint(out)
    assert found is not None, "the run was killed after its first checkpoint: one must be on disk"
    step = load_trainer_state(found)["step"]
    print(f"\nmoment {kill_at} of {MOMENTS_AFTER_FIRST_CHECKPOINT}: {killed.stdout.splitlines()[-1]}; resuming from "
          f"{found.name} at step {step}")
    assert step in (3, 6, 9, 10)
    BertForPreTraining.from_pretrained(found)
    again = subprocess.run([sys.executable, "-m", "minibert.pretrain", *cli_args(out, 10)], capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert_same_weights(Path(cfg.out_dir) / "checkpoint", out / "checkpoint", f"SIGKILL at moment {kill_at}")


def test_epoch_sampler_draws_one_order_per_epoch():
    """Each epoch visits every pair once, in a new order drawn once for the whole epoch (not at every step), and the
    order is a function of (seed, step): a second sampler (a resumed run) gives the same batches."""
    sampler = EpochSampler(40, 8, seed=3)
    seen_by_epoch = []
    for epoch in range(3):
        ids = [i for step in range(epoch * 5, epoch * 5 + 5) for i in sampler.indices(step)]
        assert sorted(ids) == list(range(40)), f"epoch {epoch} does not visit every instance exactly once"
        seen_by_epoch.append(ids)
    assert sampler.permutations == 3, f"15 steps over 3 epochs drew {sampler.permutations} orders, expected 3"
    assert seen_by_epoch[0] != seen_by_epoch[1] != seen_by_epoch[2], "each epoch should use a new order"
    fresh = EpochSampler(40, 8, seed=3)
    assert fresh.indices(7) == sampler.indices(7) and fresh.permutations == 1
    assert EpochSampler(40, 8, seed=3).indices(0) != EpochSampler(40, 8, seed=4).indices(0)
    # 43 instances, batches of 8: 5 full batches per epoch, no instance twice, 3 left out (a different 3 each time)
    sampler = EpochSampler(43, 8, seed=3)
    left_out = []
    for epoch in range(2):
        ids = [i for step in range(epoch * 5, epoch * 5 + 5) for i in sampler.indices(step)]
        assert len(ids) == len(set(ids)) == 40
        left_out.append(set(range(43)) - set(ids))
    assert left_out[0] != left_out[1]


def test_training_draws_one_order_per_epoch(resumed, tmp_path, monkeypatch):
    """The loop shuffles once per epoch: 10 steps over a few hundred pairs (one epoch) draw one permutation."""
    drawn = []
    real_randperm = torch.randperm

    def randperm(n, *args, **kwargs):
        drawn.append(n)
        return real_randperm(n, *args, **kwargs)

    monkeypatch.setattr(pretrain.torch, "randperm", randperm)
    out = tmp_path / "run"
    out.mkdir()
    shutil.copy(Path(resumed["cfg"].out_dir) / "vocab.txt", out / "vocab.txt")
    result = train(tiny(out, max_steps=10, eval_every=10), progress=False)
    pairs = result["train_pairs"]
    assert pairs >= 10 * 8
    assert drawn.count(pairs) == 1, f"10 steps of one epoch shuffled the {pairs} pairs {drawn.count(pairs)} times"


def test_interrupted_swap_resumes_from_checkpoint_old(trained, tmp_path):
    cfg, result = trained
    out = tmp_path / "run"
    shutil.copytree(cfg.out_dir, out)
    (out / "checkpoint").rename(out / "checkpoint-old")  # killed between the two renames of save_checkpoint
    (out / "checkpoint-new").mkdir()  # and a half-written new folder (no trainer_state.pt) left behind
    (out / "checkpoint-new" / "config.json").write_text("{}", encoding="utf-8")
    assert latest_checkpoint(out) == out / "checkpoint-old"
    assert latest_checkpoint(tmp_path / "nothing-here") is None
    more = train(tiny(out, max_steps=TRAIN_STEPS + 2), progress=False)
    assert more["step"] == TRAIN_STEPS + 2
    assert more["history"][:-1] == result["history"], "the run did not continue from checkpoint-old's history"
    assert more["history"][-1]["step"] == TRAIN_STEPS + 2
    assert latest_checkpoint(out) == out / "checkpoint"
    assert not (out / "checkpoint-old").exists() and not (out / "checkpoint-new").exists()


def test_complete_checkpoint_wins_over_old(tmp_path):
    for name in ("checkpoint", "checkpoint-old"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "trainer_state.pt").write_bytes(b"")
    assert latest_checkpoint(tmp_path) == tmp_path / "checkpoint"


# 3. Command line --------------------------------------------------------------------------------------------


def test_cli_trains_and_reports(tmp_path):
    out = tmp_path / "cli"
    cmd = [sys.executable, "-m", "minibert.pretrain", "--out", str(out), "--steps", "6", "--limit-documents", "12",
           "--vocab-size", "800", "--seq-len", "32", "--batch-size", "8", "--eval-every", "3", "--no-progress"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line for line in proc.stdout.splitlines() if "masked-token accuracy" in line]
    assert lines, proc.stdout
    assert lines[-1].startswith("step 6 "), lines[-1]
    assert (out / "checkpoint" / "model.safetensors").exists()
    state = load_trainer_state(out / "checkpoint")
    assert [h["step"] for h in state["history"]] == [3, 6]


def test_two_fresh_runs_with_the_same_seed_give_the_same_weights(tmp_path):
    """Each run trains its own vocabulary in its own process (tokenizers numbers equal-frequency pieces in hash order,
    tokenizers#1794: this differed by up to 0.087 per weight before `in_stable_order`)."""
    for name in ("a", "b"):
        proc = subprocess.run([sys.executable, "-m", "minibert.pretrain", *cli_args(tmp_path / name, 6)],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "a" / "vocab.txt").read_bytes() == (tmp_path / "b" / "vocab.txt").read_bytes()
    assert_same_weights(tmp_path / "a" / "checkpoint", tmp_path / "b" / "checkpoint", "two fresh runs, same seed")


def test_cli_without_a_limit_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        pretrain.main(["--out", str(tmp_path / "never"), "--limit-documents", "12"])
    assert exc.value.code not in (0, None)
    err = capsys.readouterr().err
    assert "usage:" in err and "--minutes" in err and "--steps" in err
    assert not (tmp_path / "never").exists(), "nothing should be written before the arguments are checked"


# 4. fill_mask -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained_model(trained):
    folder = Path(trained[1]["checkpoint"])
    return BertForPreTraining.from_pretrained(folder), BertTokenizer(folder / "vocab.txt")


def test_fill_mask_returns_ranked_pieces(trained_model):
    model, tokenizer = trained_model
    text = "The city is the [MASK] of the country, and the river [MASK] through it."
    result = fill_mask(model, tokenizer, text, top_k=7)
    assert len(result) == 2
    enc = tokenizer(text)
    positions = [i for i, t in enumerate(enc.tokens) if t == "[MASK]"]
    with torch.no_grad():
        probs = model(torch.tensor([enc.input_ids])).prediction_logits[0, positions].softmax(-1)
    for row, p in zip(result, probs, strict=True):
        assert len(row) == 7
        pieces = [piece for piece, _ in row]
        values = [prob for _, prob in row]
        assert all(isinstance(piece, str) and piece in tokenizer.vocab for piece in pieces)
        assert len(set(pieces)) == 7
        assert values == sorted(values, reverse=True)
        assert all(0.0 < v <= 1.0 for v in values) and sum(values) <= 1.0 + 1e-6
        assert values[0] == pytest.approx(p.max().item(), abs=1e-6)
        assert tokenizer.vocab[pieces[0]] == int(p.argmax())
    assert len(fill_mask(model, tokenizer, "a [MASK] b", top_k=3)[0]) == 3


def test_fill_mask_without_mask_raises(trained_model):
    model, tokenizer = trained_model
    with pytest.raises(ValueError, match=r"\[MASK\]"):
        fill_mask(model, tokenizer, "no mask in this sentence")


# 5. Bad data ------------------------------------------------------------------------------------------------


def test_empty_corpus_folder_is_named(tmp_path):
    corpus = tmp_path / "empty_corpus"
    corpus.mkdir()
    with pytest.raises((ValueError, FileNotFoundError)) as exc:
        train(tiny(tmp_path / "out", corpus=str(corpus), max_steps=2), progress=False)
    assert str(corpus) in str(exc.value)
    assert not (tmp_path / "out" / "checkpoint").exists()


def test_non_utf8_file_is_named(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(4):
        (corpus / f"doc{i}.txt").write_text("The river runs to the sea. It is long and wide.\n" * 5, encoding="utf-8")
    bad = corpus / "latin1.txt"
    bad.write_bytes("Caf\u00e9 au lait. Cr\u00e8me br\u00fbl\u00e9e for all.\n".encode("latin-1"))
    with pytest.raises(ValueError, match="UTF-8") as exc:
        train(tiny(tmp_path / "out", corpus=str(corpus), max_steps=2), progress=False)
    assert str(bad) in str(exc.value)


def test_too_few_documents_is_explained(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(3):
        (corpus / f"doc{i}.txt").write_text("The river runs to the sea. It is long and wide.\n", encoding="utf-8")
    with pytest.raises(ValueError, match="at least 4"):
        train(tiny(tmp_path / "out", corpus=str(corpus), max_steps=2), progress=False)


# 6. The schedule fits the run -------------------------------------------------------------------------------


def test_schedule_warms_up_then_decays_to_zero_at_the_end():
    s = Schedule.new(100, None)
    assert s.warmup == 10, "the default warm-up is 10% of the run"
    factors = [s.factor(t) for t in range(100)]
    assert factors[:10] == pytest.approx([(t + 1) / 10 for t in range(10)])
    assert factors[10] == 1.0 and s.factor(100) == 0.0
    assert factors[10:] == sorted(factors[10:], reverse=True)
    assert factors[99] == pytest.approx(1 / 90)
    for warmup in (0, 100, 150):
        with pytest.raises(ValueError, match="warm-up"):
            Schedule.new(100, warmup)


@pytest.mark.parametrize("new_total", [160, 60, 105])
def test_refitted_schedule_continues_from_the_rate_it_reached(new_total):
    """A run of 100 steps, stopped after 50 (or finished at 100) and continued to another length: the rate goes on
    from the last one used and falls linearly to 0 at the new end. It never jumps back up."""
    for taken in (50, 100):
        if new_total <= taken:
            continue
        old = Schedule.new(100, 10)
        new = old.refit(taken, new_total)
        last = old.factor(taken - 1)
        after = [new.factor(t) for t in range(taken, new_total)]
        assert after[0] <= last + 1e-12, f"the rate jumped from {last:.4f} to {after[0]:.4f} at step {taken}"
        assert after == sorted(after, reverse=True) and after[-1] > 0.0 and new.factor(new_total) == 0.0
        steps = [last, *after, 0.0]
        gaps = [a - b for a, b in zip(steps, steps[1:], strict=False)]
        assert max(gaps) - min(gaps) < 1e-9, "the decay after refitting should be linear"


def test_refit_during_warm_up_keeps_the_warm_up():
    new = Schedule.new(100, 10).refit(4, 300)
    assert [new.factor(t) for t in range(10)] == pytest.approx([(t + 1) / 10 for t in range(10)])
    assert new.factor(10) == 1.0 and new.factor(300) == 0.0 and new.factor(155) == pytest.approx(0.5)


def test_extending_a_finished_run_never_raises_the_learning_rate(resumed, tmp_path):
    """A 10-step run continued to 16 steps: the 6 new steps decay on from the last rate of the first run. Before,
    the schedule was rebuilt for 16 steps from step 0 and the rate went back up at step 10."""
    cfg = resumed["cfg"]
    out = tmp_path / "run"
    shutil.copytree(Path(cfg.out_dir), out)
    more = recorded_run(tiny(out, max_steps=16, checkpoint_every=3))
    first = [lrs[0] for lrs in resumed["a"]["lrs"]]
    extra = [lrs[0] for lrs in more["lrs"]]
    assert len(extra) == 6 and more["result"]["step"] == 16
    assert extra[0] <= first[-1], f"the rate jumped back up: {first[-1]:.3g} at step 9, {extra[0]:.3g} at step 10"
    assert extra == sorted(extra, reverse=True) and extra[-1] > 0
    assert more["result"]["schedule"]["total"] == 16 and more["result"]["final_lr"] == pytest.approx(extra[-1])


class FakeClock:
    """time.perf_counter for pretrain: each optimizer step (train_step) takes exactly `step_seconds`."""

    def __init__(self, step_seconds: float):
        self.now, self.step_seconds, self.calls = 1000.0, step_seconds, []

    def run_lrs(self) -> list[float]:
        """The rates of the run's own model (the speed probe trains a copy first)."""
        run = max({m for m, _ in self.calls}, key=lambda m: sum(x == m for x, _ in self.calls))
        return [lr for m, lr in self.calls if m == run]

    def install(self, mp: pytest.MonkeyPatch) -> None:
        real_step = pretrain.train_step

        def train_step(model, optimizer, batch, lr, max_grad_norm, **forward):
            self.now += self.step_seconds
            self.calls.append((id(model), lr))
            return real_step(model, optimizer, batch, lr, max_grad_norm, **forward)

        mp.setattr(pretrain, "train_step", train_step)
        mp.setattr(pretrain.time, "perf_counter", lambda: self.now)


def test_time_limited_run_decays_to_zero_when_the_time_is_up(resumed, tmp_path, capsys):
    """--minutes: the number of steps comes from the measured step time, so the rate is close to 0 when the time
    runs out; the printout says what was measured and used. Before, the schedule was spread over 100,000 steps and
    a time-limited run ended at ~99% of the peak rate."""
    out = tmp_path / "run"
    out.mkdir()
    shutil.copy(Path(resumed["cfg"].out_dir) / "vocab.txt", out / "vocab.txt")
    clock = FakeClock(0.1)
    with pytest.MonkeyPatch.context() as mp:
        clock.install(mp)
        result = train(tiny(out, max_minutes=0.05, warmup_steps=None, eval_every=10), progress=False)  # 3 s
    printed = capsys.readouterr().out
    lrs = clock.run_lrs()
    assert result["step"] == len(lrs) == 30, f"3 s at 0.1 s/step: expected 30 steps, got {result['step']}"
    assert "0.100 s/step (measured)" in printed and "decay to 0 at step 30" in printed, printed
    assert result["schedule"]["warmup"] == 3
    peak = max(lrs)
    assert peak == pytest.approx(1e-3) and lrs[-1] / peak < 0.05, f"the run ended at {lrs[-1] / peak:.0%} of peak"
    assert lrs[3:] == sorted(lrs[3:], reverse=True)
    # the same run given 3 more seconds goes on from where it was, down to ~0 again
    clock = FakeClock(0.1)
    with pytest.MonkeyPatch.context() as mp:
        clock.install(mp)
        more = train(tiny(out, max_minutes=0.1, warmup_steps=None, eval_every=10), progress=False)
    extra = clock.run_lrs()
    assert more["step"] == 60 and len(extra) == 30, f"3 more seconds: expected 30 more steps, got {len(extra)}"
    assert extra[0] <= lrs[-1] and extra == sorted(extra, reverse=True) and extra[-1] / peak < 0.05


# 7. Optimizer, clipping and the command line ----------------------------------------------------------------


def test_weight_decay_skips_biases_and_layer_norms():
    model = BertForPreTraining(BertConfig.tiny(vocab_size=50, hidden_size=16, intermediate_size=32))
    optimizer = make_optimizer(model, 1e-3, weight_decay=0.05)
    group_of = {id(p): g["weight_decay"] for g in optimizer.param_groups for p in g["params"]}
    names = dict(model.named_parameters())
    assert len(group_of) == len(names), "every parameter (a tied one once) is in exactly one group"
    for name, param in names.items():
        want = 0.0 if name.endswith("bias") or "LayerNorm" in name else 0.05
        assert group_of[id(param)] == want, f"{name}: weight decay {group_of[id(param)]}, expected {want}"
    assert group_of[id(model.bert.embeddings.word_embeddings.weight)] == 0.05
    assert group_of[id(model.cls.predictions.bias)] == 0.0


def test_train_step_clips_the_gradient_norm(batch_for_clipping):
    model, batch = batch_for_clipping
    optimizer = make_optimizer(model, PretrainConfig().learning_rate)
    _, norm = train_step(model, optimizer, batch, lr=0.0, max_grad_norm=1e-3, targets_only=True)
    total = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model.parameters() if p.grad is not None]))
    assert norm > 1e-3, f"the gradient norm before clipping ({norm:.3g}) should exceed the limit in this test"
    assert float(total) == pytest.approx(1e-3, rel=1e-4), f"after clipping the norm is {float(total):.3g}, not 1e-3"
    _, norm = train_step(model, optimizer, batch, lr=0.0, max_grad_norm=None, targets_only=True)
    total = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model.parameters() if p.grad is not None]))
    assert float(total) == pytest.approx(norm, rel=1e-5), "max_grad_norm=None leaves the gradient as it is"


@pytest.fixture
def batch_for_clipping():
    torch.manual_seed(0)
    model = BertForPreTraining(BertConfig.tiny(vocab_size=50, hidden_size=16, intermediate_size=32))
    ids = torch.randint(5, 50, (2, 9))
    labels = torch.full_like(ids, -100)
    labels[:, 2] = ids[:, 2]
    return model, {"input_ids": ids, "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids),
                   "labels": labels, "next_sentence_label": torch.tensor([0, 1])}


def test_command_line_is_made_from_the_config_fields():
    parser = pretrain.build_parser()
    dests = {a.dest for a in parser._actions}
    missing = [f.name for f in dataclasses.fields(PretrainConfig)
               if f.name not in dests and not any(d.startswith(f.name + ".") for d in dests)]
    assert not missing, f"PretrainConfig fields without a flag: {missing}"
    args = vars(parser.parse_args(["--lr", "5e-4", "--warmup", "7", "--batch-size", "4", "--hidden-size", "48",
                                   "--num-hidden-layers", "3", "--num-attention-heads", "4", "--steps", "20",
                                   "--whole-word-mask", "--max-grad-norm", "0.5", "--seq-len", "64"]))
    args.pop("no_progress")
    cfg = config_from_args(PretrainConfig, args)
    assert isinstance(cfg.model, BertConfig) and cfg.model.hidden_size == 48
    assert (cfg.learning_rate, cfg.warmup_steps, cfg.batch_size, cfg.max_steps, cfg.max_grad_norm) == (
        5e-4, 7, 4, 20, 0.5)
    model_config = cfg.model_config(100)
    assert (model_config.hidden_size, model_config.num_hidden_layers, model_config.num_attention_heads) == (48, 3, 4)
    assert model_config.max_position_embeddings == 64 and cfg.whole_word_mask is True
    help_text = parser.format_help()
    for flag in ("--lr", "--warmup", "--batch-size", "--hidden-size", "--minutes", "--steps", "--whole-word-mask"):
        assert flag in help_text


def test_cli_flags_reach_the_model_and_the_optimizer(resumed, tmp_path):
    out = tmp_path / "cli"
    out.mkdir()
    shutil.copy(Path(resumed["cfg"].out_dir) / "vocab.txt", out / "vocab.txt")
    assert pretrain.main(["--out", str(out), "--steps", "4", "--limit-documents", "12", "--seq-len", "32",
                          "--batch-size", "4", "--lr", "3e-4", "--warmup", "2", "--hidden-size", "24",
                          "--num-attention-heads", "3", "--intermediate-size", "40", "--num-hidden-layers", "1",
                          "--whole-word-mask", "--eval-every", "4", "--no-progress"]) == 0
    config = BertConfig.from_json_file(out / "checkpoint" / "config.json")
    assert (config.hidden_size, config.num_attention_heads, config.intermediate_size, config.num_hidden_layers) == (
        24, 3, 40, 1)
    state = load_trainer_state(out / "checkpoint")
    assert state["schedule"]["warmup"] == 2 and state["schedule"]["total"] == 4
    assert state["optimizer"]["param_groups"][0]["lr"] == pytest.approx(3e-4 / 2), "step 3 of 4: half the peak"


# 8. Whole-word masking in pretraining, evaluate and fill_mask keep the mode ---------------------------------


@pytest.fixture(scope="module")
def wiki_pairs(resumed):
    tokenizer = BertTokenizer(Path(resumed["cfg"].out_dir) / "vocab.txt")
    _, pairs, _ = pretrain.prepare(resumed["cfg"], Path(resumed["cfg"].out_dir))
    return tokenizer, pairs


def test_collator_whole_word_mask_masks_words_together(wiki_pairs):
    tokenizer, pairs = wiki_pairs
    collate = PretrainingCollator(tokenizer, generator=torch.Generator().manual_seed(0), whole_word_mask=True)
    words = targets = partial = 0
    for start in range(0, 160, 16):
        chunk = pairs[start:start + 16]
        batch = collate(chunk)
        plain = pad_and_stack(chunk, *(tokenizer.vocab[t] for t in ("[CLS]", "[SEP]", "[PAD]")))
        for row in range(len(chunk)):
            n = int(plain["attention_mask"][row].sum())
            tokens = tokenizer.convert_ids_to_tokens(plain["input_ids"][row, :n].tolist())
            ids_version = word_ids_from_ids(plain["input_ids"][row:row + 1, :n], continuation_table(tokenizer),
                                            plain["special_tokens_mask"][row:row + 1, :n])[0].tolist()
            by_word: dict[int, list[bool]] = {}
            for position, word in enumerate(ids_version):
                if word >= 0:
                    by_word.setdefault(word, []).append(bool(batch["labels"][row, position] != -100))
            for position, (token, word) in enumerate(zip(tokens, ids_version, strict=True)):
                starts_word = word >= 0 and (position == 0 or ids_version[position - 1] != word)
                assert starts_word == (word >= 0 and (not token.startswith("##") or tokens[position - 1] in (
                    "[CLS]", "[SEP]"))), f"row {row}, piece {position} {token!r}: wrong word start"
            words += len(by_word)
            targets += sum(all(flags) for flags in by_word.values())
            partial += sum(any(flags) and not all(flags) for flags in by_word.values())
    assert partial == 0, f"{partial} words were only partly chosen as targets"
    assert 0.10 < targets / words < 0.20, f"{targets / words:.3f} of the words were targets, expected ~0.15"


def test_word_ids_from_ids_equals_the_token_version_inside_segments():
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "un", "##happ", "##iness", "cat", "##s"]
    tok = BertTokenizer(vocab)
    tokens = ["[CLS]", "the", "un", "##happ", "##iness", "cat", "##s", "[SEP]", "cat", "##s", "[SEP]", "[PAD]"]
    ids = torch.tensor([tok.convert_tokens_to_ids(tokens)])
    special = torch.tensor([[t in ("[CLS]", "[SEP]", "[PAD]") for t in tokens]])
    got = word_ids_from_ids(ids, continuation_table(tok), special)[0].tolist()
    assert got == [-1, 0, 1, 1, 1, 2, 2, -1, 3, 3, -1, -1]
    assert got[:7] == word_ids_from_tokens(tokens)[:7]


def test_evaluate_and_fill_mask_leave_the_mode_as_it_was(trained_model, resumed):
    model, tokenizer = trained_model
    cfg = resumed["cfg"]
    _, _, eval_set = pretrain.prepare(cfg, Path(cfg.out_dir))
    batches = [PretrainingCollator(tokenizer, generator=torch.Generator().manual_seed(0))(eval_set[:4])]
    for mode in (True, False):
        model.train(mode)
        pretrain.evaluate(model, batches)
        assert model.training is mode, f"evaluate() left a model that was training={mode} in training={model.training}"
        fill_mask(model, tokenizer, "the [MASK] of it")
        assert model.training is mode, f"fill_mask() changed training={mode} to {model.training}"
    model.eval()


def test_fill_mask_works_with_a_masked_lm(trained_model):
    """BertForMaskedLM's output has `logits`, not `prediction_logits`: fill_mask reads either."""
    pretraining, tokenizer = trained_model
    mlm = BertForMaskedLM(pretraining.config)
    mlm.load_state_dict({k: v for k, v in pretraining.state_dict().items() if k in mlm.state_dict()})
    text = "the [MASK] of the country"
    got = fill_mask(mlm, tokenizer, text, top_k=4)
    want = fill_mask(pretraining, tokenizer, text, top_k=4)
    assert [p for p, _ in got[0]] == [p for p, _ in want[0]]
    assert [v for _, v in got[0]] == pytest.approx([v for _, v in want[0]], abs=1e-6)


def test_trainer_state_from_two_checkpoints_is_refused_and_an_old_checkpoint_still_loads(trained, tmp_path):
    """The two files of the trainer state belong together (the .pt repeats the step): a folder that mixes two
    checkpoints is refused with the reason, not resumed with one step's moments and another step's history. A
    checkpoint of an earlier minibert (every field in trainer_state.pt) loads as before, without unpickling."""
    cfg, result = trained
    folder = tmp_path / "checkpoint"
    shutil.copytree(result["checkpoint"], folder)
    state = load_trainer_state(folder)
    model = BertForPreTraining.from_pretrained(folder)
    optimizer = make_optimizer(model, cfg.learning_rate, cfg.weight_decay)
    optimizer.load_state_dict(state["optimizer"])
    later = tmp_path / "later"
    save_checkpoint(later, model, optimizer, BertTokenizer(folder / "vocab.txt"),
                    {**{k: v for k, v in state.items() if k != "optimizer"}, "step": state["step"] + 1})
    shutil.copy(later / "trainer_state.pt", folder / "trainer_state.pt")
    with pytest.raises(ValueError, match="two checkpoints"):
        load_trainer_state(folder)
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    torch.save({**state, "optimizer": optimizer.state_dict()}, legacy / "trainer_state.pt")
    old = load_trainer_state(legacy)
    assert old["step"] == state["step"] and old["history"] == state["history"] and old["schedule"] == state["schedule"]
