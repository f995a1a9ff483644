# Generated from notebook 08_finetuning.ipynb by minibert_course.export: edit the notebook, not this file.
"""Fine-tuning: one loop for the three task heads of chapter 07, on real data, from three starting points (chapter 08).

Why one loop: the three tasks differ only in their examples, their head and their metric, so a task is three small
functions (`Task`: featurize, collate, evaluate) and the loop is made of the parts every loop uses (`minibert.training`,
chapter 06): AdamW without decay on biases and LayerNorm (`make_optimizer`), warm-up and linear decay (`Schedule`),
batches that are a function of (seed, step) (`EpochSampler`), `train_step`, Ctrl+C that stops between steps
(`StopSignals`) and checkpoints written atomically (`save_checkpoint`), so a run resumes bit for bit where it stopped.
Why three starting points: `scratch` (random weights), a checkpoint folder (ours from chapter 06,
`runs/tiny/checkpoint`) and `minilm` (real weights) isolate what pretraining buys: the same data, the same loop, only
the first weights differ.
Why a fixed number of epochs and no "best epoch": the dev figures after each epoch are for watching; the reported test
figure is the last model's, so no choice was ever made on the test set.
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Literal

import torch
from torch import nn

from minibert.cli import add_fields, arg
from minibert.config import BertConfig
from minibert.data import pad_rows
from minibert.masking import IGNORE_INDEX
from minibert.metrics import (
    accuracy,
    bio_entities,
    confusion_matrix,
    entity_f1,
    entity_f1_by_type,
    f1_score,
    squad_scores,
    squad_scores_by_type,
)
from minibert.task_data import WNUT_LABELS, load_qa, load_rotten_tomatoes, load_wnut16
from minibert.tasks import (
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
    align_labels,
    best_span,
    encode_words,
    prepare_qa_features,
)
from minibert.tokenization import CLS, SEP, BertTokenizer, pretrained_dir
from minibert.training import (
    EpochSampler,
    Schedule,
    StopSignals,
    latest_checkpoint,
    load_trainer_state,
    make_optimizer,
    save_checkpoint,
    train_step,
)

__all__ = ["train", "FinetuneConfig", "Task", "build_model", "extend_positions", "collate", "predict",
           "sentiment_features", "sentiment_evaluate", "ner_features", "ner_evaluate", "qa_features", "qa_answers",
           "qa_evaluate", "answer_question", "answer_sentences", "freeze_lower_layers", "label_pieces", "word_tags",
           "main"]


@dataclass
class FinetuneConfig:
    """A fine-tuning run; every field is also a flag of `python -m minibert.finetune`."""

    task: str = field(default="sentiment", metadata=arg("sentiment (Rotten Tomatoes), ner (WNUT-16 tweets) or qa "
                                                         "(questions on the Wikipedia sample)"))
    init: str = field(default="minilm", metadata=arg("first weights: 'scratch', 'minilm' (the real MiniLM weights) or "
                                                      "a checkpoint folder, e.g. runs/tiny/checkpoint"))
    out_dir: str | None = field(default=None, metadata=arg("run folder; resumes from its checkpoint (default: "
                                                            "runs/finetune/TASK-INIT)", "--out"))
    like: str | None = field(default=None, metadata=arg("with --init scratch: the size and vocabulary of this "
                                                         "checkpoint folder (default: BertConfig.tiny() with "
                                                         "bert-base-uncased's vocabulary)"))
    epochs: int = field(default=3, metadata=arg("passes over the training set"))
    batch_size: int = field(default=32, metadata=arg("examples (QA: windows) per step"))
    learning_rate: float | None = field(default=None, metadata=arg("peak learning rate (default: 1e-4 for a model "
                                                                     "256 or more wide, 1e-3 for a narrower one)",
                                                                     "--lr"))
    warmup_ratio: float = field(default=0.1, metadata=arg("share of the steps spent warming up"))
    weight_decay: float = field(default=0.01, metadata=arg("AdamW weight decay (weight matrices only)"))
    max_grad_norm: float = field(default=1.0, metadata=arg("clip the gradient norm to this"))
    max_seq_length: int | None = field(default=None, metadata=arg("positions per input (default: 64; qa: 192)",
                                                                   "--seq-len"))
    doc_stride: int = field(default=64, metadata=arg("qa: context pieces shared by two windows of a long context"))
    label_all_pieces: bool = field(default=False, metadata=arg("ner: label every piece of a word, not the first"))
    qa_context: Literal["paragraph", "sentence"] = field(default="paragraph", metadata=arg(
        "qa: train on the whole 'paragraph' or only on the 'sentence' that holds the answer (dev and test: always the "
        "paragraph)"))
    freeze_layers: int = field(default=0, metadata=arg("keep the embeddings and the first N encoder layers as "
                                                        "loaded: train only the layers above and the head"))
    limit_train: int | None = field(default=None, metadata=arg("use only the first N training examples"))
    limit_eval: int | None = field(default=None, metadata=arg("use only the first N dev and test examples"))
    seed: int = field(default=0, metadata=arg("seed of the new head, the batch order and dropout"))

    def seq_length(self) -> int:
        return self.max_seq_length or (192 if self.task == "qa" else 64)

    def run_dir(self) -> Path:
        if self.out_dir:
            return Path(self.out_dir)
        return Path("runs/finetune") / f"{self.task}-{_init_name(self.init)}"


def _init_name(init: str) -> str:
    """'scratch', 'minilm', or the run folder's name for a checkpoint folder (runs/tiny/checkpoint -> 'tiny')."""
    path = Path(init)
    return init if init in ("scratch", "minilm") else (path.parent.name if path.name == "checkpoint" else path.name)


