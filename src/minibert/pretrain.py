# Generated from notebook 06_pretraining.ipynb by minibert_course.export: edit the notebook, not this file.
"""Pretraining a tiny BERT on CPU: data, loop, evaluation, checkpoints that resume, fill-mask, CLI (chapter 06).

Why everything is seeded by the step number: the batch order, the dynamic MLM masks and the evaluation masks are
functions of (seed, step), so a run interrupted at step k and resumed from its checkpoint continues with exactly the
batches an uninterrupted run would have seen.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from minibert.config import BertConfig
from minibert.data import NSPInstance, PretrainingCollator, create_nsp_instances, load_documents
from minibert.heads import BertForPreTraining, masked_token_accuracy
from minibert.tokenization import BertTokenizer, save_vocab, train_wordpiece


@dataclass
class PretrainConfig:
    """A pretraining run. The model is BertConfig.tiny() sized to the trained vocabulary and sequence length."""

    out_dir: str = "runs/tiny"
    corpus: str = "wikipedia"  # or a folder of .txt files
    limit_documents: int | None = None
    vocab_size: int = 8000
    max_seq_length: int = 128
    dupe_factor: int = 5  # passes over the corpus when building NSP pairs (masks are dynamic anyway)
    batch_size: int = 32
    learning_rate: float = 1e-3  # tiny models tolerate more than BERT-Base's 1e-4
    weight_decay: float = 0.01
    warmup_steps: int = 200
    max_steps: int = 100_000
    max_minutes: float | None = None
    eval_every: int = 200
    eval_batches: int = 8
    checkpoint_every: int = 500
    seed: int = 0
    hidden_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 2
    intermediate_size: int = 512


def prepare(cfg: PretrainConfig, out: Path) -> tuple[BertTokenizer, list[NSPInstance], list[NSPInstance]]:
    """Train (or reuse) the vocabulary, tokenize the corpus, and build train/eval NSP pairs (eval: held-out docs)."""
    docs = load_documents(cfg.corpus, limit=cfg.limit_documents)
    if len(docs) < 4:
        raise ValueError(f"{len(docs)} documents: pretraining with NSP needs at least 4 (train and eval need 2 each)")
    vocab_file = out / "vocab.txt"
    fast = None
    if not vocab_file.exists():
        fast = train_wordpiece((s for d in docs for s in d), vocab_size=cfg.vocab_size)
        save_vocab(fast, vocab_file)
    tokenizer = BertTokenizer(vocab_file)
    if fast is None:  # same pieces as the from-scratch tokenizer, but in Rust: tokenizing 20k sentences is instant
        from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

        fast = Tokenizer(models.WordPiece(tokenizer.vocab, unk_token="[UNK]"))
        fast.normalizer = normalizers.BertNormalizer(lowercase=True)
        fast.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenized = [[e.ids for e in fast.encode_batch(d, add_special_tokens=False)] for d in docs]
    n_eval = max(2, len(tokenized) // 20)
    train = create_nsp_instances(tokenized[n_eval:], cfg.max_seq_length, dupe_factor=cfg.dupe_factor, seed=cfg.seed)
    evaluation = create_nsp_instances(tokenized[:n_eval], cfg.max_seq_length, seed=cfg.seed + 1)
    return tokenizer, train, evaluation


def batches_for_step(instances: list[NSPInstance], step: int, batch_size: int, seed: int) -> list[NSPInstance]:
    """The batch of a given step: epoch e visits the instances in the order of a permutation seeded by (seed, e)."""
    per_epoch = max(1, len(instances) // batch_size)
    epoch, index = divmod(step, per_epoch)
    order = list(range(len(instances)))
    random.Random(seed * 1_000_003 + epoch).shuffle(order)
    return [instances[i] for i in order[index * batch_size:(index + 1) * batch_size]]


@torch.no_grad()
def evaluate(model: BertForPreTraining, batches: list[dict[str, torch.Tensor]]) -> dict[str, float]:
    """Loss, L_MLM, L_NSP, masked-token accuracy and NSP accuracy, averaged over fixed evaluation batches."""
    model.eval()
    sums = {"loss": 0.0, "mlm_loss": 0.0, "nsp_loss": 0.0, "mlm_accuracy": 0.0, "nsp_accuracy": 0.0}
    for batch in batches:
        out = model(**batch, targets_only=True)
        targets = batch["labels"][batch["labels"] != -100]
        sums["loss"] += out.loss.item()
        sums["mlm_loss"] += out.mlm_loss.item()
        sums["nsp_loss"] += out.nsp_loss.item()
        sums["mlm_accuracy"] += masked_token_accuracy(out.prediction_logits, targets)
        nsp_right = out.seq_relationship_logits.argmax(-1) == batch["next_sentence_label"]
        sums["nsp_accuracy"] += nsp_right.float().mean().item()
    model.train()
    return {k: v / len(batches) for k, v in sums.items()}


def save_checkpoint(folder: Path, model, optimizer, scheduler, tokenizer_vocab: Path, state: dict) -> None:
    """Write model (config.json + model.safetensors), vocab.txt and trainer state into `folder`, atomically:
    a new folder is written aside and swapped in, so an interruption leaves the previous checkpoint whole."""
    new, old = folder.with_name(folder.name + "-new"), folder.with_name(folder.name + "-old")
    shutil.rmtree(new, ignore_errors=True)
    model.save_pretrained(new)
    shutil.copy2(tokenizer_vocab, new / "vocab.txt")
    torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(), **state},
               new / "trainer_state.pt")
    if folder.exists():
        shutil.rmtree(old, ignore_errors=True)
        folder.rename(old)
    new.rename(folder)
    shutil.rmtree(old, ignore_errors=True)


def latest_checkpoint(out: Path) -> Path | None:
    for name in ("checkpoint", "checkpoint-old"):  # -old survives only an interruption between the two renames
        if (out / name / "trainer_state.pt").exists():
            return out / name
    return None


def make_optimizer(model: torch.nn.Module, cfg: PretrainConfig) -> torch.optim.AdamW:
    """AdamW with weight decay on matrices only (biases and LayerNorm parameters are not decayed, as in BERT)."""
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}], lr=cfg.learning_rate)


def train(cfg: PretrainConfig, progress: bool = True) -> dict:
    """Pretrain (or resume) and return the final evaluation figures, the history and the run's timing."""
    from tqdm.auto import tqdm

    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "pretrain_config.json").write_text(json.dumps(asdict(cfg), indent=2), encoding="utf-8")
    tokenizer, train_set, eval_set = prepare(cfg, out)
    torch.manual_seed(cfg.seed)
    model_config = BertConfig.tiny(
        vocab_size=len(tokenizer), max_position_embeddings=cfg.max_seq_length, hidden_size=cfg.hidden_size,
        num_hidden_layers=cfg.num_hidden_layers, num_attention_heads=cfg.num_attention_heads,
        intermediate_size=cfg.intermediate_size,
    )
    model = BertForPreTraining(model_config)
    optimizer = make_optimizer(model, cfg)

    def schedule(step: int) -> float:  # linear warm-up, then linear decay to 0 at max_steps
        if step < cfg.warmup_steps:
            return (step + 1) / cfg.warmup_steps
        return max(0.0, (cfg.max_steps - step) / max(1, cfg.max_steps - cfg.warmup_steps))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    step, history, elapsed = 0, [], 0.0
    checkpoint = latest_checkpoint(out)
    if checkpoint is not None:
        model = BertForPreTraining.from_pretrained(checkpoint).train()
        state = torch.load(checkpoint / "trainer_state.pt", weights_only=False)
        optimizer = make_optimizer(model, cfg)
        optimizer.load_state_dict(state["optimizer"])
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
        scheduler.load_state_dict(state["scheduler"])
        for group, lr in zip(optimizer.param_groups, scheduler.get_last_lr(), strict=True):
            group["lr"] = lr  # a new LambdaLR resets the rates to step 0's; the loaded state does not restore them
        step, history, elapsed = state["step"], state["history"], state["elapsed"]
        torch.set_rng_state(state["torch_rng"])  # dropout continues with the random stream it would have had
    eval_collate = PretrainingCollator(tokenizer, generator=torch.Generator().manual_seed(cfg.seed + 7))
    eval_batches = [eval_collate(eval_set[i * cfg.batch_size:(i + 1) * cfg.batch_size])
                    for i in range(min(cfg.eval_batches, max(1, len(eval_set) // cfg.batch_size)))]
    model.train()
    start = time.perf_counter() - elapsed
    limit = cfg.max_minutes * 60 if cfg.max_minutes else math.inf
    bar = tqdm(total=cfg.max_steps, initial=step, disable=not progress, desc="pretraining")

    def record(current_loss: float) -> None:
        history.append({"step": step, "train_loss": current_loss, "seconds": time.perf_counter() - start,
                        **evaluate(model, eval_batches)})

    def checkpoint_now() -> None:
        save_checkpoint(out / "checkpoint", model, optimizer, scheduler, out / "vocab.txt",
                        {"step": step, "history": history, "elapsed": time.perf_counter() - start,
                         "torch_rng": torch.get_rng_state()})

    loss_value = float("nan")
    try:
        while step < cfg.max_steps and time.perf_counter() - start < limit:
            collate = PretrainingCollator(tokenizer, generator=torch.Generator().manual_seed(cfg.seed * 7919 + step))
            batch = collate(batches_for_step(train_set, step, cfg.batch_size, cfg.seed))
            out_step = model(**batch, targets_only=True)
            optimizer.zero_grad(set_to_none=True)
            out_step.loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            step += 1
            loss_value = out_step.loss.item()
            bar.update(1)
            bar.set_postfix(loss=f"{loss_value:.3f}")
            if step % cfg.eval_every == 0:
                record(loss_value)
            if step % cfg.checkpoint_every == 0:
                checkpoint_now()
    except KeyboardInterrupt:  # Ctrl+C / "interrupt kernel": keep what was trained, then stop
        checkpoint_now()
        bar.close()
        print(f"interrupted at step {step}: checkpoint saved in {out / 'checkpoint'}; run again to resume")
        raise
    bar.close()
    if not history or history[-1]["step"] != step:
        record(loss_value)
    checkpoint_now()
    return {"step": step, "seconds": time.perf_counter() - start, "train_pairs": len(train_set),
            "final": history[-1], "history": history, "checkpoint": str(out / "checkpoint")}


def plot_history(history: list[dict]):
    """Loss curves and accuracies over steps (matplotlib figure)."""
    import matplotlib.pyplot as plt

    steps = [h["step"] for h in history]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.5))
    for key in ("train_loss", "loss", "mlm_loss", "nsp_loss"):
        left.plot(steps, [h[key] for h in history], label=key.replace("loss", "loss (eval)") if key != "train_loss"
                  else "loss (train batch)")
    left.set(xlabel="step", ylabel="loss", title="L = L_MLM + L_NSP")
    left.legend()
    right.plot(steps, [h["mlm_accuracy"] for h in history], label="masked-token accuracy")
    right.plot(steps, [h["nsp_accuracy"] for h in history], label="NSP accuracy")
    right.set(xlabel="step", ylim=(0, 1), title="held-out articles")
    right.legend()
    fig.tight_layout()
    return fig


@torch.no_grad()
def fill_mask(model, tokenizer: BertTokenizer, text: str, top_k: int = 5) -> list[list[tuple[str, float]]]:
    """For each [MASK] in `text`, the top_k pieces and their probabilities."""
    enc = tokenizer.encode(text)
    positions = [i for i, t in enumerate(enc.tokens) if t == "[MASK]"]
    if not positions:
        raise ValueError("the text has no [MASK]: write [MASK] where a piece should be predicted")
    model.eval()
    out = model(torch.tensor([enc.input_ids]), token_type_ids=torch.tensor([enc.token_type_ids]))
    probs = out.prediction_logits[0, positions].softmax(-1)  # (M, V)
    top = probs.topk(top_k, dim=-1)
    return [[(tokenizer.ids_to_tokens[int(i)], float(p)) for p, i in zip(ps, ids, strict=True)]
            for ps, ids in zip(top.values, top.indices, strict=True)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minibert.pretrain", description="Pretrain a tiny BERT on CPU.")
    parser.add_argument("--out", default="runs/tiny", help="run folder (resumes from its checkpoint if present)")
    parser.add_argument("--corpus", default="wikipedia", help="'wikipedia' (gensim's sample) or a folder of .txt")
    parser.add_argument("--minutes", type=float, default=None, help="stop after this much training time")
    parser.add_argument("--steps", type=int, default=None, help="stop after this many optimizer steps")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--eval-every", type=int, default=200)
    parser.add_argument("--limit-documents", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    if args.minutes is None and args.steps is None:
        parser.error("give --minutes or --steps (or both)")
    cfg = PretrainConfig(out_dir=args.out, corpus=args.corpus, max_minutes=args.minutes,
                         max_steps=args.steps or 100_000, batch_size=args.batch_size, max_seq_length=args.seq_len,
                         vocab_size=args.vocab_size, eval_every=args.eval_every,
                         limit_documents=args.limit_documents, seed=args.seed)
    result = train(cfg, progress=not args.no_progress)
    final = result["final"]
    print(f"step {result['step']} after {result['seconds'] / 60:.1f} min: masked-token accuracy "
          f"{final['mlm_accuracy']:.3f}, NSP accuracy {final['nsp_accuracy']:.3f}, loss {final['loss']:.3f} "
          f"(MLM {final['mlm_loss']:.3f} + NSP {final['nsp_loss']:.3f}); checkpoint: {result['checkpoint']}")
    return 0


if __name__ == "__main__" and "__file__" in globals():  # `python -m minibert.pretrain`, not a notebook cell
    sys.exit(main())
