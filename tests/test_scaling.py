"""The pretraining loop at scale, checked on CPU (chapter 09): gradient accumulation, DDP over several processes
(gloo, started by the real `torchrun`), a DDP run killed with SIGKILL and resumed, and bf16 autocast.

Why the comparisons are what they are: k micro-batches, or N processes with a share of the batch each, must give
the update of the whole batch. L_MLM is a mean over the batch's targets, so a naive average of the pieces' means is a
different number whenever the pieces hold different numbers of targets: `test_naive_accumulation_would_differ`
shows that the setting below is one where it does. Dropout is off in the equivalence runs (each process has its own
dropout stream by design); fp32 sums in another order differ in the last bits, hence the 1e-6 tolerance.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from minibert.checkpoint import load_state_dict
from minibert.cli import config_from_args
from minibert.pretrain import PretrainConfig, load_trainer_state, train

SETTING = {"--limit-documents": 12, "--vocab-size": 800, "--seq-len": 32, "--batch-size": 8, "--warmup": 2,
           "--eval-every": 4, "--eval-batches": 1, "--checkpoint-every": 3, "--hidden-size": 32,
           "--num-attention-heads": 2, "--intermediate-size": 64, "--dropout": 0.0, "--attention-dropout": 0.0,
           "--device": "cpu"}


FLAGS = {"gradient_accumulation_steps": "--grad-accum", "max_position_embeddings": "--max-positions",
         "max_seq_length": "--seq-len"}


def flags(out: Path, steps: int, **extra) -> list[str]:
    given = {**SETTING, "--out": out, "--steps": steps, **{FLAGS.get(k, "--" + k.replace("_", "-")): v
                                                            for k, v in extra.items()}}
    switches = [flag for flag, v in given.items() if v is True]  # on/off flags take no value
    return [str(x) for flag, v in given.items() if v is not True for x in (flag, v)] + switches + ["--no-progress"]


def config(out: Path, steps: int, **extra) -> PretrainConfig:
    """The run that `python -m minibert.pretrain` would make of the same flags."""
    from minibert.pretrain import build_parser

    args = vars(build_parser().parse_args(flags(out, steps, **extra)))
    args.pop("no_progress")
    return config_from_args(PretrainConfig, args)


def weights(folder: Path) -> dict[str, torch.Tensor]:
    return load_state_dict(folder / "checkpoint")


def largest_difference(a: Path, b: Path) -> tuple[float, str]:
    wa, wb = weights(a), weights(b)
    assert set(wa) == set(wb)
    diffs = {k: (wa[k] - wb[k]).abs().max().item() for k in wa}
    worst = max(diffs, key=diffs.get)
    return diffs[worst], worst


def torchrun(nproc: int, args: list[str], script: str | None = None, **popen) -> subprocess.CompletedProcess:
    """The real torchrun (torch.distributed.run), gloo between CPU processes on this machine."""
    target = [script] if script else ["-m", "minibert.pretrain"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}", *target, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, **popen)


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    """The reference: one process, the whole batch of 8 in one piece, 8 steps."""
    root = tmp_path_factory.mktemp("one")
    proc = subprocess.run([sys.executable, "-m", "minibert.pretrain", *flags(root / "run", 8)],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root / "run"


def test_gradient_accumulation_equals_one_batch_k_times_larger(one_process, tmp_path):
    out = tmp_path / "accumulated"
    out.mkdir()
    (out / "vocab.txt").write_bytes((one_process / "vocab.txt").read_bytes())
    result = train(config(out, 8, gradient_accumulation_steps=4), progress=False)  # 4 micro-batches of 2
    assert result["step"] == 8
    diff, where = largest_difference(one_process, out)
    assert diff < 1e-6, f"4 micro-batches of 2 vs 1 batch of 8: weights differ by {diff:.3g} ({where})"
    reference = load_trainer_state(one_process / "checkpoint")["history"]
    for ours, theirs in zip(result["history"], reference, strict=True):
        assert ours["train_loss"] == pytest.approx(theirs["train_loss"], abs=1e-5), "the reported loss is the batch's"


def test_naive_accumulation_would_differ(one_process, tmp_path, monkeypatch):
    """The same run with each micro-batch's mean weighted 1/k (what `loss / k` gives) moves the weights elsewhere:
    the equivalence above is not one that any accumulation would pass."""
    import minibert.training as training  # where train_step looks the counts up

    monkeypatch.setattr(training, "loss_counts", lambda batch: [1, 1] if "next_sentence_label" in batch else [1])
    out = tmp_path / "naive"
    out.mkdir()
    (out / "vocab.txt").write_bytes((one_process / "vocab.txt").read_bytes())
    train(config(out, 8, gradient_accumulation_steps=4), progress=False)
    diff, where = largest_difference(one_process, out)
    assert diff > 1e-4, f"naive accumulation should differ, but only by {diff:.3g}"


def test_too_many_micro_batches_is_explained(tmp_path):
    with pytest.raises(ValueError, match="cannot be split into 1 processes x 16 micro-batches"):
        train(config(tmp_path / "run", 4, gradient_accumulation_steps=16), progress=False)


@pytest.fixture(scope="module")
def two_processes(one_process, tmp_path_factory):
    """The same 8 steps in 2 processes (torchrun, gloo): 4 rows each, the gradients averaged by DDP."""
    out = tmp_path_factory.mktemp("two") / "run"
    out.mkdir()
    (out / "vocab.txt").write_bytes((one_process / "vocab.txt").read_bytes())
    proc = torchrun(2, flags(out, 8))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "2 processes" in proc.stdout, proc.stdout
    return out


def test_two_ddp_processes_equal_one_process_on_the_same_global_batch(one_process, two_processes):
    diff, where = largest_difference(one_process, two_processes)
    assert diff < 1e-6, f"2 processes x 4 rows vs 1 process x 8 rows: weights differ by {diff:.3g} ({where})"
    state = load_trainer_state(two_processes / "checkpoint")
    assert len(state["rng_per_rank"]) == 2, "each process's random state is saved"
    reference = load_trainer_state(one_process / "checkpoint")["history"]
    assert [h["step"] for h in state["history"]] == [h["step"] for h in reference]
    for ours, theirs in zip(state["history"], reference, strict=True):
        assert ours["train_loss"] == pytest.approx(theirs["train_loss"], abs=1e-5)
        assert ours["loss"] == pytest.approx(theirs["loss"], abs=1e-5)


KILL_AFTER_CHECKPOINT = """
import os, signal, sys
from pathlib import Path
from minibert import pretrain
pids = Path(sys.argv[sys.argv.index("--out") + 1]) / "pids"
pids.mkdir(exist_ok=True)
(pids / os.environ["RANK"]).write_text(str(os.getpid()))
real_save = pretrain.save_checkpoint
def save(folder, model, optimizer, tokenizer, state):
    real_save(folder, model, optimizer, tokenizer, state)
    if state["step"] == 3:  # a whole checkpoint of step 3 is on disk: now the whole job dies at once
        os.kill(os.getppid(), signal.SIGKILL)  # torchrun itself
        for pid in sorted((int(f.read_text()) for f in pids.iterdir()), key=lambda p: p == os.getpid()):
            os.kill(pid, signal.SIGKILL)  # every process, this one last