def collate(features: list[dict]) -> dict[str, torch.Tensor]:
    """Pad a list of features into a batch: ids, segments and the attention mask with 0, piece labels with -100;
    a number per feature (a sentence label, an answer position) becomes a (B,) tensor."""
    batch = {}
    for key in features[0]:
        if isinstance(features[0][key], list):
            batch[key] = pad_rows([f[key] for f in features], IGNORE_INDEX if key == "labels" else 0)  # (B, T)
        else:
            batch[key] = torch.tensor([f[key] for f in features])  # (B,)
    if "attention_mask" not in batch:
        batch["attention_mask"] = pad_rows([[1] * len(f["input_ids"]) for f in features])
    return batch


@torch.no_grad()
def predict(model: nn.Module, features: list[dict], batch_size: int = 64) -> list:
    """The model's outputs, one per feature, without dropout (the model is left in the mode it was in)."""
    was_training = model.training
    model.eval()
    outputs = []
    try:
        for i in range(0, len(features), batch_size):
            part = features[i:i + batch_size]
            inputs = {k: v for k, v in collate(part).items() if k in ("input_ids", "token_type_ids", "attention_mask")}
            out = model(**inputs)  # no labels: the outputs only
            for j, f in enumerate(part):
                n = len(f["input_ids"])  # drop the padding
                if hasattr(out, "start_logits"):  # QA: (start, end) scores per position
                    outputs.append((out.start_logits[j, :n], out.end_logits[j, :n]))
                else:
                    outputs.append(out.logits[j, :n] if out.logits.dim() == 3 else out.logits[j])
    finally:
        model.train(was_training)
    return outputs


def _truncate(tokens: list[str], length: int) -> list[str]:
    return [CLS, *tokens[:length - 2], SEP]


def sentiment_features(tokenizer: BertTokenizer, examples: list[tuple[str, int]], cfg: FinetuneConfig) -> list[dict]:
    """(text, label) -> `[CLS] text [SEP]`, cut to max_seq_length, with its label (1 = fresh, 0 = rotten)."""
    return [{"input_ids": tokenizer.convert_tokens_to_ids(_truncate(tokenizer.tokenize(text), cfg.seq_length())),
             "labels": label} for text, label in examples]


_ERROR_EXAMPLES = 6  # wrong answers kept per evaluation with details=True


