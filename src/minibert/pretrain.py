# Generated from notebook 06_pretraining.ipynb by minibert_course.export: edit the notebook, not this file.
"""Pretraining a tiny BERT on CPU: data, the loop, evaluation, fill-mask, CLI (chapter 06; chapter 09 runs the same
loop at Base size on a GPU). The loop is built from `minibert.training`'s parts (the sampler, the schedule, the
update, the stop signals, the checkpoints); this module holds what is pretraining's own.

Why everything is seeded by the step number: the batch order, the dynamic MLM masks and the evaluation masks are
functions of (seed, step), and the checkpoint keeps the random state of dropout, so a run interrupted at step k and
resumed continues, bit for bit, as the run that was never interrupted.
Why the loop stops only between steps: Ctrl+C and SIGTERM set a flag; the step in flight finishes, then the
checkpoint is written. A checkpoint written in the middle of a step would hold one update more than its step says.
`--stop-after-step N` sets the same flag during step N: a stop at a known step (tests, the GPU check), where a timer
that sends SIGTERM would race the run.
Why the schedule is fitted to the run: linear decay must reach zero when the run ends, whether it is given steps or
minutes; a run that is extended decays on from the learning rate it had reached, it never warms up again.
Why the loop reads top to bottom: what it changes as it goes (the step, the schedule, the history, what the checkpoint
on disk holds) is one object, `_Run`, whose methods are the things a step does; `train` is the loop itself.
"""

from __future__ import annotations

import argparse
import collections
import copy
import dataclasses
import json
import math
import os
import signal
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from minibert.cli import add_fields, arg, config_from_args
from minibert.config import BertConfig
from minibert.data import NSPInstance, PretrainingCollator, create_nsp_instances, tokenized_corpus
from minibert.heads import BertForPreTraining, masked_token_accuracy
from minibert.tokenization import BertTokenizer

# The loop's parts. Looked up here, in this module, when `train` runs (so a test that replaces
# `pretrain.train_step` or `pretrain.save_checkpoint` replaces what the loop calls); the names that the loop does not
# use itself are kept importable from here, where they were defined before `minibert.training` existed.
from minibert.training import (
    EpochSampler,
    Schedule,
    StopSignals,
    all_reduce,
    autocast,
    exit_command,
    latest_checkpoint,
    load_trainer_state,
    make_optimizer,
    save_checkpoint,
    start_process,
    steps_in_time,
    train_step,
    world,
)
from minibert.training import loss_counts as loss_counts

__all__ = ["train", "PretrainConfig", "evaluate", "fill_mask", "prepare",
           "build_parser", "run_command", "main", "plot_history"]


