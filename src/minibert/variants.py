# Generated from notebook 10_beyond_bert.ipynb by minibert_course.export: edit the notebook, not this file.
"""What came after BERT (chapter 10): RoBERTa's recipe and ELECTRA's objective, built from chapters 04-08's parts.

Why RoBERTa needs no new model: it is BERT's encoder and MLM head (`BertForMaskedLM`) trained without NSP, on rows
packed with whole sentences up to the full length (`pack_sentences`), masked anew every time a row is used
(`MLMCollator`), with more data, larger batches and longer training.
Why ELECTRA has two models: a small MLM *generator* proposes plausible replacements at the targets; the
*discriminator* (the model kept afterwards) says, at every position, whether the piece it sees is the original or a
replacement (`replace_with_samples`, `electra_loss`). Its loss has a term at every position, not only at the 15%.
Why the masking-rate study measures two things: a higher rate gives more targets per row but less context to predict
them from; the masked-token accuracy and a downstream score show which effect wins at a given size.
"""

from __future__ import annotations

import argparse
import inspect
import json
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from minibert.checkpoint import PreTrainedMixin
from minibert.cli import add_fields, arg, config_from_args
from minibert.config import BertConfig
from minibert.data import pad_rows, tokenized_corpus
from minibert.heads import BertForMaskedLM, masked_token_accuracy
from minibert.masking import IGNORE_INDEX, mask_tokens
from minibert.model import ACTIVATIONS, BertModel
from minibert.tokenization import BertTokenizer
from minibert.training import EpochSampler, Schedule, make_optimizer, train_step

__all__ = ["pack_sentences", "MLMCollator", "replace_with_samples", "electra_loss", "ElectraForPreTraining",
           "ElectraForPreTrainingOutput", "ElectraDiscriminatorPredictions", "Electra", "ElectraOutput",
           "generator_config", "rtd_accuracy", "StudyConfig", "corpus_rows", "eval_batches", "mlm_accuracy",
           "pretrain_rows", "sentence_features", "probe_sentiment", "check_study_folder", "masking_rate_study", "main",
           "plot_masking_rates"]

MASKING_RATES = (0.05, 0.15, 0.30, 0.45)  # the study: BERT's 15%, ModernBERT's 30%, one below and one above


def pack_sentences(documents: list[list[list[int]]], max_seq_length: int, cls_id: int, sep_id: int) -> list[list[int]]:
    """RoBERTa's FULL-SENTENCES inputs: `[CLS] pieces [SEP]` rows of at most `max_seq_length` positions.

    documents: each a list of sentences, each a list of piece ids (no special tokens).
    Whole sentences are taken in order and added to the current row while they fit; a sentence that does not fit
    starts the next row. A row runs on from one document into the next, with one extra `[SEP]` between the two
    documents (never at the start or the end of a row). A sentence longer than a whole row is cut into row-sized
    pieces. No row is empty; the last, shorter row is kept.
    """
    budget = max_seq_length - 2  # room for the pieces between [CLS] and the final [SEP]
    rows: list[list[int]] = []
    current: list[int] = []
    for document in documents:
        starts_document = True
        for sentence in document:
            for start in range(0, len(sentence), budget):
                piece = sentence[start:start + budget]
                joint = [sep_id] if current and starts_document else []
                if len(current) + len(joint) + len(piece) > budget:
                    rows.append([cls_id, *current, sep_id])
                    current, joint = [], []
                current += joint + piece
                starts_document = False
    if current:
        rows.append([cls_id, *current, sep_id])
    return rows