def sentiment_evaluate(model, tokenizer, examples, cfg: FinetuneConfig, details: bool = False) -> dict:
    """Accuracy; with details, also an "analysis": the confusion matrix (rows: true class) and the wrong answers the
    model was surest of."""
    logits = predict(model, sentiment_features(tokenizer, examples, cfg))
    predicted, labels = [int(x.argmax()) for x in logits], [label for _, label in examples]
    scores: dict = {"accuracy": accuracy(predicted, labels)}
    if details:
        fresh = [float(x.softmax(-1)[1]) for x in logits]  # P(fresh)
        wrong = sorted((i for i in range(len(labels)) if predicted[i] != labels[i]), key=lambda i: -abs(fresh[i] - 0.5))
        classes = TASKS["sentiment"].labels
        scores["analysis"] = {"classes": list(classes), "confusion": confusion_matrix(labels, predicted, len(classes)),
                              "errors": [{"text": examples[i][0], "gold": classes[labels[i]],
                                          "predicted": classes[predicted[i]], "p_fresh": round(fresh[i], 3)}
                                         for i in wrong[:_ERROR_EXAMPLES]]}
    return scores


def _ner_encode(tokenizer: BertTokenizer, words: list[str], cfg: FinetuneConfig) -> tuple[list[str], list]:
    tokens, word_ids = encode_words(tokenizer, words)
    keep = cfg.seq_length() - 2  # a tweet longer than that loses its last pieces (and their words: tagged O)
    return _truncate(tokens, cfg.seq_length()), [None, *word_ids[:keep], None]


def ner_features(tokenizer: BertTokenizer, examples: list[tuple[list[str], list[str]]],
                 cfg: FinetuneConfig) -> list[dict]:
    """(words, tags) -> pieces with the word labels on them (align_labels: first piece, or all pieces)."""
    label_id = {label: i for i, label in enumerate(WNUT_LABELS)}
    features = []
    for words, tags in examples:
        tokens, word_ids = _ner_encode(tokenizer, words, cfg)
        features.append({"input_ids": tokenizer.convert_tokens_to_ids(tokens),
                         "labels": align_labels(word_ids, [label_id[t] for t in tags], cfg.label_all_pieces)})
    return features


def _entities(words: list[str], tags: list[str]) -> list[list[str]]:
    return [[kind, " ".join(words[start:end + 1])] for kind, start, end in bio_entities(tags)]


def ner_evaluate(model, tokenizer, examples, cfg: FinetuneConfig, details: bool = False) -> dict:
    """Each word's tag is the prediction at its first piece (a word with no piece left is tagged O); entity F1 over
    the words' tags, as seqeval counts it. With details, also an "analysis": F1 per entity type and the first tweets
    whose entities the model got wrong (gold and predicted as [type, words])."""
    logits = predict(model, ner_features(tokenizer, examples, cfg))
    predicted = []
    for (words, _), scores in zip(examples, logits, strict=True):  # scores: (T, labels)
        _, word_ids = _ner_encode(tokenizer, words, cfg)
        predicted.append(word_tags(word_ids, [WNUT_LABELS[int(i)] for i in scores.argmax(-1)], len(words)))
    gold = [tags for _, tags in examples]
    scores = entity_f1(gold, predicted)
    result: dict = {"entity_f1": scores["f1"], "precision": scores["precision"], "recall": scores["recall"]}
    if details:
        wrong = [i for i in range(len(examples)) if bio_entities(gold[i]) != bio_entities(predicted[i])]
        result["analysis"] = {"per_type": entity_f1_by_type(gold, predicted),
                              "errors": [{"text": " ".join(examples[i][0]),
                                          "gold": _entities(examples[i][0], gold[i]),
                                          "predicted": _entities(examples[i][0], predicted[i])}
                                         for i in wrong[:_ERROR_EXAMPLES]]}
    return result