@dataclass
class PretrainConfig:
    """A pretraining run; every field is also a flag of `python -m minibert.pretrain` (see `build_parser`)."""

    out_dir: str = field(default="runs/tiny", metadata=arg("run folder; resumes from its checkpoint", "--out"))
    corpus: str = field(default="wikipedia", metadata=arg("'wikipedia' (gensim's sample), 'course' (the unlabelled "
                                                          "training text of chapter 08's tasks), 'course+wikipedia', "
                                                          "or a folder of .txt"))
    limit_documents: int | None = field(default=None, metadata=arg("use only the first N documents"))
    vocab_size: int = field(default=8000, metadata=arg("WordPiece vocabulary to train"))
    max_seq_length: int = field(default=128, metadata=arg("positions per input", "--seq-len"))
    dupe_factor: int = field(default=5, metadata=arg("passes over the corpus when building NSP pairs"))
    whole_word_mask: bool = field(default=False, metadata=arg("mask all pieces of a word together"))
    batch_size: int = field(default=32, metadata=arg("pairs per optimizer step"))
    learning_rate: float = field(default=1e-3, metadata=arg("peak learning rate (tiny models take more than "
                                                             "BERT-Base's 1e-4)", "--lr"))
    warmup_steps: int | None = field(default=None, metadata=arg("linear warm-up steps (default: 10%% of the "
                                                                 "scheduled steps)", "--warmup"))
    weight_decay: float = field(default=0.01, metadata=arg("AdamW weight decay (not on biases and LayerNorm)"))
    max_grad_norm: float | None = field(default=1.0, metadata=arg("clip the gradient norm to this"))
    max_steps: int | None = field(default=None, metadata=arg("stop after this many optimizer steps", "--steps"))
    max_minutes: float | None = field(default=None, metadata=arg("stop after this much training time",
                                                                  "--minutes"))
    eval_every: int = field(default=200, metadata=arg("evaluate on held-out articles every N steps"))
    eval_batches: int = field(default=8, metadata=arg("batches per evaluation"))
    eval_at_start: bool = field(default=False, metadata=arg("also evaluate the untrained model (step 0) before "
                                                             "the first step, as the first point of the curves"))
    checkpoint_every: int = field(default=500, metadata=arg("write the checkpoint every N steps"))
    stop_after_step: int | None = field(default=None, metadata=arg(
        "stop after step N as a SIGTERM during it would: finish it, write the checkpoint, exit 143 (run again to "
        "resume)"))
    seed: int = field(default=0, metadata=arg("seed of the data order, the masks and the initialization"))
    model: BertConfig = field(default_factory=BertConfig.tiny, metadata=arg(
        "the model (chapter 03's BertConfig); the run sets its vocab_size (the trained vocabulary's) and its "
        "max_position_embeddings (--max-positions, else --seq-len)", fields={
            "hidden_size": arg("model width H"), "num_hidden_layers": arg("encoder layers L"),
            "num_attention_heads": arg("attention heads A"), "intermediate_size": arg("feed-forward width"),
            "hidden_dropout_prob": arg("dropout after embeddings and sublayers", "--dropout"),
            "attention_probs_dropout_prob": arg("dropout on attention probabilities", "--attention-dropout")}))
    max_position_embeddings: int | None = field(default=None, metadata=arg(
        "learned positions (default: --seq-len); a 128-position first phase given 512 here can be resumed with "
        "--seq-len 512, as in BERT's recipe (chapter 09)", "--max-positions"))
    gradient_accumulation_steps: int = field(default=1, metadata=arg(
        "split each batch into N micro-batches, one backward each: the same update in less memory", "--grad-accum"))
    device: str = field(default="auto", metadata=arg("'cpu', 'cuda', or 'auto' (the GPU when there is one; under "
                                                      "torchrun, this process's GPU)"))
    precision: str = field(default="fp32", metadata=arg("'fp32', or 'bf16' (autocast: bf16 matrix products, fp32 "
                                                         "weights and optimizer)"))
    compile: bool = field(default=False, metadata=arg("torch.compile the model for training"))

    def model_config(self, vocab_size: int) -> BertConfig:
        """The model the run trains: `model` with the trained vocabulary's size and the run's positions."""
        return dataclasses.replace(self.model, vocab_size=vocab_size,
                                   max_position_embeddings=self.max_position_embeddings or self.max_seq_length)

    @classmethod
    def from_dict(cls, data: dict) -> PretrainConfig:
        """A run's pretrain_config.json as its config (also one written by an earlier minibert, whose model sizes
        were fields of the run's config)."""
        data = dict(data)
        flat = cls.__dataclass_fields__["model"].metadata["fields"]  # the model's fields that are flags
        sizes = {name: data.pop(name) for name in flat if name in data}
        model = BertConfig.from_dict(data.pop("model")) if "model" in data else BertConfig.tiny(**sizes)
        return cls(**data, model=model)


def prepare(cfg: PretrainConfig, out: Path) -> tuple[BertTokenizer, list[NSPInstance], list[NSPInstance]]:
    """Train (or reuse) the vocabulary, tokenize the corpus, and build train/eval NSP pairs (eval: held-out docs)."""
    tokenizer, tokenized, n_eval = tokenized_corpus(cfg.corpus, cfg.limit_documents, out / "vocab.txt",
                                                    cfg.vocab_size)
    train = create_nsp_instances(tokenized[n_eval:], cfg.max_seq_length, dupe_factor=cfg.dupe_factor, seed=cfg.seed)
    evaluation = create_nsp_instances(tokenized[:n_eval], cfg.max_seq_length, seed=cfg.seed + 1)
    return tokenizer, train, evaluation