class MLMCollator:
    """Rows of ids (`[CLS] ... [SEP]`) -> a padded MLM batch, masked anew at every call: dynamic masking (chapter 04).
    No NSP label and a single segment (token_type_ids all 0), as RoBERTa trains.

    mask_replace_prob / random_replace_prob: BERT's 0.8 / 0.1; ELECTRA's generator input uses 0.85 / 0.0."""

    def __init__(self, tokenizer: BertTokenizer, mlm_probability: float = 0.15, mask_replace_prob: float = 0.8,
                 random_replace_prob: float = 0.1, generator: torch.Generator | None = None):
        self.pad_id, self.mask_id = tokenizer.vocab["[PAD]"], tokenizer.vocab["[MASK]"]
        self.special_ids = torch.tensor([tokenizer.vocab[t] for t in ("[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]")])
        self.vocab_size = len(tokenizer)
        self.mask_kw = dict(mlm_probability=mlm_probability, mask_replace_prob=mask_replace_prob,
                            random_replace_prob=random_replace_prob)
        self.generator = generator

    def __call__(self, rows: list[list[int]]) -> dict[str, torch.Tensor]:
        input_ids = pad_rows(rows, self.pad_id)  # (B, T)
        attention_mask = pad_rows([[1] * len(row) for row in rows])
        special = torch.isin(input_ids, self.special_ids)  # [UNK] is never a target either: its original is unknown
        inputs, labels = mask_tokens(input_ids, special, vocab_size=self.vocab_size, mask_token_id=self.mask_id,
                                     attention_mask=attention_mask, generator=self.generator, **self.mask_kw)
        return {"input_ids": inputs, "attention_mask": attention_mask,
                "token_type_ids": torch.zeros_like(input_ids), "labels": labels}


# ---- The runs of chapter 10: corpus rows, a compact loop for MLM and ELECTRA ----

@dataclass
class StudyConfig:
    """One setting for every run of the study: the same corpus, vocabulary, model, batches and steps."""

    corpus: str = field(default="course+wikipedia", metadata=arg(
        "'course+wikipedia' (chapter 06's `make pretrain` corpus: the tasks' training text and gensim's Wikipedia "
        "sample), 'wikipedia', 'course', or a folder of .txt"))
    limit_documents: int | None = field(default=None, metadata=arg("use only the first N documents"))
    vocab_size: int = field(default=4000, metadata=arg("WordPiece vocabulary to train"))
    max_seq_length: int = field(default=32, metadata=arg("positions per row", "--seq-len"))
    batch_size: int = field(default=64, metadata=arg("rows per step"))
    steps: int = field(default=3000, metadata=arg("pretraining steps per rate"))
    learning_rate: float = field(default=1e-3, metadata=arg("peak learning rate", "--lr"))
    seed: int = field(default=0, metadata=arg("seed of the weights, the batches and the masks"))
    rates: tuple[float, ...] = field(default=MASKING_RATES, metadata=arg("masking rates"))
    downstream_train: int = field(default=4000, metadata=arg("Rotten Tomatoes snippets that train the sentiment "
                                                             "probe (the downstream score)"))
    eval_rows: int = field(default=256, metadata=arg("held-out rows the MLM accuracy is measured on"))


def corpus_rows(cfg: StudyConfig, out: Path) -> tuple[BertTokenizer, list[list[int]], list[list[int]]]:
    """Train (or reuse) the vocabulary in `out`, and pack the corpus into FULL-SENTENCES rows: held-out documents
    (1 in 20, at least 2) for evaluation, the rest for training (the pretraining corpus pipeline,
    `data.tokenized_corpus`)."""
    tokenizer, tokenized, n_eval = tokenized_corpus(cfg.corpus, cfg.limit_documents, out / "vocab.txt",
                                                    cfg.vocab_size, purpose="the study")
    cls_id, sep_id = tokenizer.vocab["[CLS]"], tokenizer.vocab["[SEP]"]
    return (tokenizer, pack_sentences(tokenized[n_eval:], cfg.max_seq_length, cls_id, sep_id),
            pack_sentences(tokenized[:n_eval], cfg.max_seq_length, cls_id, sep_id)[:cfg.eval_rows])