pretrain.save_checkpoint = save
sys.exit(pretrain.main(sys.argv[1:]))
"""


def test_ddp_run_killed_with_sigkill_resumes_and_continues_the_same_curve(two_processes, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "vocab.txt").write_bytes((two_processes / "vocab.txt").read_bytes())
    script = tmp_path / "kill.py"
    script.write_text(KILL_AFTER_CHECKPOINT, encoding="utf-8")
    killed = torchrun(2, flags(out, 8), script=str(script))
    assert killed.returncode == -signal.SIGKILL, killed.stdout[-2000:] + killed.stderr[-2000:]
    state = load_trainer_state(out / "checkpoint")
    assert state["step"] == 3
    resumed = torchrun(2, flags(out, 8))
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-3000:]
    assert "starting at step 3" in resumed.stdout, resumed.stdout
    diff, where = largest_difference(two_processes, out)
    assert diff == 0.0, f"killed at step 3 and resumed vs straight: weights differ by {diff:.3g} ({where})"
    straight = load_trainer_state(two_processes / "checkpoint")["history"]
    again = load_trainer_state(out / "checkpoint")["history"]
    def curve(history):
        return [{k: v for k, v in h.items() if k != "seconds"} for h in history]  # all but the wall clock

    assert curve(again) == curve(straight), "the resumed run's loss curve is the straight run's"


def test_bf16_autocast_trains_with_fp32_weights(one_process, tmp_path):
    out = tmp_path / "bf16"
    out.mkdir()
    (out / "vocab.txt").write_bytes((one_process / "vocab.txt").read_bytes())
    result = train(config(out, 8, precision="bf16"), progress=False)
    assert {v.dtype for v in weights(out).values()} == {torch.float32}, "master weights stay fp32"
    reference = load_trainer_state(one_process / "checkpoint")["history"]
    first = result["history"][0]["train_loss"], reference[0]["train_loss"]
    assert first[0] == pytest.approx(first[1], rel=0.02), f"bf16 vs fp32 loss after 4 steps: {first}"
    assert first[0] != first[1], "bf16 autocast changed nothing: was it applied?"


def test_unknown_precision_and_missing_gpu_are_explained(tmp_path):
    with pytest.raises(ValueError, match="give 'fp32' or 'bf16'"):
        train(config(tmp_path / "a", 4, precision="fp16"), progress=False)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="sees no GPU"):
            train(config(tmp_path / "b", 4, device="cuda"), progress=False)


def fast_and_plain(device: str, precision: str):
    """The loss and gradients of one batch by the fast path (fused attention, MLM logits at the targets only,
    `precision`) and by the plain path (attention written out, logits at every position, fp32): the same model."""
    from minibert import BertConfig, BertForPreTraining
    from minibert.bench import pretraining_batch
    from minibert.pretrain import autocast

    torch.manual_seed(0)
    config = BertConfig.tiny(vocab_size=1000, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = BertForPreTraining(config).to(device).train()
    batch = {k: v.to(device) for k, v in pretraining_batch(16, 48, 1000, torch.Generator().manual_seed(0)).items()}
    results = []
    for fast in (True, False):
        model.zero_grad(set_to_none=True)
        with autocast(torch.device(device), precision if fast else "fp32"):
            out = model(**batch, targets_only=fast, output_attentions=not fast)
        out.loss.backward()
        results.append((out.loss.item(), {n: p.grad.float().clone() for n, p in model.named_parameters()}))
    return results


def test_fast_path_gives_the_plain_paths_loss_and_gradients_on_cpu():
    """fp32 on CPU: the same numbers up to the order of the sums inside the kernels (SDPA's and the written-out
    attention add up in another order: about one unit in the last place of the loss, not bit for bit)."""
    (fast, fast_grads), (plain, plain_grads) = fast_and_plain("cpu", "fp32")
    assert fast == pytest.approx(plain, rel=1e-6), f"fast path loss {fast} vs plain {plain}"
    worst = max((fast_grads[n] - plain_grads[n]).abs().max().item() for n in plain_grads)
    assert worst < 1e-5, f"gradients differ by up to {worst:.3g}"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (bf16 autocast on tensor cores); its CPU "
                    "twin is test_fast_path_gives_the_plain_paths_loss_and_gradients_on_cpu")
def test_fast_path_in_bf16_on_cuda_stays_within_bf16_tolerance():
    """bf16 keeps 8 bits of mantissa (relative steps of 2^-8 = 0.4%): the loss agrees within 1%, gradients within
    5% of their largest entry."""
    (fast, fast_grads), (plain, plain_grads) = fast_and_plain("cuda", "bf16")
    assert fast == pytest.approx(plain, rel=1e-2), f"bf16 fast path loss {fast} vs fp32 plain {plain}"
    for name, grad in plain_grads.items():
        scale = grad.abs().max().item() or 1.0
        assert (fast_grads[name] - grad).abs().max().item() <= 0.05 * scale, name


def test_a_second_phase_resumes_at_a_longer_length(one_process, tmp_path):
    """BERT's recipe: 90% of the steps at 128 positions, then 512. Here 32 then 64: a run started with
    --max-positions 64 --seq-len 32 resumes from its checkpoint with --seq-len 64; a run whose model has fewer
    positions than the new length is refused with the flag to give."""
    out = tmp_path / "phases"
    out.mkdir()
    (out / "vocab.txt").write_bytes((one_process / "vocab.txt").read_bytes())
    first = train(config(out, 6, max_position_embeddings=64), progress=False)
    assert first["step"] == 6
    second = train(config(out, 10, max_seq_length=64), progress=False)
    assert second["step"] == 10 and second["history"][0]["step"] <= 6
    state = load_trainer_state(out / "checkpoint")
    history = state["history"]
    pairs = zip(history[:-1], history[1:], strict=True)
    per_step = [(b["tokens"] - a["tokens"]) / (b["step"] - a["step"]) for a, b in pairs]
    assert per_step[-1] > 8 * 32, f"the second phase's batches are longer than 32 positions: {per_step}"
    with pytest.raises(ValueError, match="--max-positions"):
        train(config(tmp_path / "short", 4, max_seq_length=64, max_position_embeddings=32), progress=False)


def test_compiled_loop_trains_like_the_eager_loop(one_process, tmp_path, monkeypatch):
    """--compile: the steps run through torch.compile (inductor, here on CPU), the checkpoint holds the model's own
    keys (not the compiled wrapper's `_orig_mod.`), and the weights follow the eager run's to float rounding."""
    compiled, real_compile = [], torch.compile

    def spy(model, *args, **kwargs):
        compiled.append(type(model).__name__)
        return real_compile(model, *args, **kwargs)

    monkeypatch.setattr(torch, "compile", spy)
    out = tmp_path / "compiled"
    out.mkdir()
    (out / "vocab.txt").write_bytes((one_process / "vocab.txt").read_bytes())
    result = train(config(out, 8, compile=True), progress=False)
    assert result["step"] == 8 and compiled == ["BertForPreTraining"], compiled
    assert not [k for k in weights(out) if "_orig_mod" in k], "the checkpoint must hold the model's own keys"
    diff, where = largest_difference(one_process, out)
    assert diff < 1e-5, f"compiled vs eager after 8 steps: weights differ by {diff:.3g} ({where})"


EXIT_COMMAND = """
import atexit, sys
from minibert.training import exit_command
atexit.register(lambda: print("|interpreter shutdown ran", end=""))
def main():
    print("main ran", end="")  # no newline: still in the buffer when the process ends
    {body}
exit_command(main)
"""


CASES = [("return 3", 3, ""), ("return None", 0, ""), ("raise SystemExit(4)", 4, ""),
         ("raise SystemExit('no --out given')", 1, "no --out given"), ("raise KeyboardInterrupt", 130, "")]


@pytest.mark.parametrize(("body", "rc", "err", "world_size"),
                         [(*case, "2") for case in CASES] + [(*case, "1") for case in CASES[::3]])
def test_exit_command_keeps_the_status_and_skips_the_interpreter_shutdown_only_under_torchrun(body, rc, err,
                                                                                             world_size):
    """Under torchrun (WORLD_SIZE > 1) the process must end before the interpreter's shutdown, where gloo's worker
    threads can abort it (see `exit_command`), and still flush what it printed; a plain run exits as sys.exit does."""
    env = {**os.environ, "WORLD_SIZE": world_size}
    proc = subprocess.run([sys.executable, "-c", EXIT_COMMAND.format(body=body)], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == rc, proc.stderr
    shutdown = "" if world_size == "2" else "|interpreter shutdown ran"
    assert proc.stdout == "main ran" + shutdown
    assert err in proc.stderr