def qa_features(tokenizer: BertTokenizer, examples: list[dict], cfg: FinetuneConfig) -> list[dict]:
    """Question + context -> training windows of max_seq_length (overlapping by doc_stride), each with its answer's
    first and last piece (0, 0: `[CLS]`, when this window does not hold the answer, as in BERT's SQuAD code). A
    question too long to leave more than doc_stride pieces of context is left out, with a warning that counts them
    (generated questions echo a whole sentence). With qa_context="sentence" the context is the answer's sentence."""
    if cfg.qa_context == "sentence":
        examples = answer_sentences(examples)
    features, skipped = [], 0
    for example in examples:
        answer = example["answers"][0]
        if len(tokenizer.tokenize(example["question"])) + 3 + cfg.doc_stride >= cfg.seq_length():
            skipped += 1
            continue
        for f in prepare_qa_features(tokenizer, example["question"], example["context"], cfg.seq_length(),
                                     cfg.doc_stride, answer["text"], answer["answer_start"]):
            features.append({"input_ids": f["input_ids"], "token_type_ids": f["token_type_ids"],
                             "attention_mask": f["attention_mask"], "start_positions": f["start_position"],
                             "end_positions": f["end_position"]})
    if skipped:
        warnings.warn(f"{skipped} of {len(examples)} training questions left out: too long for max_seq_length="
                      f"{cfg.seq_length()} with doc_stride={cfg.doc_stride}", stacklevel=2)
    return features


def answer_sentences(examples: list[dict]) -> list[dict]:
    """Each QA example with its context cut down to the sentence that holds its first answer (only that answer is
    kept, its answer_start moved with it); an answer that crosses a sentence end keeps its whole paragraph.

    Why (our reading of chapter 08's quick runs, not a measurement): a paragraph usually holds a year or a number
    somewhere, and the generated questions ask for one far more often than for a name, so a briefly trained model
    learns "find the year", not "read the question"; one sentence holds fewer candidates of each kind, so the question
    word has to decide. The sentences are cut by the generator's own splitter (`qa_generation.sentence_offsets`), the
    one its templates read, so a generated answer lies within one sentence; other answers keep the paragraph."""
    from minibert.qa_generation import sentence_offsets

    cut = []
    for example in examples:
        answer = example["answers"][0]
        start, end = answer["answer_start"], answer["answer_start"] + len(answer["text"])
        for offset, sentence in sentence_offsets(example["context"]):
            if offset <= start and end <= offset + len(sentence):
                example = {**example, "context": sentence,
                           "answers": [{"text": answer["text"], "answer_start": start - offset}]}
                break
        cut.append(example)
    return cut


def answer_question(model, tokenizer: BertTokenizer, question: str, context: str, max_seq_length: int = 192,
                    doc_stride: int = 64) -> dict:
    """The best answer span over all windows of the context (score = start logit + end logit, `best_span`): its text,
    its character span in the context (start, end) and its score."""
    windows = prepare_qa_features(tokenizer, question, context, max_seq_length, doc_stride)
    outputs = predict(model, [{k: w[k] for k in ("input_ids", "token_type_ids", "attention_mask")} for w in windows])
    best = {"text": "", "start": 0, "end": 0, "score": -math.inf}
    for window, (start_logits, end_logits) in zip(windows, outputs, strict=True):
        spans = best_span(start_logits, end_logits, torch.tensor(window["context_mask"]), n_best=1)
        if spans and spans[0][2] > best["score"]:
            start, end, score = spans[0]
            first, last = window["offsets"][start][0], window["offsets"][end][1]
            best = {"text": context[first:last], "start": first, "end": last, "score": score}
    return best


def qa_answers(model, tokenizer, examples: list[dict], cfg: FinetuneConfig) -> dict[str, str]:
    """The answer text per question id."""
    return {e["id"]: answer_question(model, tokenizer, e["question"], e["context"], cfg.seq_length(),
                                     cfg.doc_stride)["text"] for e in examples}


def label_pieces(model, tokenizer: BertTokenizer, text: str, max_seq_length: int = 128) -> list[tuple[str, str]]:
    """(piece, predicted label) for each piece of `text` (cut to max_seq_length), from a token-classification
    model whose config names its labels (id2label)."""
    tokens = tokenizer.tokenize(text)[:max_seq_length - 2]
    (logits,) = predict(model, [{"input_ids": tokenizer.convert_tokens_to_ids([CLS, *tokens, SEP])}])  # (T, C)
    return [(t, model.config.id2label[int(i)]) for t, i in zip(tokens, logits[1:-1].argmax(-1), strict=True)]