def eval_batches(tokenizer: BertTokenizer, rows: list[list[int]], mlm_probability: float, batch_size: int = 64,
                 seed: int = 1234) -> list[dict[str, torch.Tensor]]:
    """Fixed evaluation batches: the same rows and the same masks for every model evaluated at this rate."""
    collate = MLMCollator(tokenizer, mlm_probability, generator=torch.Generator().manual_seed(seed))
    return [collate(rows[i:i + batch_size]) for i in range(0, len(rows), batch_size)]


@torch.no_grad()
def mlm_accuracy(model: BertForMaskedLM, batches: list[dict[str, torch.Tensor]]) -> float:
    """Masked-token accuracy over all targets of the batches (without dropout; the mode is restored)."""
    was_training = model.training
    model.eval()
    right = total = 0
    try:
        for batch in batches:
            logits = model(**batch, targets_only=True).logits  # (N, V)
            targets = batch["labels"][batch["labels"] != IGNORE_INDEX]
            n = len(targets)
            right += masked_token_accuracy(logits, targets) * n
            total += n
    finally:
        model.train(was_training)
    return right / max(1, total)


def pretrain_rows(model: nn.Module, collate: MLMCollator, rows: list[list[int]], steps: int, batch_size: int,
                  learning_rate: float, seed: int, log_every: int = 0) -> list[dict]:
    """Chapter 06's update (`train_step`: AdamW, clipping, warm-up then linear decay) on packed rows, masked anew at
    every step. Works for `BertForMaskedLM` (RoBERTa-style) and `Electra`. Returns the training losses."""
    torch.manual_seed(seed)
    optimizer = make_optimizer(model, learning_rate)
    schedule = Schedule.new(steps, max(1, steps // 10)) if steps > 1 else None
    sampler = EpochSampler(len(rows), batch_size, seed)
    model.train()
    # MLM logits at the targets only where the model offers it (BertForMaskedLM; Electra's generator always does)
    forward = {"targets_only": True} if "targets_only" in inspect.signature(model.forward).parameters else {}
    history = []
    for step in range(steps):
        batch = collate([rows[i] for i in sampler.indices(step)])
        lr = learning_rate * (schedule.factor(step) if schedule else 1.0)
        loss, _ = train_step(model, optimizer, batch, lr, 1.0, **forward)
        if log_every and ((step + 1) % log_every == 0 or step + 1 == steps):
            history.append({"step": step + 1, "loss": loss})
    return history


def replace_with_samples(input_ids: torch.Tensor, labels: torch.Tensor, generator_logits: torch.Tensor,
                         generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """ELECTRA's corruption: every MLM target gets a piece *sampled* from the generator's distribution.

    input_ids: (B, T) the original ids; labels: (B, T) original id at the targets, -100 elsewhere;
    generator_logits: (N, V) the generator's logits at the N targets, in row-major order (`targets_only=True`);
    generator: a seeded torch.Generator makes the samples repeatable.
    Returns the corrupted ids (B, T) and is_replaced (B, T), 1.0 where the corrupted piece differs from the original
    and 0.0 elsewhere: a sample that happens to equal the original piece counts as original.
    """
    targets = labels != IGNORE_INDEX  # (B, T)
    probs = generator_logits.detach().float().softmax(-1)  # (N, V); no gradient flows through a sample
    samples = torch.multinomial(probs, 1, generator=generator).squeeze(-1)  # (N,)
    corrupted = input_ids.clone()
    corrupted[targets] = samples
    return corrupted, (corrupted != input_ids).float()


def electra_loss(generator_loss: torch.Tensor, discriminator_logits: torch.Tensor, is_replaced: torch.Tensor,
                 attention_mask: torch.Tensor, rtd_weight: float = 50.0) -> tuple[torch.Tensor, torch.Tensor]:
    """ELECTRA's loss L = L_MLM(generator) + rtd_weight x L_RTD(discriminator).

    discriminator_logits, is_replaced, attention_mask: (B, T). L_RTD is the binary cross-entropy of "replaced or
    original", averaged over every real position (attention_mask 1: every piece, [CLS] and [SEP] included, padding
    excluded), not only over the targets. rtd_weight is the paper's lambda = 50: the RTD loss is a mean of easy
    binary decisions and is far smaller than the MLM loss. Returns (L, L_RTD).
    """
    real = attention_mask.bool()  # (B, T)
    rtd = F.binary_cross_entropy_with_logits(discriminator_logits[real].float(), is_replaced[real].float())
    return generator_loss + rtd_weight * rtd, rtd


@dataclass
class ElectraForPreTrainingOutput:
    """Field names as in transformers: the RTD loss and the per-position logits (B, T) (> 0: "replaced")."""

    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None


class ElectraDiscriminatorPredictions(nn.Module):
    """One logit per position: dense -> the config's activation (GELU) -> dense to 1 (names as in transformers)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.act = ACTIVATIONS[config.hidden_act]
        self.dense_prediction = nn.Linear(config.hidden_size, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dense_prediction(self.act(self.dense(x))).squeeze(-1)  # (B, T, H) -> (B, T)


class ElectraForPreTraining(PreTrainedMixin, nn.Module):
    """ELECTRA's discriminator: BERT's encoder (no pooler) + a replaced-or-original logit at every position. Its
    state-dict keys are transformers' `ElectraForPreTraining` ones (`electra.embeddings...`,
    `discriminator_predictions...`); fine-tuning later starts from `electra`, as from `bert` (chapter 07)."""

    base_model_prefix = "electra"

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.electra = BertModel(config, add_pooling_layer=False)
        self.discriminator_predictions = ElectraDiscriminatorPredictions(config)
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None) -> ElectraForPreTrainingOutput:
        """labels: (B, T) 1 where the piece was replaced, 0 where it is the original."""
        hidden = self.electra(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state  # (B, T, H)
        logits = self.discriminator_predictions(hidden)  # (B, T)
        loss = None
        if labels is not None:  # L_RTD, the replaced-token loss of `electra_loss` (one loss, the exercise's)
            real = torch.ones_like(labels) if attention_mask is None else attention_mask  # (B, T)
            _, loss = electra_loss(logits.new_zeros(()), logits, labels, real, rtd_weight=1.0)
        return ElectraForPreTrainingOutput(loss, logits)


def generator_config(config: BertConfig, divisor: int = 4) -> BertConfig:
    """The generator: the discriminator's depth at 1/divisor of its width (ELECTRA: 1/4 to 1/2 works best; a
    generator as strong as the discriminator makes the task too hard for it)."""
    heads = max(1, config.num_attention_heads // divisor)
    hidden = max(heads, config.hidden_size // divisor // heads * heads)
    return replace(config, hidden_size=hidden, num_attention_heads=heads,
                   intermediate_size=max(1, config.intermediate_size // divisor))


@dataclass
class ElectraOutput:
    loss: torch.Tensor
    generator_loss: torch.Tensor  # L_MLM at the targets
    discriminator_loss: torch.Tensor  # L_RTD at every real position
    logits: torch.Tensor  # (B, T) the discriminator's
    is_replaced: torch.Tensor  # (B, T)
    attention_mask: torch.Tensor  # (B, T)


class Electra(nn.Module):
    """Generator and discriminator trained together; only the discriminator is kept. (The paper also shares the
    token embeddings of the two; here each has its own, since the generator is narrower.)"""

    def __init__(self, config: BertConfig, generator_divisor: int = 4, rtd_weight: float = 50.0):
        super().__init__()
        self.config = config
        self.generator = BertForMaskedLM(generator_config(config, generator_divisor))
        self.discriminator = ElectraForPreTraining(config)
        self.rtd_weight = rtd_weight

    def forward(self, input_ids, attention_mask, token_type_ids=None, labels=None,
                sampler: torch.Generator | None = None) -> ElectraOutput:
        """input_ids: (B, T) the generator's masked input; labels: (B, T) the originals at the targets."""
        gen = self.generator(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                             labels=labels, targets_only=True)
        original = torch.where(labels != IGNORE_INDEX, labels, input_ids)  # (B, T) the uncorrupted row
        corrupted, is_replaced = replace_with_samples(original, labels, gen.logits, sampler)
        logits = self.discriminator(input_ids=corrupted, attention_mask=attention_mask,
                                    token_type_ids=token_type_ids).logits  # (B, T)
        loss, rtd = electra_loss(gen.loss, logits, is_replaced, attention_mask, self.rtd_weight)
        return ElectraOutput(loss, gen.loss, rtd, logits, is_replaced, attention_mask)


def rtd_accuracy(out: ElectraOutput) -> dict[str, float]:
    """The discriminator's accuracy over real positions, and on the replaced ones alone (the hard part)."""
    real = out.attention_mask.bool()
    said = out.logits > 0
    replaced = out.is_replaced.bool() & real
    right = said == out.is_replaced.bool()
    return {"rtd_accuracy": right[real].float().mean().item(),
            "replaced_share": replaced.sum().item() / max(1, real.sum().item()),
            "replaced_found": right[replaced].float().mean().item() if replaced.any() else float("nan")}


# ---- The masking-rate study ----


@torch.no_grad()
def sentence_features(encoder: BertModel, tokenizer: BertTokenizer, texts: list[str], max_length: int = 64,
                      batch_size: int = 128) -> torch.Tensor:
    """(N, H): the mean of the last hidden states over each text's real pieces, [CLS] and [SEP] included.
    The mean, not [CLS]: without NSP nothing in pretraining gives the [CLS] state a meaning."""
    was_training = encoder.training
    encoder.eval()
    rows = [tokenizer.encode(t)[:max_length - 1] + [tokenizer.vocab["[SEP]"]] for t in texts]
    out = []
    try:
        for i in range(0, len(rows), batch_size):
            chunk = rows[i:i + batch_size]
            ids, mask = pad_rows(chunk, tokenizer.vocab["[PAD]"]), pad_rows([[1] * len(r) for r in chunk])  # (B, T)
            hidden = encoder(ids, mask).last_hidden_state  # (B, T, H)
            real = mask[..., None].to(hidden.dtype)  # (B, T, 1)
            out.append((hidden * real).sum(1) / real.sum(1))  # (B, H)
    finally:
        encoder.train(was_training)
    return torch.cat(out)


def probe_sentiment(encoder: BertModel, tokenizer: BertTokenizer, limit_train: int = 4000, max_length: int = 64,
                    steps: int = 200) -> float:
    """A downstream score that reads what pretraining put into the encoder: a logistic-regression probe on frozen
    sentence features (`sentence_features`), trained on Rotten Tomatoes' train split, accuracy on its test split
    (chapter 08's data). Frozen features and a linear classifier: no fine-tuning noise, a few seconds per model."""
    from minibert.task_data import load_rotten_tomatoes

    train, test = load_rotten_tomatoes("train")[:limit_train], load_rotten_tomatoes("test")
    max_length = min(max_length, encoder.config.max_position_embeddings)  # a snippet longer than that is cut
    x_train = sentence_features(encoder, tokenizer, [t for t, _ in train], max_length)
    x_test = sentence_features(encoder, tokenizer, [t for t, _ in test], max_length)
    mean, std = x_train.mean(0), x_train.std(0) + 1e-6
    x_train, x_test = (x_train - mean) / std, (x_test - mean) / std
    y_train = torch.tensor([y for _, y in train])
    probe = nn.Linear(x_train.shape[1], 2)
    optimizer = torch.optim.LBFGS(probe.parameters(), max_iter=steps, line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        loss = F.cross_entropy(probe(x_train), y_train) + 1e-3 * probe.weight.pow(2).sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    with torch.no_grad():
        predicted = probe(x_test).argmax(-1)
    return (predicted == torch.tensor([y for _, y in test])).float().mean().item()


TRAINING_FIELDS = ("corpus", "limit_documents", "vocab_size", "max_seq_length", "batch_size", "steps", "learning_rate",
                   "seed")  # what the vocabulary and the models kept in a study folder depend on


def check_study_folder(cfg: StudyConfig, out: Path) -> None:
    """Record the setting in `out`/study_config.json, or refuse a folder made with another one. Why: a resumed study
    reuses the folder's vocabulary and each rate's model, so a study run again with a new corpus, length or seed
    into an old folder would report the old models under the new setting. A folder with models but no record (made
    before the record existed) is refused too, since its setting is unknown."""
    wanted = {k: v for k, v in json.loads(json.dumps(asdict(cfg))).items() if k in TRAINING_FIELDS}
    record = out / "study_config.json"
    if record.exists():
        found = {k: v for k, v in json.loads(record.read_text(encoding="utf-8")).items() if k in TRAINING_FIELDS}
    elif (out / "vocab.txt").exists() or any(out.glob("rate-*/study_row.json")):
        raise ValueError(f"{out} holds a study made before its setting was recorded: its vocabulary and models may "
                         f"come from another setting. Give another --out, or delete {out} to run the study anew.")
    else:
        found = wanted
    changed = {k: (found.get(k), v) for k, v in wanted.items() if found.get(k) != v}
    if changed:
        said = ", ".join(f"{k} {a!r} there, {b!r} now" for k, (a, b) in changed.items())
        raise ValueError(f"{out} holds a study made with another setting ({said}): its vocabulary and models would "
                         f"be reused. Give another --out, or delete {out} to run the study anew.")
    out.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps(wanted, indent=2), encoding="utf-8")


def masking_rate_study(cfg: StudyConfig, out: str | Path = "runs/masking-rates", progress: bool = True) -> list[dict]:
    """For each rate: pretrain a tiny BertForMaskedLM (RoBERTa-style) with the same everything else; measure the
    masked-token accuracy on held-out rows (masked at 15% for all, and at the run's own rate), and the sentiment
    probe (`probe_sentiment`). The first row (rate 0) is the untrained model: the probe's score without
    pretraining. Each rate's model is kept in `out`/rate-R and reused when the study is run again (an interrupted
    study resumes); the rows go to `out`/masking_rates.json. A folder made with another setting is refused
    (`check_study_folder`): its vocabulary and models would be reused silently."""
    out = Path(out)
    check_study_folder(cfg, out)
    tokenizer, train_rows, held_out = corpus_rows(cfg, out)
    at_15 = eval_batches(tokenizer, held_out, 0.15)
    config = BertConfig.tiny(vocab_size=len(tokenizer), max_position_embeddings=cfg.max_seq_length)
    torch.manual_seed(cfg.seed)
    untrained = BertForMaskedLM(config)
    results = [{"rate": 0.0, "steps": 0, "accuracy_at_15": mlm_accuracy(untrained, at_15), "accuracy_at_rate": None,
                "sentiment_probe": probe_sentiment(untrained.bert, tokenizer, cfg.downstream_train)}]
    for rate in cfg.rates:
        start = time.perf_counter()
        folder = out / f"rate-{rate:.2f}"
        done = folder / "study_row.json"
        if done.exists():  # made with this setting, steps included (`check_study_folder`)
            row = json.loads(done.read_text(encoding="utf-8"))
            model = BertForMaskedLM.from_pretrained(folder)
        else:
            torch.manual_seed(cfg.seed)
            model = BertForMaskedLM(config)
            collate = MLMCollator(tokenizer, rate, generator=torch.Generator().manual_seed(cfg.seed))
            history = pretrain_rows(model, collate, train_rows, cfg.steps, cfg.batch_size, cfg.learning_rate,
                                    cfg.seed, log_every=max(1, cfg.steps // 10))
            model.save_pretrained(folder)
            tokenizer.save_pretrained(folder)
            row = {"rate": rate, "steps": cfg.steps, "train_loss": history[-1]["loss"],
                   "pretrain_seconds": time.perf_counter() - start}
            done.write_text(json.dumps(row, indent=2), encoding="utf-8")
        row["accuracy_at_15"] = mlm_accuracy(model, at_15)
        row["accuracy_at_rate"] = mlm_accuracy(model, eval_batches(tokenizer, held_out, rate))
        row["sentiment_probe"] = probe_sentiment(model.bert, tokenizer, cfg.downstream_train)
        results.append(row)
        if progress:
            print(f"rate {rate:.2f}: masked-token accuracy {row['accuracy_at_15']:.3f} (at 15%) "
                  f"{row['accuracy_at_rate']:.3f} (at its rate), sentiment probe {row['sentiment_probe']:.3f}, "
                  f"{time.perf_counter() - start:.0f} s", flush=True)
    (out / "masking_rates.json").write_text(json.dumps({"config": asdict(cfg), "rows": results}, indent=2),
                                            encoding="utf-8")
    return results


def plot_masking_rates(rows: list[dict]):
    """Masked-token accuracy (at 15% and at the run's own rate) and the sentiment probe against the masking rate;
    the untrained model (rate 0) as a dashed line."""
    import matplotlib.pyplot as plt

    trained = [r for r in rows if r["rate"] > 0]
    untrained = next((r for r in rows if r["rate"] == 0), None)
    rates = [100 * r["rate"] for r in trained]
    fig, (mlm, task) = plt.subplots(1, 2, figsize=(10, 3.5))
    mlm.plot(rates, [r["accuracy_at_15"] for r in trained], marker="o", label="held out, masked at 15%")
    mlm.plot(rates, [r["accuracy_at_rate"] for r in trained], marker="s", label="held out, masked at its own rate")
    mlm.set(xlabel="masking rate in pretraining (%)", ylabel="masked-token accuracy", title="pretraining",
            ylim=(0, None))
    mlm.legend()
    task.plot(rates, [100 * r["sentiment_probe"] for r in trained], marker="o", color="C2", label="pretrained")
    if untrained:
        task.axhline(100 * untrained["sentiment_probe"], color="gray", linestyle="--", label="untrained encoder")
    task.set(xlabel="masking rate in pretraining (%)", ylabel="test accuracy (%)", title="sentiment probe")
    task.legend()
    fig.tight_layout()
    return fig


def main(argv: list[str] | None = None) -> int:
    """`python -m minibert.variants --masking-rates`: the study of chapter 10 (about 22 minutes on 2 cores)."""
    parser = argparse.ArgumentParser(prog="python -m minibert.variants", description=main.__doc__)
    parser.add_argument("--masking-rates", action="store_true", help="run the masking-rate study")
    parser.add_argument("--out", default="runs/masking-rates", help="folder of the study's models and JSON")
    add_fields(parser, StudyConfig)  # every field of the study's setting is a flag
    args = parser.parse_args(argv)
    if not args.masking_rates:
        parser.error("nothing to do: give --masking-rates")
    if any(not 0 < r < 1 for r in args.rates):
        parser.error(f"--rates must lie between 0 and 1 (a share of the positions), got {list(args.rates)}")
    cfg = config_from_args(StudyConfig, args)
    try:
        check_study_folder(cfg, Path(args.out))
    except ValueError as e:
        parser.error(str(e))
    masking_rate_study(cfg, args.out)
    print(f"wrote {Path(args.out) / 'masking_rates.json'}")
    return 0


if __name__ == "__main__" and "__file__" in globals():  # `python -m minibert.variants`, not a notebook cell
    raise SystemExit(main())
