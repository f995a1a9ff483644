"""The pretraining loop of chapter 06 on a tiny model: it trains, checkpoints, resumes, fills masks, and reports
bad data clearly.

Runs use a tiny setting (12 Wikipedia articles, 800 pieces, 32 positions, batch 8, hidden 32) so that the module
stays well under a minute and a half on a laptop CPU. Expected values come from the configuration and from
reasoning about the schedule and the data, not from re-running minibert's own code.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

import minibert.pretrain as pretrain
from minibert import BertConfig, BertForPreTraining, BertTokenizer
from minibert.checkpoint import load_state_dict
from minibert.data import NSPInstance
from minibert.pretrain import PretrainConfig, batches_for_step, fill_mask, latest_checkpoint, train

TINY = dict(limit_documents=12, vocab_size=800, max_seq_length=32, batch_size=8, warmup_steps=5, eval_every=5,
            eval_batches=2, checkpoint_every=5, hidden_size=32, num_attention_heads=2, intermediate_size=64)
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
    assert {"config.json", "model.safetensors", "vocab.txt", "trainer_state.pt"} <= {p.name for p in
                                                                                     folder.iterdir()}
    assert not (out / "checkpoint-new").exists() and not (out / "checkpoint-old").exists()
    assert (out / "pretrain_config.json").exists()
    assert (folder / "vocab.txt").read_text(encoding="utf-8") == (out / "vocab.txt").read_text(encoding="utf-8")
    model = BertForPreTraining.from_pretrained(folder)
    tokenizer = BertTokenizer(folder / "vocab.txt")
    assert model.config.vocab_size == len(tokenizer) <= cfg.vocab_size
    assert (model.config.hidden_size, model.config.intermediate_size, model.config.max_position_embeddings) == (
        32, 64, 32)
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    state = torch.load(folder / "trainer_state.pt", weights_only=False)
    assert state["step"] == TRAIN_STEPS and state["history"] == result["history"]
    assert {"optimizer", "scheduler", "elapsed"} <= set(state)
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
    original = BertConfig.tiny

    def tiny_without_dropout(**overrides):
        return original(**{**overrides, "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0})

    mp.setattr(BertConfig, "tiny", staticmethod(tiny_without_dropout))


def recorded_run(cfg: PretrainConfig, interrupt_at: int | None = None, ctrl_c_at: int | None = None) -> dict:
    """Run train(cfg) and record, for every optimizer step, the training batch and the learning rate used.
    With `interrupt_at`, the run stops (an exception) right after writing the checkpoint of that step; with
    `ctrl_c_at`, a KeyboardInterrupt arrives during the forward pass of that step (0-based)."""
    log = {"batches": [], "lrs": [], "result": None, "ctrl_c": False}
    real_forward, real_save = BertForPreTraining.forward, pretrain.save_checkpoint

    def forward(self, *args, **kwargs):
        if self.training and len(log["batches"]) == ctrl_c_at:
            raise KeyboardInterrupt
        if self.training:
            log["batches"].append({k: kwargs[k].clone() for k in ("input_ids", "labels", "next_sentence_label")})
        return real_forward(self, *args, **kwargs)

    def save_checkpoint(folder, model, optimizer, scheduler, vocab, state):
        real_save(folder, model, optimizer, scheduler, vocab, state)
        if state["step"] == interrupt_at:
            raise Interrupted

    hook = register_optimizer_step_pre_hook(lambda opt, args, kwargs: log["lrs"].append(
        [g["lr"] for g in opt.param_groups]))
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(BertForPreTraining, "forward", forward)
            mp.setattr(pretrain, "save_checkpoint", save_checkpoint)
            try:
                log["result"] = train(cfg, progress=False)
            except Interrupted:
                pass
            except KeyboardInterrupt:
                log["ctrl_c"] = True
    finally:
        hook.remove()
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
    assert torch.load(out / "checkpoint" / "trainer_state.pt", weights_only=False)["step"] == 10


def test_learning_rate_follows_the_schedule_straight_and_resumed(resumed):
    cfg = resumed["cfg"]
    expected = [scheduled_lr(cfg, s) for s in range(cfg.max_steps)]
    straight = [lrs[0] for lrs in resumed["a"]["lrs"]]
    assert straight == pytest.approx(expected, rel=1e-9)
    assert all(lrs[0] == lrs[1] for lrs in resumed["a"]["lrs"]), "both parameter groups share the schedule"
    with_resume = [lrs[0] for lrs in resumed["b1"]["lrs"] + resumed["b2"]["lrs"]]
    wrong = [f"step {s}: {got:.3g} instead of {want:.3g}" for s, (got, want) in enumerate(
        zip(with_resume, expected, strict=True)) if not math.isclose(got, want, rel_tol=1e-9)]
    assert not wrong, (
        "BUG: the first step after resuming uses the wrong learning rate (" + "; ".join(wrong) + "). train() builds "
        "a new LambdaLR after optimizer.load_state_dict(); the constructor sets every group's lr to "
        "base_lr * schedule(0), and scheduler.load_state_dict() restores last_epoch but not the groups' lr, so "
        "resumed step k runs at the step-0 warm-up rate until the next scheduler.step().")


def test_resume_without_dropout_is_bit_exact(resumed_without_dropout):
    """With dropout off (its random masks come from the global torch RNG, which the checkpoint does not store),
    every other input of a step is restored: the resumed run should end with exactly the straight run's weights."""
    runs = resumed_without_dropout
    a_batches = runs["a"]["batches"]
    b_batches = runs["b1"]["batches"] + runs["b2"]["batches"]
    assert all(torch.equal(x["input_ids"], y["input_ids"]) for x, y in zip(a_batches, b_batches, strict=True))
    a = load_state_dict(runs["root"] / "a" / "checkpoint")
    b = load_state_dict(runs["root"] / "b" / "checkpoint")
    assert set(a) == set(b)
    diffs = {k: (a[k] - b[k]).abs().max().item() for k in a}
    worst = max(diffs, key=diffs.get)
    print(f"\nresume without dropout: max |weight diff| {diffs[worst]:.3g} ({worst})")
    assert diffs[worst] == 0.0, (
        f"resumed weights differ from the straight run's by up to {diffs[worst]:.3g} ({worst}); see "
        "test_learning_rate_follows_the_schedule_straight_and_resumed for the cause")