def qa_evaluate(model, tokenizer, examples, cfg: FinetuneConfig, details: bool = False) -> dict:
    """SQuAD EM and F1; with details, also an "analysis": both per question type and the first questions answered
    with no word of any gold answer (F1 0)."""
    predictions = qa_answers(model, tokenizer, examples, cfg)
    data = [{"title": "", "paragraphs": [{"context": e["context"], "qas": [e]}]} for e in examples]
    scores: dict = squad_scores(predictions, data)
    if details:
        wrong = [e for e in examples if max(f1_score(predictions[e["id"]], a["text"]) for a in e["answers"]) == 0]
        scores["analysis"] = {"per_type": squad_scores_by_type(predictions, examples),
                              "errors": [{"question": e["question"], "gold": e["answers"][0]["text"],
                                          "predicted": predictions[e["id"]]} for e in wrong[:_ERROR_EXAMPLES]]}
    return scores


@dataclass(frozen=True)
class Task:
    """What the loop needs to know about a task: its head, its data, its inputs and its metric."""

    model_class: type
    labels: tuple[str, ...] | None  # the head's label names (None: QA has no labels)
    load: Callable[[str], list]  # split name -> examples
    featurize: Callable[[BertTokenizer, list, FinetuneConfig], list[dict]]  # examples -> training features
    evaluate: Callable[..., dict]  # (model, tokenizer, examples, cfg, details=False) -> metrics (+ "analysis")
    metric: str  # the headline metric of `evaluate`


TASKS = {
    "sentiment": Task(BertForSequenceClassification, ("rotten", "fresh"), load_rotten_tomatoes, sentiment_features,
                      sentiment_evaluate, "accuracy"),
    "ner": Task(BertForTokenClassification, tuple(WNUT_LABELS), load_wnut16, ner_features, ner_evaluate, "entity_f1"),
    "qa": Task(BertForQuestionAnswering, None, load_qa, qa_features, qa_evaluate, "f1"),
}


def word_tags(word_ids: Sequence[int | None], piece_tags: Sequence[str], n_words: int) -> list[str]:
    """One tag per word, read from the pieces: the tag predicted at the word's first piece, 'O' for a word with no
    piece left. Why the first piece: it is the one align_labels trained with the word's label.

    word_ids: (T,) word index per position, None for [CLS], [SEP] and padding; piece_tags: (T,) predicted tags.
    """
    if len(word_ids) != len(piece_tags):
        raise ValueError(f"word_tags: {len(word_ids)} word ids but {len(piece_tags)} piece tags")
    tags = ["O"] * n_words
    tagged = set()
    for word, tag in zip(word_ids, piece_tags, strict=True):
        if word is not None and word not in tagged:
            tags[word] = tag
            tagged.add(word)
    return tags


def extend_positions(model: nn.Module, positions: int) -> None:
    """Give a model trained on short inputs `positions` position embeddings: the learned rows are repeated (row i
    starts as row i mod n), as Longformer initialised its 4,096 positions from RoBERTa's 512 (Beltagy et al. 2020).
    Chapter 06's checkpoint saw 32 positions; fine-tuning then teaches the copies where they are."""
    embeddings = model.bert.embeddings
    learned = embeddings.position_embeddings.weight.data  # (n, H)
    longer = nn.Embedding(positions, learned.shape[1])
    longer.weight.data.copy_(learned[torch.arange(positions) % learned.shape[0]])
    embeddings.position_embeddings = longer
    model.config.max_position_embeddings = model.bert.config.max_position_embeddings = positions


