# Generated from notebook 06_pretraining.ipynb by minibert_course.export: edit the notebook, not this file.
"""The parts of a training loop that every loop of the package uses: chapter 06's pretraining (`minibert.pretrain`),
chapter 08's fine-tuning (`minibert.finetune`) and chapter 10's studies (`minibert.variants`) are each a loop built
from them.

Why batches are a function of (seed, step) (`EpochSampler`): a run interrupted at step k and resumed gets the batches
that the run that was never interrupted got.
Why the schedule is fitted to the run (`Schedule`, `steps_in_time`): linear decay must reach zero when the run ends,
whether it is given steps or minutes; a run that is extended decays on from the learning rate it had reached, it never
warms up again.
Why the loop stops only between steps (`StopSignals`): Ctrl+C and SIGTERM set a flag; the step in flight finishes,
then the checkpoint is written. A checkpoint written in the middle of a step would hold one update more than its step
says.
Why the trainer state is two files (`save_checkpoint`, `load_trainer_state`): what a person reads (step, history,
schedule) as JSON, the tensors (optimizer moments, random states) in a file that loads with `weights_only=True`.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from minibert.masking import IGNORE_INDEX
from minibert.tokenization import BertTokenizer

__all__ = ["train_step", "loss_counts", "make_optimizer", "autocast", "Schedule", "steps_in_time", "EpochSampler",
           "StopSignals", "save_checkpoint", "load_trainer_state", "latest_checkpoint", "world", "all_reduce",
           "start_process", "exit_command"]


class EpochSampler:
    """Which pairs make the batch of step `step`: epoch e visits every pair once, in an order drawn once per epoch
    from (seed, e). A function of (seed, step) only, so a resumed run gets the batches it would have had."""

    def __init__(self, num_instances: int, batch_size: int, seed: int):
        if num_instances == 0:
            raise ValueError("no training pairs: the corpus is too small for the sequence length")
        self.num_instances, self.batch_size, self.seed = num_instances, batch_size, seed
        self.steps_per_epoch = max(1, num_instances // batch_size)  # the last partial batch waits for next epoch
        self.permutations = 0  # how many epoch orders were drawn (one per epoch visited)
        self._epoch, self._order = -1, torch.empty(0, dtype=torch.long)

    def indices(self, step: int) -> list[int]:
        epoch, index = divmod(step, self.steps_per_epoch)
        if epoch != self._epoch:
            generator = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
            self._order = torch.randperm(self.num_instances, generator=generator)
            self._epoch, self.permutations = epoch, self.permutations + 1
        return self._order[index * self.batch_size:(index + 1) * self.batch_size].tolist()


@dataclass
class Schedule:
    """The learning rate as a fraction of the peak: linear warm-up, then linear decay to 0 at step `total`.

    The decay runs from (anchor_step, anchor_factor) to (total, 0): (warmup, 1.0) for a new run. When a run's length
    changes (resumed with more or fewer steps, or re-fitted to the measured speed of a time-limited run), the anchor
    moves to the last step taken and the factor it had, so the rate continues from there and never jumps back up.
    """

    warmup: int
    total: int
    anchor_step: int
    anchor_factor: float = 1.0

    @classmethod
    def new(cls, total: int, warmup: int | None) -> Schedule:
        if warmup is None:
            warmup = max(1, total // 10)
        if not 0 < warmup < total:
            raise ValueError(f"a warm-up of {warmup} steps does not fit a run of {total} steps: give --warmup "
                             f"between 1 and {total - 1}")
        return cls(warmup, total, warmup)

    def factor(self, step: int) -> float:
        """The multiplier of the peak learning rate for optimizer step `step` (0-based)."""
        if step < self.anchor_step:  # still warming up
            return (step + 1) / self.warmup
        return max(0.0, self.anchor_factor * (self.total - step) / max(1, self.total - self.anchor_step))

    def refit(self, step: int, total: int) -> Schedule:
        """The schedule of a run that has taken `step` steps and should now end at `total` (itself, when it ends there
        already: every refit of a run goes through here, so no caller compares the totals first)."""
        if total == self.total:
            return self
        if step <= self.anchor_step:  # warm-up is not over: it goes on unchanged, the decay ends at `total`
            return Schedule(self.warmup, total, self.anchor_step, self.anchor_factor)
        return Schedule(self.warmup, total, step - 1, self.factor(step - 1))


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    """The precision of the forward pass: 'fp32', or 'bf16' autocast (matrix products in bfloat16, the weights, their
    gradients and AdamW's moments stay fp32: chapter 09)."""
    if precision == "fp32":
        return contextlib.nullcontext()
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    raise ValueError(f"precision {precision!r}: give 'fp32' or 'bf16'")


TENSOR_FIELDS = ("torch_rng", "cuda_rng", "rng_per_rank")  # the trainer state's random states: tensors, not JSON


def save_checkpoint(folder: Path, model, optimizer, tokenizer: BertTokenizer, state: dict) -> None:
    """Write model (config.json + model.safetensors), tokenizer (vocab.txt + tokenizer_config.json) and trainer state
    into `folder`, atomically: a new folder is written aside and swapped in, so an interruption at any point (even
    SIGKILL) leaves a whole checkpoint, the previous one or this one.

    The trainer state is split as transformers' Trainer splits it: step, history, schedule and timing in
    `trainer_state.json` (readable by a person or a script), the optimizer's moments and the random states in
    `trainer_state.pt`, tensors only, so that `load_trainer_state` reads it with `weights_only=True` and a
    checkpoint from elsewhere cannot run code. The .pt file is written last and repeats the step: its presence marks
    a whole folder, and the loader checks that the two files belong together."""
    new, old = folder.with_name(folder.name + "-new"), folder.with_name(folder.name + "-old")
    shutil.rmtree(new, ignore_errors=True)
    model.save_pretrained(new)
    tokenizer.save_pretrained(new)
    fields = {key: value for key, value in state.items() if key not in TENSOR_FIELDS}
    (new / "trainer_state.json").write_text(json.dumps(fields, indent=1) + "\n", encoding="utf-8")
    tensors = {key: value for key, value in state.items() if key in TENSOR_FIELDS}
    torch.save({"step": state["step"], "optimizer": optimizer.state_dict(), **tensors}, new / "trainer_state.pt")
    if folder.exists():
        shutil.rmtree(old, ignore_errors=True)
        folder.rename(old)
    new.rename(folder)
    shutil.rmtree(old, ignore_errors=True)


def load_trainer_state(folder: Path) -> dict:
    """The trainer state of a checkpoint folder as one dict: the fields of trainer_state.json, the optimizer's state
    and the random states. Nothing is unpickled: the tensors load with `weights_only=True`. (A checkpoint of an
    earlier minibert kept every field in trainer_state.pt; it loads the same way.)"""
    state = torch.load(folder / "trainer_state.pt", map_location="cpu", weights_only=True)
    fields = folder / "trainer_state.json"
    if fields.exists():
        written = json.loads(fields.read_text(encoding="utf-8"))
        if written["step"] != state["step"]:
            raise ValueError(f"{folder}: trainer_state.json is of step {written['step']}, trainer_state.pt of step "
                             f"{state['step']}: the files come from two checkpoints; restore the folder as it was "
                             "written (the two files travel together)")
        state.update(written)
    return state


def latest_checkpoint(out: Path) -> Path | None:
    for name in ("checkpoint", "checkpoint-old"):  # -old survives only an interruption between the two renames
        if (out / name / "trainer_state.pt").exists():
            return out / name
    return None


def make_optimizer(model: torch.nn.Module, learning_rate: float, weight_decay: float = 0.01) -> torch.optim.AdamW:
    """AdamW with weight decay on the weight matrices only: biases and LayerNorm parameters are not decayed, as in
    BERT (its optimizer excludes "bias" and "LayerNorm"; decaying a LayerNorm gain pulls it towards 0, not 1). Every
    loop (pretraining, fine-tuning, chapter 10's) passes its own two numbers."""
    decay, no_decay = [], []
    for name, param in model.named_parameters():  # a tied matrix is listed once
        (no_decay if name.endswith("bias") or "LayerNorm" in name else decay).append(param)
    fused = True if decay[0].is_cuda else None  # one kernel for the whole update on a GPU (chapter 09)
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}], lr=learning_rate, fused=fused)