@torch.no_grad()
def evaluate(model: BertForPreTraining, batches: list[dict[str, torch.Tensor]],
             precision: str = "fp32") -> dict[str, float]:
    """Loss, L_MLM, L_NSP, masked-token accuracy and NSP accuracy, averaged over fixed evaluation batches.
    The model is evaluated without dropout and left in the mode it was in."""
    was_training = model.training
    model.eval()
    sums = {"loss": 0.0, "mlm_loss": 0.0, "nsp_loss": 0.0, "mlm_accuracy": 0.0, "nsp_accuracy": 0.0}
    try:
        for batch in batches:
            with autocast(batch["input_ids"].device, precision):
                out = model(**batch, targets_only=True)
            targets = batch["labels"][batch["labels"] != -100]
            sums["loss"] += out.loss.item()
            sums["mlm_loss"] += out.mlm_loss.item()
            sums["nsp_loss"] += out.nsp_loss.item()
            sums["mlm_accuracy"] += masked_token_accuracy(out.prediction_logits, targets)
            nsp_right = out.seq_relationship_logits.argmax(-1) == batch["next_sentence_label"]
            sums["nsp_accuracy"] += nsp_right.float().mean().item()
    finally:
        model.train(was_training)
    return {k: v / len(batches) for k, v in sums.items()}


def _seconds_per_step(model, cfg: PretrainConfig, make_batch, eval_batches: list[dict[str, torch.Tensor]],
                     steps: int = 4) -> float:
    """Measured time of one optimizer step (batch making included) plus its share of an evaluation, on a throwaway
    copy of the model: the run's own weights, optimizer and random state are untouched. The first step is not
    timed (it allocates)."""
    probe = copy.deepcopy(model).train()
    optimizer = make_optimizer(probe, cfg.learning_rate, cfg.weight_decay)
    device = next(probe.parameters()).device
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        for step in range(steps):
            if step == 1:
                start = time.perf_counter()
            train_step(probe, optimizer, make_batch(step), cfg.learning_rate, cfg.max_grad_norm,
                       micro_batches=cfg.gradient_accumulation_steps, precision=cfg.precision, targets_only=True)
        per_step = (time.perf_counter() - start) / (steps - 1)  # train_step ends with .item(): the GPU is done
        start = time.perf_counter()
        evaluate(probe, eval_batches, cfg.precision)
    return per_step + (time.perf_counter() - start) / cfg.eval_every


def _initial_model(cfg: PretrainConfig, out: Path, tokenizer: BertTokenizer, rank: int, processes: int,
                   model_class: type[BertForPreTraining] = BertForPreTraining
                   ) -> tuple[BertForPreTraining, dict | None]:
    """The model a run starts from, and the trainer state it resumes (None for a new run): the run folder's
    checkpoint, or weights drawn from the seed, the same in every process, each of which then draws dropout from
    a stream of its own. `model_class`: BertForPreTraining or a subclass with the same weights (chapter 09's
    unpadded one), which draws the same first weights and reads the same checkpoints."""
    torch.manual_seed(cfg.seed)
    model = model_class(cfg.model_config(len(tokenizer)))
    checkpoint, state = latest_checkpoint(out), None
    if checkpoint is not None:
        model = model_class.from_pretrained(checkpoint)
        state = load_trainer_state(checkpoint)
    elif processes > 1:  # the same first weights everywhere, then a dropout stream of each process's own
        torch.manual_seed(cfg.seed + 1_000_003 * (rank + 1))
    if cfg.max_seq_length > model.config.max_position_embeddings:
        raise ValueError(f"--seq-len {cfg.max_seq_length} but the model learned {model.config.max_position_embeddings}"
                         " positions: start the run with --max-positions at least the longest phase's --seq-len")
    return model, state