def freeze_lower_layers(model: nn.Module, n_layers: int) -> None:
    """For n_layers >= 1, keep the embeddings (position rows added by `extend_positions` included) and the first
    `n_layers` encoder layers at their loaded weights (requires_grad False: no gradient, so AdamW leaves them alone);
    the layers above, the pooler (sentiment) and the new head still train. 0 freezes nothing.

    Why: fine-tuning mostly changes the top layers of BERT anyway (Merchant et al. 2020, "What happens to BERT
    embeddings during fine-tuning?"), and training only the top quarter of its layers keeps about 90% of the full
    fine-tuning quality (Lee et al. 2019, "What would Elsa do? Freezing layers during transformer fine-tuning", with
    12- and 24-layer models on GLUE-style tasks); ULMFiT (Howard and Ruder 2018) unfreezes gradually from the top to
    avoid forgetting what pretraining learned. With a few hundred steps on a small, lopsided training set, the lower
    layers are what training every layer can damage before it learns anything useful (our reading of chapter 08's
    quick QA runs, where freezing is what made the model read the question). Each step is also cheaper: layers below
    the first trained one need no backward pass."""
    layers = model.bert.encoder.layer
    if not 0 <= n_layers <= len(layers):
        raise ValueError(f"--freeze-layers {n_layers}: this model has {len(layers)} encoder layers; give 0 (train "
                         f"everything) to {len(layers)} (train only the head, and the pooler if it has one)")
    if n_layers:
        for module in (model.bert.embeddings, *layers[:n_layers]):
            module.requires_grad_(False)


def build_model(cfg: FinetuneConfig) -> tuple[nn.Module, BertTokenizer, str]:
    """The task model at its first weights, its tokenizer, and a line saying what was loaded."""
    task = TASKS[cfg.task]
    head = {"id2label": dict(enumerate(task.labels))} if task.labels else {}
    torch.manual_seed(cfg.seed)  # the new head's initialization (and the whole model's from scratch)
    if cfg.init == "scratch":
        folder = Path(cfg.like) if cfg.like else None
        tokenizer = BertTokenizer.from_pretrained(folder)
        config = BertConfig.from_json_file(folder / "config.json") if folder else BertConfig.tiny()
        config = replace(config, vocab_size=len(tokenizer), **head,
                         num_labels=len(task.labels) if task.labels else config.num_labels,
                         max_position_embeddings=max(config.max_position_embeddings, cfg.seq_length()))
        model, note = task.model_class(config), f"random weights, {config.num_hidden_layers} layers x " \
                                                 f"{config.hidden_size}, {len(tokenizer):,} pieces"
    else:
        folder = pretrained_dir() if cfg.init == "minilm" else Path(cfg.init)
        if not (folder / "config.json").exists():
            raise FileNotFoundError(f"--init {cfg.init}: {folder} holds no config.json; give 'scratch', 'minilm' or a "
                                    "checkpoint folder (make pretrain writes runs/tiny/checkpoint)")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the new head is reported below, once
            model = task.model_class.from_pretrained(folder, **head)
        tokenizer = BertTokenizer.from_pretrained(folder)
        note = (f"{folder}: {model.config.num_hidden_layers} layers x {model.config.hidden_size}; new: "
                f"{', '.join(model.loading_info['new_keys'])}")
        if model.config.max_position_embeddings < cfg.seq_length():
            note += (f"; {model.config.max_position_embeddings} learned positions repeated to {cfg.seq_length()} "
                     "(extend_positions)")
            extend_positions(model, cfg.seq_length())
    if len(tokenizer) != model.config.vocab_size:
        raise ValueError(f"{folder}: vocab.txt has {len(tokenizer):,} pieces but the model has "
                         f"{model.config.vocab_size:,} word embeddings: the tokenizer is not the checkpoint's; keep "
                         "the vocab.txt that was saved with the weights")
    return model.train(), tokenizer, note