def world() -> tuple[int, int]:
    """(rank, number of processes): (0, 1) unless a process group is up (torchrun: `start_process` starts one)."""
    return (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)


def all_reduce(values: list[float], op=None) -> list[float]:
    """The sum (or `op`) of a few numbers over all processes; the numbers themselves in a single process."""
    if not dist.is_initialized():
        return values
    backend_device = "cuda" if dist.get_backend() == "nccl" else "cpu"
    t = torch.tensor(values, dtype=torch.float64, device=backend_device)
    dist.all_reduce(t, op=op or dist.ReduceOp.SUM)
    return t.tolist()


def steps_in_time(step: int, seconds_left: float, seconds_per_step: float, max_steps: int | None) -> int:
    """Where a time-limited run (`--minutes`) ends: as many more steps as fit in the time left at the measured speed
    (at least one), capped by max_steps, and the same in every process (the smallest), so that they all stop
    together. `Schedule.refit(step, steps_in_time(...))` is the whole re-fit."""
    total = step + max(1, round(seconds_left / seconds_per_step))
    total = min(total, max_steps) if max_steps else total
    return int(all_reduce([total], dist.ReduceOp.MIN)[0])


def loss_counts(batch: dict[str, torch.Tensor]) -> list[int]:
    """What each term of the loss averages over, in this batch: pretraining has two terms (L_MLM over its targets,
    L_NSP over its pairs); a task head one (token labels: the labelled pieces; otherwise the examples)."""
    labels = batch.get("labels")
    targets = int((labels != IGNORE_INDEX).sum()) if labels is not None and labels.dim() == 2 else None
    if "next_sentence_label" in batch:
        return [targets, len(batch["input_ids"])]
    return [targets if targets is not None else len(batch["input_ids"])]