def test_ctrl_c_saves_a_checkpoint_that_resumes(resumed, tmp_path, capsys):
    """Ctrl+C during step 6 keeps steps 0..5: a checkpoint at step 6, then the resumed run trains steps 6..9 on
    the straight run's batches."""
    cfg = resumed["cfg"]
    out = tmp_path / "c"
    out.mkdir()
    shutil.copy(Path(cfg.out_dir) / "vocab.txt", out / "vocab.txt")
    settings = dict(max_steps=10, checkpoint_every=3)
    first = recorded_run(tiny(out, **settings), ctrl_c_at=6)
    assert first["ctrl_c"], "KeyboardInterrupt should reach the caller after the checkpoint is saved"
    assert "interrupted at step 6" in capsys.readouterr().out
    state = torch.load(out / "checkpoint" / "trainer_state.pt", weights_only=False)
    assert state["step"] == 6 and [h["step"] for h in state["history"]] == [5]
    assert not (out / "checkpoint-new").exists() and not (out / "checkpoint-old").exists()
    second = recorded_run(tiny(out, **settings))
    assert second["result"]["step"] == 10 and len(second["batches"]) == 4
    for step, (x, y) in enumerate(zip(resumed["a"]["batches"][6:], second["batches"], strict=True), start=6):
        for key in x:
            assert torch.equal(x[key], y[key]), f"step {step}: {key} differs from the straight run"


def test_batches_for_step_visits_each_instance_once_per_epoch():
    instances = [NSPInstance([i], [i], 0) for i in range(40)]
    seen_by_epoch = []
    for epoch in range(3):
        ids = [inst.tokens_a[0] for step in range(epoch * 5, epoch * 5 + 5)
               for inst in batches_for_step(instances, step, 8, seed=3)]
        assert sorted(ids) == list(range(40)), f"epoch {epoch} does not visit every instance exactly once"
        seen_by_epoch.append(ids)
    assert seen_by_epoch[0] != seen_by_epoch[1] != seen_by_epoch[2], "each epoch should use a new order"
    assert batches_for_step(instances, 7, 8, seed=3) == batches_for_step(instances, 7, 8, seed=3)
    assert batches_for_step(instances, 0, 8, seed=3) != batches_for_step(instances, 0, 8, seed=4)
    # 43 instances, batches of 8: 5 full batches per epoch, no instance twice, 3 left out (a different 3 each time)
    instances = [NSPInstance([i], [i], 0) for i in range(43)]
    left_out = []
    for epoch in range(2):
        ids = [inst.tokens_a[0] for step in range(epoch * 5, epoch * 5 + 5)
               for inst in batches_for_step(instances, step, 8, seed=3)]
        assert len(ids) == len(set(ids)) == 40
        left_out.append(set(range(43)) - set(ids))
    assert left_out[0] != left_out[1]


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
    state = torch.load(out / "checkpoint" / "trainer_state.pt", weights_only=False)
    assert [h["step"] for h in state["history"]] == [3, 6]


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
    enc = tokenizer.encode(text)
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