def train(cfg: FinetuneConfig, progress: bool = True) -> dict:
    """Fine-tune (or resume) and return the dev figures after each epoch, the test figures and the wall time.

    Raises:
        KeyboardInterrupt: after Ctrl+C, once the checkpoint of the last complete step is written.
        SystemExit: the same after SIGTERM (exit status 143).
    """
    from tqdm.auto import tqdm

    if cfg.task not in TASKS:
        raise ValueError(f"unknown task {cfg.task!r}: give one of {sorted(TASKS)}")
    if cfg.qa_context not in ("paragraph", "sentence") or (cfg.qa_context == "sentence" and cfg.task != "qa"):
        raise ValueError(f"--qa-context {cfg.qa_context!r}: give 'paragraph' or 'sentence', and 'sentence' only with "
                         "--task qa (the other tasks have no context to cut)")
    task, out = TASKS[cfg.task], cfg.run_dir()
    out.mkdir(parents=True, exist_ok=True)
    (out / "finetune_config.json").write_text(json.dumps(asdict(cfg), indent=2), encoding="utf-8")
    train_set = task.load("train")[:cfg.limit_train]
    dev_set, test_set = task.load("dev")[:cfg.limit_eval], task.load("test")[:cfg.limit_eval]
    step, history, elapsed, checkpoint = 0, [], 0.0, latest_checkpoint(out)
    losses: list[float] = []  # the training losses of the epoch in flight
    if checkpoint is None:
        model, tokenizer, note = build_model(cfg)
    else:
        model = task.model_class.from_pretrained(checkpoint).train()
        tokenizer = BertTokenizer.from_pretrained(checkpoint)
        state = load_trainer_state(checkpoint)
        step, history, elapsed, losses = state["step"], state["history"], state["elapsed"], state["epoch_losses"]
        note = f"resumed from {checkpoint} at step {step}"
    freeze_lower_layers(model, cfg.freeze_layers)  # a resumed run too: requires_grad is not in the checkpoint
    if cfg.freeze_layers:
        note += f"; embeddings and layers 1-{cfg.freeze_layers} frozen"
    if cfg.learning_rate is None:  # small models take (and need) larger steps
        cfg = replace(cfg, learning_rate=1e-4 if model.config.hidden_size >= 256 else 1e-3)
    features = task.featurize(tokenizer, train_set, cfg)
    sampler = EpochSampler(len(features), cfg.batch_size, cfg.seed)
    total = cfg.epochs * sampler.steps_per_epoch
    if total < 2:
        raise ValueError(f"{len(features)} training features in batches of {cfg.batch_size} for {cfg.epochs} epoch(s) "
                         "make fewer than 2 steps: give more examples or epochs, or a smaller batch")
    schedule = Schedule.new(total, max(1, min(total - 1, round(cfg.warmup_ratio * total))))
    optimizer = make_optimizer(model, cfg.learning_rate, cfg.weight_decay)
    if checkpoint is not None:
        optimizer.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["torch_rng"])  # dropout continues with the random stream it would have had
    print(f"{cfg.task} from {_init_name(cfg.init)} ({note}); {len(train_set):,} examples -> {len(features):,} "
          f"features, {cfg.epochs} epochs of {sampler.steps_per_epoch} steps, peak LR {cfg.learning_rate:g}")
    start = time.perf_counter() - elapsed

    def save() -> None:
        save_checkpoint(out / "checkpoint", model, optimizer, tokenizer,
                        {"step": step, "history": history, "elapsed": time.perf_counter() - start,
                         "epoch_losses": losses, "torch_rng": torch.get_rng_state()})

    bar = tqdm(total=total, initial=step, disable=not progress, desc=f"{cfg.task} ({_init_name(cfg.init)})")
    with StopSignals() as stop:
        while step < total and not stop.received:
            batch = collate([features[i] for i in sampler.indices(step)])
            loss, _ = train_step(model, optimizer, batch, cfg.learning_rate * schedule.factor(step), cfg.max_grad_norm)
            losses.append(loss)
            step += 1
            bar.update(1)
            bar.set_postfix(loss=f"{loss:.3f}")
            if step % sampler.steps_per_epoch == 0:  # the end of an epoch: dev figures, then a checkpoint
                history.append({"epoch": step // sampler.steps_per_epoch, "step": step,
                                "train_loss": sum(losses) / len(losses) if losses else float("nan"),
                                "seconds": time.perf_counter() - start,
                                **task.evaluate(model, tokenizer, dev_set, cfg)})
                losses = []
                save()
        bar.close()
        if stop.received:
            save()
            print(f"stopped after step {step}; checkpoint saved in {out / 'checkpoint'}; run again to resume")
            if stop.received == signal.SIGINT:
                raise KeyboardInterrupt
            raise SystemExit(128 + stop.received)
    test = task.evaluate(model, tokenizer, test_set, cfg, details=True)
    analysis = test.pop("analysis")  # where the test errors are: confusion matrix, F1 per type, wrong answers
    result = {"task": cfg.task, "init": _init_name(cfg.init), "metric": task.metric, "test": test,
              "dev": history[-1] if history else None, "history": history, "steps": step,
              "seconds": time.perf_counter() - start, "train_examples": len(train_set),
              "checkpoint": str(out / "checkpoint"), "analysis": analysis}
    (out / "result.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result


def _build_parser() -> argparse.ArgumentParser:
    from minibert.comparison import COMPARE_INITS  # the study built on this module

    parser = argparse.ArgumentParser(prog="python -m minibert.finetune", description="Fine-tune a task head (or, "
                                     "with --compare, every task from every starting point).")
    add_fields(parser, FinetuneConfig)
    parser.add_argument("--compare", action="store_true", help="every task in --tasks from every start in --inits; "
                        "prints a table and writes comparison.json and comparison.png into runs/finetune")
    parser.add_argument("--tasks", default=",".join(TASKS), help="with --compare (default: %(default)s)")
    parser.add_argument("--inits", default=",".join(COMPARE_INITS), help="with --compare (default: %(default)s)")
    parser.add_argument("--seeds", default="0", help="with --compare or --quick-qa-study: seeds per run, e.g. "
                        "0,1,2 (default: %(default)s)")
    parser.add_argument("--quick-qa-study", action="store_true", help="chapter 08's quick QA model for every seed in "
                        "--seeds, with its 4 frozen layers (or --freeze-layers N) and with none; other flags given "
                        "override its recipe; scores the whole dev and test splits, answers the probe questions, "
                        "writes runs/finetune/quick/quick_qa.json")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = vars(_build_parser().parse_args(argv))
    progress = not args.pop("no_progress")
    comparing, tasks, inits = args.pop("compare"), args.pop("tasks").split(","), args.pop("inits").split(",")
    seeds = tuple(int(s) for s in args.pop("seeds").split(","))
    quick_study = args.pop("quick_qa_study")
    defaults = asdict(FinetuneConfig())
    given = {k: v for k, v in args.items()  # flags given on the command line override the study's recipe
             if v != defaults[k] and k not in ("task", "init", "out_dir", "like", "seed")}
    try:
        if quick_study:
            from minibert import comparison

            frozen = given.pop("freeze_layers", comparison.QUICK_QA_RECIPE["freeze_layers"])  # then none, the control
            rows = comparison.quick_qa_study(seeds, freeze_layers=(frozen, 0), progress=progress, **given)
            path = Path("runs/finetune/quick/quick_qa.json")
            path.write_text(json.dumps(rows, indent=2), encoding="utf-8")
            print(f"{comparison.comparison_table(rows)}\n\n{comparison.probe_answers_table(rows)}\nwritten: {path}")
            return 0
        if comparing:
            from minibert import comparison  # the study built on this module's loop

            rows = comparison.compare(tuple(tasks), tuple(inits), progress=progress, seeds=seeds, **given)
            written = comparison.write_comparison(rows)  # with the rows of earlier comparisons it keeps
            print(comparison.comparison_table(json.loads(written[0].read_text(encoding="utf-8"))))
            print(f"written: {', '.join(map(str, written))}")
            return 0
        result = train(FinetuneConfig(**args), progress=progress)
    except KeyboardInterrupt:
        return 130
    print(f"{result['task']} from {result['init']}: test {json.dumps(result['test'])}; {result['steps']} steps in "
          f"{result['seconds'] / 60:.1f} min; checkpoint: {result['checkpoint']}")
    return 0


if __name__ == "__main__" and "__file__" in globals():  # `python -m minibert.finetune`, not a notebook cell
    sys.exit(main())