def train_step(model, optimizer, batch: dict[str, torch.Tensor], lr: float, max_grad_norm: float | None,
               micro_batches: int = 1, precision: str = "fp32", **forward) -> tuple[float, float]:
    """One update: forward, backward, gradient clipping, AdamW at rate `lr`; `forward` holds extra arguments of the
    model's forward (pretraining: targets_only=True, MLM logits at the targets only; chapter 08's task heads: none).
    Returns the loss of the whole batch (all processes) and the gradient norm before clipping.

    Why the loss is rebuilt from counts: the batch may be split, into `micro_batches` pieces here and across the
    processes of a DDP run (chapter 09). L_MLM is a mean over the batch's *targets*, and a piece with more targets
    must weigh more: each piece's mean is weighted by its share of the whole batch's count (x the number of
    processes, since DDP averages the gradients), so the update is the one the whole batch would give. With one
    piece in one process every weight is exactly 1.0: the plain loss, bit for bit."""
    for group in optimizer.param_groups:
        group["lr"] = lr
    if not 1 <= micro_batches <= len(batch["input_ids"]):
        raise ValueError(f"{micro_batches} micro-batches for a batch of {len(batch['input_ids'])} rows: give "
                         "--grad-accum between 1 and the rows each process gets")
    processes = world()[1]
    splits = {key: value.tensor_split(micro_batches) for key, value in batch.items()}  # rows: (B, ...) -> pieces
    pieces = [{key: splits[key][i] for key in batch} for i in range(micro_batches)]
    counts = [loss_counts(piece) for piece in pieces]  # per piece: targets (and pairs) its loss terms average over
    totals = all_reduce([sum(column) for column in zip(*counts, strict=True)])
    ddp = getattr(model, "_orig_mod", model)  # under torch.compile, the module it compiled
    optimizer.zero_grad(set_to_none=True)
    loss_value = 0.0
    for i, piece in enumerate(pieces):
        sync = i == len(pieces) - 1 or not isinstance(ddp, DistributedDataParallel)
        with contextlib.nullcontext() if sync else ddp.no_sync(), autocast(piece["input_ids"].device, precision):
            out = model(**piece, **forward)
            means = [out.mlm_loss, out.nsp_loss] if getattr(out, "mlm_loss", None) is not None else [out.loss]
            loss = sum(mean * (n * processes / total) for mean, n, total in zip(means, counts[i], totals, strict=True)
                       if n)
        loss.backward()
        loss_value += loss.item() / processes
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm or math.inf)
    optimizer.step()
    return all_reduce([loss_value])[0], float(norm)