def _eval_batches(cfg: PretrainConfig, tokenizer: BertTokenizer, eval_set: list[NSPInstance],
                  device: torch.device) -> list[dict[str, torch.Tensor]]:
    """The fixed evaluation batches: held-out pairs, masked once, with masks of their own seed."""
    collate = PretrainingCollator(tokenizer, generator=torch.Generator().manual_seed(cfg.seed + 7),
                                  whole_word_mask=cfg.whole_word_mask)
    count = min(cfg.eval_batches, max(1, len(eval_set) // cfg.batch_size))
    return [{k: v.to(device) for k, v in collate(eval_set[i * cfg.batch_size:(i + 1) * cfg.batch_size]).items()}
            for i in range(count)]


@dataclass
class _Run:
    """What the loop of `train` reads and moves on, in one place: the model and its optimizer, the data, and where
    the run is (step, tokens, history, schedule, what the checkpoint on disk holds). Its methods are what a step
    does: make the step's batch, update, evaluate into the history, write the checkpoint, decide on another step."""

    cfg: PretrainConfig
    out: Path
    device: torch.device
    rank: int
    processes: int
    tokenizer: BertTokenizer
    train_set: list[NSPInstance]
    eval_batches: list[dict[str, torch.Tensor]]
    model: BertForPreTraining
    trained: torch.nn.Module  # what the steps call: DDP around the model (several processes), compiled (--compile)
    optimizer: torch.optim.Optimizer
    step: int = 0
    history: list[dict] = field(default_factory=list)
    elapsed: float = 0.0  # training seconds of the sessions before this one
    schedule: Schedule | None = None
    tokens: int = 0  # positions trained on, padding included
    saved: tuple[int, int] | None = None  # (step, history length) of the checkpoint on disk
    start: float = 0.0  # time.perf_counter() at step 0 (this session's start, less `elapsed`)
    updating: bool = False  # set when optimizer.step() begins: from then on the step in flight cannot be undone
    stopped_by: str | None = None  # what asked for the stop, when it was not a signal: "--stop-after-step N"
    sampler: EpochSampler = field(init=False)
    collator: PretrainingCollator = field(init=False)  # the training batches' (the masks: seeded by the step)

    def __post_init__(self) -> None:
        self.sampler = EpochSampler(len(self.train_set), self.cfg.batch_size, self.cfg.seed)
        self.collator = PretrainingCollator(self.tokenizer, whole_word_mask=self.cfg.whole_word_mask)
        self.optimizer.register_step_pre_hook(self._update_begins)

    def _update_begins(self, *_) -> None:
        self.updating = True

    @property
    def lead(self) -> bool:
        """The process that writes files and prints."""
        return self.rank == 0

    @property
    def limit(self) -> float:
        """The training seconds the run is given (--minutes), or infinity."""
        return self.cfg.max_minutes * 60 if self.cfg.max_minutes else math.inf

    def seconds_left(self) -> float:
        return self.limit - (time.perf_counter() - self.start)

    def batch(self, step: int) -> dict[str, torch.Tensor]:
        """This process's rows of the step's batch: every process collates the whole batch (the same pairs, the same
        masks) and keeps its share, so N processes see what one process would see."""
        self.collator.generator = torch.Generator().manual_seed(self.cfg.seed * 7919 + step)  # the masks of this step
        batch = self.collator([self.train_set[i] for i in self.sampler.indices(step)])
        rows = len(batch["input_ids"])
        mine = slice(self.rank * rows // self.processes, (self.rank + 1) * rows // self.processes)
        return {key: value[mine].to(self.device, non_blocking=True) for key, value in batch.items()}

    def fit_schedule(self) -> str:
        """Fit the schedule to where the run ends (a new one, or the checkpoint's refitted); returns how the end was
        chosen. A time-limited run ends after as many steps as the measured speed allows in the time left (and is
        refitted as it runs, see `train`)."""
        cfg = self.cfg
        if cfg.max_minutes is None:
            total, how = cfg.max_steps, "max_steps"
        else:
            per_step = _seconds_per_step(self.model, cfg, lambda s: self.batch(self.step + s), self.eval_batches)
            total = steps_in_time(self.step, self.limit - self.elapsed, per_step, cfg.max_steps)
            how = f"{cfg.max_minutes:g} min at {per_step:.3f} s/step (measured), re-fitted to the speed as it runs"
        self.schedule = (Schedule.new(total, cfg.warmup_steps) if self.schedule is None
                         else self.schedule.refit(self.step, total))
        return how

    def resume_random_state(self, state: dict) -> None:
        """Dropout continues with the random stream it would have had (each process's own, when the number of
        processes is the one the checkpoint was written with)."""
        streams = state.get("rng_per_rank", [state])
        if len(streams) == self.processes:
            torch.set_rng_state(streams[self.rank]["torch_rng"])
            if "cuda_rng" in streams[self.rank] and self.device.type == "cuda":
                torch.cuda.set_rng_state(streams[self.rank]["cuda_rng"], self.device)
        else:
            torch.manual_seed(self.cfg.seed + 1_000_003 * (self.rank + 1) + self.step)
            if self.lead:
                print(f"resumed with {self.processes} processes, saved with {len(streams)}: the data continues as it "
                      "would have, dropout with new random streams")

    def keep_going(self, stop: StopSignals) -> bool:
        """Another step? Not if a signal came, the time is up or the schedule ends. Processes decide together: a
        signal to one of them stops them all after the same step."""
        signalled, time_up = all_reduce([float(stop.received is not None),
                                         float(time.perf_counter() - self.start >= self.limit)], dist.ReduceOp.MAX)
        if signalled and stop.received is None:
            stop.received = signal.SIGTERM  # another process was told to stop
        return not signalled and not time_up and self.step < self.schedule.total

    def update(self, batch: dict[str, torch.Tensor]) -> tuple[float, float]:
        """Step `step + 1`'s update (`train_step` at the schedule's rate): the batch's loss and the gradient norm.
        A KeyboardInterrupt raised by code inside it (not by StopSignals' handler: e.g. training in another thread)
        before optimizer.step() began leaves the weights of step `step`: their checkpoint is written first."""
        cfg = self.cfg
        rng, self.updating = torch.get_rng_state(), False
        try:
            return train_step(self.trained, self.optimizer, batch, cfg.learning_rate * self.schedule.factor(self.step),
                              cfg.max_grad_norm, micro_batches=cfg.gradient_accumulation_steps,
                              precision=cfg.precision, targets_only=True)
        except KeyboardInterrupt:
            if self.updating or self.processes > 1:
                print(f"interrupted inside the update of step {self.step + 1}: the checkpoint on disk is kept")
                raise
            torch.set_rng_state(rng)  # forward or backward only: the weights are those of step `step`
            self.checkpoint()
            print(f"interrupted during step {self.step + 1}: checkpoint of step {self.step} saved in "
                  f"{self.out / 'checkpoint'}")
            raise

    def record(self, loss: float, grad_norm: float) -> None:
        """The figures after step `step` into the history: the last training loss and gradient norm, the rate of the
        last step, and the evaluation."""
        self.history.append({"step": self.step, "tokens": self.tokens, "train_loss": loss, "grad_norm": grad_norm,
                             "lr": self.cfg.learning_rate * self.schedule.factor(self.step - 1),
                             "seconds": time.perf_counter() - self.start,
                             **evaluate(self.model, self.eval_batches, self.cfg.precision)})

    def checkpoint(self) -> None:
        """Write the checkpoint of step `step`, unless the one on disk holds it already. Every process takes part:
        each one's random state goes into it, and none runs ahead of a checkpoint that is not on disk yet."""
        if self.saved == (self.step, len(self.history)):
            return
        streams = [{"torch_rng": torch.get_rng_state(),
                    **({"cuda_rng": torch.cuda.get_rng_state(self.device)} if self.device.type == "cuda" else {})}]
        if self.processes > 1:  # each process's random state, so that each one's dropout resumes where it was
            mine, streams = streams[0], [None] * self.processes
            dist.all_gather_object(streams, mine)
        if self.lead:
            save_checkpoint(self.out / "checkpoint", self.model, self.optimizer, self.tokenizer,
                            {"step": self.step, "history": self.history, "elapsed": time.perf_counter() - self.start,
                             "schedule": asdict(self.schedule), "tokens": self.tokens, **streams[0],
                             **({"rng_per_rank": streams} if self.processes > 1 else {})})
        if self.processes > 1:
            dist.barrier()
        self.saved = (self.step, len(self.history))

    def result(self) -> dict:
        return {"step": self.step, "seconds": time.perf_counter() - self.start, "train_pairs": len(self.train_set),
                "final": self.history[-1], "history": self.history, "checkpoint": str(self.out / "checkpoint"),
                "schedule": asdict(self.schedule),
                "final_lr": self.cfg.learning_rate * self.schedule.factor(self.step - 1), "device": str(self.device),
                "processes": self.processes}


def _begin(cfg: PretrainConfig, model_class: type[BertForPreTraining] = BertForPreTraining) -> tuple[_Run, dict | None]:
    """Everything before the schedule: the process (device, process group), the data, the model and its optimizer,
    from the run folder's checkpoint when there is one. Returns the run and the trainer state it resumes (or None)."""
    if cfg.max_steps is None and cfg.max_minutes is None:
        raise ValueError("give max_steps or max_minutes (or both): the schedule must know where the run ends")
    if cfg.stop_after_step is not None and cfg.stop_after_step < 1:
        raise ValueError(f"--stop-after-step {cfg.stop_after_step}: give a step count of at least 1")
    out = Path(cfg.out_dir)
    device = start_process(cfg.device)
    rank, processes = world()
    if cfg.batch_size < processes * cfg.gradient_accumulation_steps:
        raise ValueError(f"a batch of {cfg.batch_size} cannot be split into {processes} processes x "
                         f"{cfg.gradient_accumulation_steps} micro-batches: give a larger --batch-size")
    if rank == 0:
        out.mkdir(parents=True, exist_ok=True)
        (out / "pretrain_config.json").write_text(json.dumps(asdict(cfg), indent=2), encoding="utf-8")
    else:
        dist.barrier()  # the first process trains and writes vocab.txt; the others read it
    tokenizer, train_set, eval_set = prepare(cfg, out)
    if rank == 0 and processes > 1:
        dist.barrier()
    model, state = _initial_model(cfg, out, tokenizer, rank, processes, model_class)
    model.to(device).train()
    optimizer = make_optimizer(model, cfg.learning_rate, cfg.weight_decay)
    if state is not None:
        optimizer.load_state_dict(state["optimizer"])
    trained = model
    if processes > 1:
        trained = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    if cfg.compile:
        trained = torch.compile(trained)
    run = _Run(cfg, out, device, rank, processes, tokenizer, train_set, _eval_batches(cfg, tokenizer, eval_set, device),
               model, trained, optimizer)
    if state is not None:
        run.step, run.history, run.elapsed = state["step"], state["history"], state["elapsed"]
        run.schedule = Schedule(**state["schedule"]) if "schedule" in state else None
        run.tokens, run.saved = state.get("tokens", 0), (run.step, len(run.history))
    return run, state


def train(cfg: PretrainConfig, progress: bool = True,
          model_class: type[BertForPreTraining] = BertForPreTraining) -> dict:
    """Pretrain (or resume) and return the final evaluation figures, the history, the schedule and the timing.
    `model_class`: see `_initial_model`.

    Raises:
        KeyboardInterrupt: after Ctrl+C, once the checkpoint of the last complete step is written.
        SystemExit: the same after SIGTERM (exit status 143), and after step `cfg.stop_after_step` (the run stops
            there exactly as a SIGTERM during that step would stop it).
    """
    from tqdm.auto import tqdm

    run, state = _begin(cfg, model_class)  # the process, the data, the model and the optimizer (from its checkpoint)
    how = run.fit_schedule()
    if run.lead:
        print(f"schedule: peak LR {cfg.learning_rate:g}, warm-up {run.schedule.warmup} steps, linear decay to 0 at "
              f"step {run.schedule.total} ({how}); starting at step {run.step}, LR "
              f"{cfg.learning_rate * run.schedule.factor(run.step):.3g}"
              + (f"; {run.processes} processes" if run.processes > 1 else ""))
    if state is not None:
        run.resume_random_state(state)
    run.start = time.perf_counter() - run.elapsed
    recent = collections.deque([time.perf_counter()], maxlen=cfg.eval_every + 1)  # when the last steps ended
    bar = tqdm(total=run.schedule.total, initial=run.step, disable=not progress or not run.lead, desc="pretraining")
    loss, grad_norm = float("nan"), float("nan")
    if cfg.eval_at_start and run.step == 0 and not run.history:  # a fresh run: the figures of the untrained model
        run.record(loss, grad_norm)
    with StopSignals() as stop:
        while run.keep_going(stop):
            batch = run.batch(run.step)
            loss, grad_norm = run.update(batch)
            run.step += 1
            if run.step == cfg.stop_after_step and stop.received is None:  # as if SIGTERM had come during this step
                stop.received, run.stopped_by = signal.SIGTERM, f"--stop-after-step {run.step}"
            run.tokens += cfg.batch_size * batch["input_ids"].shape[1]  # the whole batch's rows, all processes
            bar.update(1)
            bar.set_postfix(loss=f"{loss:.3f}")
            if run.step % cfg.eval_every == 0:
                run.record(loss, grad_norm)
            recent.append(time.perf_counter())
            if cfg.max_minutes is not None and run.step < run.schedule.total:  # re-fit the end to the measured speed
                rate = (recent[-1] - recent[0]) / (len(recent) - 1)  # over the last eval_every steps, eval included
                run.schedule = run.schedule.refit(run.step, steps_in_time(run.step, run.seconds_left(), rate,
                                                                          cfg.max_steps))
                bar.total = run.schedule.total
            if run.step % cfg.checkpoint_every == 0:
                run.checkpoint()
        bar.close()
        if not stop.received and (not run.history or run.history[-1]["step"] != run.step):
            run.record(loss, grad_norm)  # the final figures (a stopped run keeps the history an uninterrupted run has)
        run.checkpoint()
    if stop.received:
        if run.lead:
            print(f"{run.stopped_by or signal.Signals(stop.received).name}: stopped after step {run.step}; checkpoint "
                  f"saved in {run.out / 'checkpoint'}; run again to resume")
        if stop.received == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + stop.received)
    return run.result()


def plot_history(history: list[dict]):
    """Loss curves and accuracies over steps (matplotlib figure). Masked-token accuracy gets a panel of its own,
    scaled to its values (a tiny model's stays far below 1); NSP accuracy is drawn against chance (0.5)."""
    import matplotlib.pyplot as plt

    steps = [h["step"] for h in history]
    fig, (losses, mlm, nsp) = plt.subplots(1, 3, figsize=(13, 3.5))
    for key, label in (("train_loss", "loss (train batch)"), ("loss", "loss (eval)"), ("mlm_loss", "mlm_loss (eval)"),
                       ("nsp_loss", "nsp_loss (eval)")):
        losses.plot(steps, [h[key] for h in history], label=label)
    losses.set(xlabel="step", ylabel="loss", title="L = L_MLM + L_NSP")
    losses.legend()
    mlm.plot(steps, [h["mlm_accuracy"] for h in history], marker=".")
    mlm.set(xlabel="step", ylim=(0, None), title="masked-token accuracy (held-out)")
    nsp.plot(steps, [h["nsp_accuracy"] for h in history], marker=".", label="NSP accuracy")
    nsp.axhline(0.5, color="gray", linestyle=":", label="chance")
    nsp.set(xlabel="step", ylim=(0, 1), title="NSP accuracy (held-out)")
    nsp.legend()
    fig.tight_layout()
    return fig


@torch.no_grad()
def fill_mask(model, tokenizer: BertTokenizer, text: str, top_k: int = 5) -> list[list[tuple[str, float]]]:
    """For each [MASK] in `text`, the top_k pieces and their probabilities (BertForPreTraining or BertForMaskedLM;
    the model is left in the mode it was in)."""
    enc = tokenizer(text)
    positions = [i for i, t in enumerate(enc.tokens) if t == "[MASK]"]
    if not positions:
        raise ValueError("the text has no [MASK]: write [MASK] where a piece should be predicted")
    was_training = model.training
    model.eval()
    try:
        out = model(torch.tensor([enc.input_ids]), token_type_ids=torch.tensor([enc.token_type_ids]))
    finally:
        model.train(was_training)
    logits = out.prediction_logits if hasattr(out, "prediction_logits") else out.logits  # (1, T, V)
    top = logits[0, positions].softmax(-1).topk(top_k, dim=-1)  # (M, top_k)
    return [[(tokenizer.ids_to_tokens[int(i)], float(p)) for p, i in zip(ps, ids, strict=True)]
            for ps, ids in zip(top.values, top.indices, strict=True)]


def build_parser(defaults: PretrainConfig | None = None) -> argparse.ArgumentParser:
    """The command line, made from PretrainConfig's fields (and its model's): a new field is a new flag, with no
    second list. `defaults` replaces the fields' defaults (`python -m minibert.train`: Base size)."""
    parser = argparse.ArgumentParser(prog="python -m minibert.pretrain", description="Pretrain a small BERT (MLM + "
                                     "NSP) and resume it; give --steps or --minutes (or both).")
    add_fields(parser, PretrainConfig, defaults)
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def run_command(parser: argparse.ArgumentParser, argv: list[str] | None = None, extra: dict | None = None,
                defaults: PretrainConfig | None = None,
                model_class: type[BertForPreTraining] = BertForPreTraining) -> tuple[PretrainConfig, dict] | int:
    """What every pretraining command does (`python -m minibert.pretrain`, `python -m minibert.train`): parse the
    flags into a PretrainConfig, check that the run has an end, train (under torchrun too), and take the process
    group down. Returns the config and the result for the first process to report; else the exit status (130 after
    Ctrl+C, 0 for the other processes under torchrun). `extra` names the parser's flags that are not fields of the
    config (`{"peak_tflops": None}`): their values are written into it. `defaults`: the config the parser was built
    from (`build_parser(defaults)`), which gives the model's fields that are not flags. `model_class`: see
    `_initial_model`."""
    args = vars(parser.parse_args(argv))
    progress = not args.pop("no_progress")
    for name in extra or {}:
        extra[name] = args.pop(name)
    cfg = config_from_args(PretrainConfig, args, defaults)
    if cfg.max_minutes is None and cfg.max_steps is None:
        parser.error("give --minutes or --steps (or both)")
    try:
        result = train(cfg, progress=progress, model_class=model_class)
    except KeyboardInterrupt:
        return 130
    finally:
        if dist.is_initialized():  # started by train under torchrun
            dist.destroy_process_group()
    if int(os.environ.get("RANK", 0)) != 0:  # under torchrun, the first process reports
        return 0
    return cfg, result


def main(argv: list[str] | None = None) -> int:
    outcome = run_command(build_parser(), argv)
    if isinstance(outcome, int):
        return outcome
    cfg, result = outcome
    final = result["final"]
    print(f"step {result['step']} after {result['seconds'] / 60:.1f} min: masked-token accuracy "
          f"{final['mlm_accuracy']:.3f}, NSP accuracy {final['nsp_accuracy']:.3f}, loss {final['loss']:.3f} "
          f"(MLM {final['mlm_loss']:.3f} + NSP {final['nsp_loss']:.3f}); last LR {result['final_lr']:.3g} "
          f"({result['final_lr'] / cfg.learning_rate:.2%} of peak); checkpoint: {result['checkpoint']}")
    return 0


if __name__ == "__main__" and "__file__" in globals():  # `python -m minibert.pretrain`, not a notebook cell
    exit_command(main)