class StopSignals:
    """While active, Ctrl+C (SIGINT) and SIGTERM only ask the loop to stop: `.received` is set and the loop ends
    after the step in flight. A second Ctrl+C stops at once (the last complete checkpoint stays on disk).
    Handlers can only be set in the main thread: elsewhere a KeyboardInterrupt can still arrive inside a step,
    and the loop saves the last whole step if the update had not begun."""

    def __init__(self):
        self.received: int | None = None
        self._previous: dict[int, object] = {}

    def _handle(self, signum, frame) -> None:
        if self.received == signal.SIGINT and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.received = signum
        print(f"\n{signal.Signals(signum).name}: stopping after this step, then saving a checkpoint",
              file=sys.stderr, flush=True)

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():  # handlers can only be set there
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)


def start_process(device: str = "auto") -> torch.device:
    """This process's device, from a `--device` value ('cpu', 'cuda', or 'auto': the GPU when there is one; under
    torchrun, this process's GPU); under torchrun (WORLD_SIZE > 1) also the process group that DDP averages gradients
    over: NCCL between GPUs, gloo between CPU processes (how the tests run DDP without a GPU)."""
    kind = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
    if kind == "cuda":
        if not torch.cuda.is_available():
            raise ValueError("--device cuda: PyTorch sees no GPU here (torch.cuda.is_available() is False); give "
                             "--device cpu, or install a CUDA build of PyTorch")
        chosen = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        torch.cuda.set_device(chosen)
    elif kind == "cpu":
        chosen = torch.device("cpu")
    else:
        raise ValueError(f"--device {device}: give 'cpu', 'cuda' or 'auto'")
    if int(os.environ.get("WORLD_SIZE", 1)) > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if chosen.type == "cuda" else "gloo")
    return chosen

def exit_command(main: Callable[[], int | None]) -> NoReturn:
    """Run a command's `main()` and end the process with its exit status (`sys.exit`'s rules: None is 0, a message
    is printed and gives 1; Ctrl+C gives 130).

    Why not plain `sys.exit(main())`: under torchrun (WORLD_SIZE > 1) the process ends with `os._exit` once its
    output is flushed, skipping the interpreter's shutdown. During that shutdown, gloo's worker threads can still be
    releasing the tensors of the last collective (a barrier holds the works queued before it). That needs the GIL,
    which a finalising interpreter no longer hands out, so the thread is ended and the process aborts (SIGABRT,
    "terminate called without an active exception") after a run that finished and saved its checkpoint. We saw it
    in about 1 of 15 two-process CPU runs on a loaded 2-core machine; the core dump had `~AsyncBarrierWork` ->
    `decref_pyobject` -> `take_gil` in `ProcessGroupGloo::runLoop` and the main thread in `Py_FinalizeEx`, the
    crash pytorch/pytorch#179291 describes. `destroy_process_group()` does not stop those threads. Every file a run
    writes is closed before `main()` returns, so nothing is lost; other exceptions propagate as usual (torchrun
    reports them)."""
    try:
        status = main()
    except SystemExit as stop:
        status = stop.code
    except KeyboardInterrupt:
        status = 130
    if status is not None and not isinstance(status, int):
        print(status, file=sys.stderr)
        status = 1
    if int(os.environ.get("WORLD_SIZE", 1)) <= 1:
        sys.exit(status)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(status or 0)
