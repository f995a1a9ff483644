"""Tests of minibert.finetune: features, collation, evaluation against an oracle model, position extension, model
building, the loop (learning, checkpoints, bit-exact resume after Ctrl+C), the command line and the comparison.

Sizes are tiny (a 1-layer, 32-wide BERT on the real vocabulary, tens of examples) so the file runs in about a minute
on 2 cores; the real comparison is `make finetune-compare`, whose figures the README reports.
"""

from __future__ import annotations

import json
import math
import os
import signal
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from helpers import max_diff

import minibert.comparison as comparison
import minibert.finetune as finetune
from minibert.comparison import compare, comparison_table, plot_comparison, write_comparison
from minibert.config import BertConfig
from minibert.finetune import (
    FinetuneConfig,
    _init_name,
    answer_sentences,
    build_model,
    collate,
    extend_positions,
    ner_evaluate,
    ner_features,
    qa_answers,
    qa_evaluate,
    qa_features,
    sentiment_evaluate,
    sentiment_features,
    train,
)
from minibert.heads import BertForPreTraining
from minibert.masking import IGNORE_INDEX
from minibert.metrics import bio_entities
from minibert.pretrain import load_trainer_state
from minibert.task_data import WNUT_LABELS, load_qa, load_rotten_tomatoes, load_wnut16
from minibert.tasks import BertForQuestionAnswering, BertForSequenceClassification, BertForTokenClassification
from minibert.tokenization import BertTokenizer

SMALL = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)


@pytest.fixture(scope="module")
def tokenizer() -> BertTokenizer:
    return BertTokenizer.from_pretrained()


@pytest.fixture(scope="module")
def ours(tmp_path_factory, tokenizer) -> Path:
    """A 'pretrained' checkpoint folder like chapter 06's: BertForPreTraining, its vocabulary, 16 positions only."""
    folder = tmp_path_factory.mktemp("ours") / "checkpoint"
    torch.manual_seed(0)
    BertForPreTraining(BertConfig.tiny(vocab_size=len(tokenizer), max_position_embeddings=16, **SMALL)
                       ).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def small(tmp_path: Path, **settings) -> FinetuneConfig:
    base = dict(init="scratch", epochs=2, batch_size=8, max_seq_length=32, limit_train=32, limit_eval=16,
                out_dir=str(tmp_path / "run"))
    return FinetuneConfig(**{**base, **settings})


@pytest.fixture(autouse=True)
def small_scratch(monkeypatch):
    """--init scratch without --like builds BertConfig.tiny(): make it 1 layer x 32 here."""
    monkeypatch.setattr(finetune.BertConfig, "tiny", classmethod(
        lambda cls, **kw: BertConfig(**{**dict(max_position_embeddings=128), **SMALL, **kw})))


# --------------------------------------------------------------------------------------------- features


def test_collate_pads_ids_with_0_and_piece_labels_with_minus_100():
    batch = collate([{"input_ids": [101, 7, 102], "labels": [-100, 3, -100]}, {"input_ids": [101, 102], "labels":
                                                                              [-100, -100]}])
    assert batch["input_ids"].tolist() == [[101, 7, 102], [101, 102, 0]]
    assert batch["labels"].tolist() == [[-100, 3, -100], [-100, -100, IGNORE_INDEX]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 1, 0]]
    sentence = collate([{"input_ids": [101, 102], "labels": 1}, {"input_ids": [101, 5, 102], "labels": 0}])
    assert sentence["labels"].tolist() == [1, 0] and sentence["labels"].shape == (2,)


def test_sentiment_features_are_cls_text_sep_cut_to_the_length(tokenizer):
    cfg = FinetuneConfig(max_seq_length=8)
    long, short = sentiment_features(tokenizer, [("a " * 20 + "film", 1), ("Superb.", 0)], cfg)
    assert tokenizer.convert_ids_to_tokens(long["input_ids"]) == ["[CLS]"] + ["a"] * 6 + ["[SEP]"]
    assert tokenizer.convert_ids_to_tokens(short["input_ids"]) == ["[CLS]", "superb", ".", "[SEP]"]
    assert (long["labels"], short["labels"]) == (1, 0)


def test_ner_features_label_the_first_piece_of_each_word(tokenizer):
    words, tags = ["unhappiness", "in", "New", "York"], ["O", "O", "B-geo-loc", "I-geo-loc"]
    pieces = tokenizer.tokenize("unhappiness")
    assert len(pieces) > 1, "the test needs a word split into several pieces"
    (feature,) = ner_features(tokenizer, [(words, tags)], FinetuneConfig(max_seq_length=32))
    ids = {t: WNUT_LABELS.index(t) for t in tags}
    want = [-100, ids["O"], *[-100] * (len(pieces) - 1), ids["O"], ids["B-geo-loc"], ids["I-geo-loc"], -100]
    assert feature["labels"] == want
    (every,) = ner_features(tokenizer, [(words, tags)], FinetuneConfig(max_seq_length=32, label_all_pieces=True))
    assert every["labels"] == [-100, *[ids["O"]] * len(pieces), ids["O"], ids["B-geo-loc"], ids["I-geo-loc"], -100]


class Oracle(torch.nn.Module):
    """A model that answers from a table: input ids (a tuple) -> the logits to return. Evaluation code must turn the
    right logits into a perfect score, and logits that are wrong in a known way into a known score."""

    def __init__(self, table: dict[tuple, torch.Tensor], kind: str):
        super().__init__()
        self.table, self.kind = table, kind

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        rows = []
        for ids, mask in zip(input_ids.tolist(), attention_mask.tolist(), strict=True):
            rows.append(self.table[tuple(ids[:sum(mask)])])
        T = input_ids.shape[1]
        padded = [torch.nn.functional.pad(r, (0, 0, 0, T - r.shape[0])) if r.dim() == 2 else r for r in rows]
        out = torch.stack(padded)
        if self.kind == "qa":
            return type("QA", (), {"start_logits": out[..., 0], "end_logits": out[..., 1]})()
        return type("Out", (), {"logits": out})()


def _ner_oracle(tokenizer, examples, cfg, labels_of) -> Oracle:
    table = {}
    for f in ner_features(tokenizer, examples, cfg):
        logits = torch.zeros(len(f["input_ids"]), len(WNUT_LABELS))
        for position, label in enumerate(labels_of(f["labels"])):
            logits[position, label] = 1.0
        table[tuple(f["input_ids"])] = logits
    return Oracle(table, "ner")


def test_ner_evaluate_reads_the_first_piece_and_counts_entities(tokenizer):
    examples = load_wnut16("dev")[:60]
    cfg = FinetuneConfig(task="ner", max_seq_length=128)
    gold = _ner_oracle(tokenizer, examples, cfg, lambda labels: [max(label, 0) for label in labels])  # -100 -> O
    assert ner_evaluate(gold, tokenizer, examples, cfg) == {"entity_f1": 1.0, "precision": 1.0, "recall": 1.0}
    # the gold tag at the first piece, a wrong one at the others: the word takes its first piece's tag
    first_only = _ner_oracle(tokenizer, examples, FinetuneConfig(task="ner", max_seq_length=128, label_all_pieces=True),
                             lambda labels: [max(label, 0) for label in labels])
    assert ner_evaluate(first_only, tokenizer, examples, cfg)["entity_f1"] == 1.0
    person = WNUT_LABELS.index("B-person")
    wrong = _ner_oracle(tokenizer, examples, cfg, lambda labels: [person if label > 0 else 0 for label in labels])
    assert ner_evaluate(wrong, tokenizer, examples, cfg)["precision"] < 0.5


def test_ner_words_cut_off_by_the_length_are_tagged_o(tokenizer):
    words, tags = ["we", "love", "New", "York"], ["O", "O", "B-geo-loc", "I-geo-loc"]
    cfg = FinetuneConfig(task="ner", max_seq_length=5)  # [CLS] we love new [SEP]: "York" is cut
    gold = _ner_oracle(tokenizer, [(words, tags)], cfg, lambda labels: [max(label, 0) for label in labels])
    scores = ner_evaluate(gold, tokenizer, [(words, tags)], cfg)
    assert scores == {"entity_f1": 0.0, "precision": 0.0, "recall": 0.0}, "New (B) alone is not the entity New York"


def test_sentiment_evaluate_is_the_accuracy_of_the_argmax(tokenizer):
    examples = [("good", 1), ("bad", 0), ("fine", 1), ("dull", 0)]
    cfg = FinetuneConfig(max_seq_length=16)
    table = {tuple(f["input_ids"]): torch.tensor([0.0, 1.0]) for f in sentiment_features(tokenizer, examples, cfg)}
    assert sentiment_evaluate(Oracle(table, "cls"), tokenizer, examples, cfg) == {"accuracy": 0.5}


def test_qa_answers_come_from_the_best_window_and_score_100_with_gold_spans(tokenizer):
    examples = load_qa("test")[:30]
    cfg = FinetuneConfig(task="qa", max_seq_length=64, doc_stride=16)  # short windows: long contexts have several
    table, windows = {}, 0
    for example in examples:
        answer = example["answers"][0]
        for f in finetune.prepare_qa_features(tokenizer, example["question"], example["context"], 64, 16,
                                              answer["text"], answer["answer_start"]):
            logits = torch.zeros(len(f["input_ids"]), 2)
            if f["start_position"]:  # the window that holds the answer scores it highest
                logits[f["start_position"], 0] = logits[f["end_position"], 1] = 5.0
            table[tuple(f["input_ids"])] = logits
            windows += 1
    assert windows > 2 * len(examples), "the test needs contexts cut into several windows"
    predictions = qa_answers(Oracle(table, "qa"), tokenizer, examples, cfg)
    found = sum(predictions[e["id"]] == e["answers"][0]["text"] for e in examples)
    assert found >= len(examples) - 2, f"{found} of {len(examples)} answers recovered: {predictions}"
    assert qa_evaluate(Oracle(table, "qa"), tokenizer, examples, cfg)["exact_match"] >= 100 * (found / len(examples))


def test_answer_question_gives_the_span_and_its_characters(tokenizer):
    context = " ".join(f"Model {i} was released by Google in {1990 + i}." for i in range(12))  # several windows
    question = "Which company released BERT?"
    windows = finetune.prepare_qa_features(tokenizer, question, context, 48, 16)
    assert len(windows) > 2
    table = {}
    for k, w in enumerate(windows):  # every window points at its first "google"; the third one scores highest
        logits = torch.zeros(len(w["input_ids"]), 2)
        at = w["input_ids"].index(tokenizer.vocab["google"])
        logits[at, 0] = logits[at, 1] = 3.0 + (k == 2)
        table[tuple(w["input_ids"])] = logits
    got = finetune.answer_question(Oracle(table, "qa"), tokenizer, question, context, 48, 16)
    assert got["text"] == "Google" and context[got["start"]:got["end"]] == "Google" and got["score"] == 8.0
    at = windows[2]["input_ids"].index(tokenizer.vocab["google"])
    assert got["start"] == windows[2]["offsets"][at][0], "the answer comes from the best window"


def test_label_pieces_names_each_piece_with_the_model_labels(tokenizer):
    text = "unhappiness in New York"
    ids = tokenizer.convert_tokens_to_ids(["[CLS]", *tokenizer.tokenize(text), "[SEP]"])
    logits = torch.zeros(len(ids), len(WNUT_LABELS))
    logits[:, 0] = 1.0
    logits[-3, WNUT_LABELS.index("B-geo-loc")] = logits[-2, WNUT_LABELS.index("I-geo-loc")] = 2.0
    oracle = Oracle({tuple(ids): logits}, "ner")
    oracle.config = BertConfig(id2label=dict(enumerate(WNUT_LABELS)))
    got = finetune.label_pieces(oracle, tokenizer, text)
    assert got == [(p, "O") for p in tokenizer.tokenize("unhappiness in")] + [("new", "B-geo-loc"),
                                                                              ("york", "I-geo-loc")]


# --------------------------------------------------------------------------------------------- models


def test_extend_positions_repeats_the_learned_rows_and_keeps_short_inputs_unchanged(ours):
    model = BertForSequenceClassification.from_pretrained(ours, num_labels=2).eval()
    ids = torch.randint(1000, 2000, (2, 16))
    before = model(ids).logits
    learned = model.bert.embeddings.position_embeddings.weight.detach().clone()  # (16, H)
    extend_positions(model, 40)
    table = model.bert.embeddings.position_embeddings.weight
    assert table.shape == (40, learned.shape[1]) and model.config.max_position_embeddings == 40
    assert torch.equal(table[16:32], learned) and torch.equal(table[32:], learned[:8])
    assert max_diff(model(ids).logits, before) == 0.0
    assert model(torch.randint(1000, 2000, (2, 40))).logits.shape == (2, 2)


@pytest.mark.parametrize("task, cls", [("sentiment", BertForSequenceClassification),
                                       ("ner", BertForTokenClassification), ("qa", BertForQuestionAnswering)])
def test_build_model_from_a_checkpoint_loads_the_body_and_says_what_is_new(ours, task, cls):
    model, tokenizer, note = build_model(FinetuneConfig(task=task, init=str(ours), max_seq_length=24))
    assert isinstance(model, cls) and model.training
    pretrained = BertForPreTraining.from_pretrained(ours)
    assert torch.equal(model.bert.encoder.layer[0].attention.self.query.weight,
                       pretrained.bert.encoder.layer[0].attention.self.query.weight)
    assert "new: " in note and ("qa_outputs" in note if task == "qa" else "classifier" in note)
    assert "16 learned positions repeated to 24" in note
    if task == "ner":
        assert model.config.num_labels == 21 and model.config.id2label[1] == WNUT_LABELS[1]


def test_scratch_like_a_checkpoint_takes_its_size_and_vocabulary_not_its_weights(ours):
    model, tokenizer, _ = build_model(FinetuneConfig(init="scratch", like=str(ours), max_seq_length=24))
    pretrained = BertForPreTraining.from_pretrained(ours)
    assert model.config.hidden_size == 32 and model.config.max_position_embeddings == 24
    assert len(tokenizer) == model.config.vocab_size
    ours_words = pretrained.bert.embeddings.word_embeddings.weight
    assert not torch.equal(model.bert.embeddings.word_embeddings.weight, ours_words)


def test_a_checkpoint_with_another_tokenizer_is_refused(ours, tmp_path):
    folder = tmp_path / "mismatch"
    BertForPreTraining.from_pretrained(ours).save_pretrained(folder)
    (folder / "vocab.txt").write_text("".join(t + "\n" for t in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"]))
    with pytest.raises(ValueError, match="vocab.txt has 6 pieces but the model has 30,522 word embeddings"):
        build_model(FinetuneConfig(init=str(folder)))
    with pytest.raises(FileNotFoundError, match="make pretrain"):
        build_model(FinetuneConfig(init=str(tmp_path / "nothing")))


def test_init_names():
    assert [_init_name(i) for i in ("scratch", "minilm", "runs/tiny/checkpoint", "my/model")] == [
        "scratch", "minilm", "tiny", "model"]


# --------------------------------------------------------------------------------------------- the loop


def test_a_run_evaluates_each_epoch_writes_a_checkpoint_and_the_result(tmp_path):
    result = train(small(tmp_path, task="sentiment"), progress=False)
    assert [h["epoch"] for h in result["history"]] == [1, 2] and result["steps"] == 2 * 32 // 8
    assert all(0 <= h["accuracy"] <= 1 and math.isfinite(h["train_loss"]) for h in result["history"])
    saved = json.loads((tmp_path / "run" / "result.json").read_text())
    assert saved["test"] == result["test"] and set(saved["test"]) == {"accuracy"}
    loaded = BertForSequenceClassification.from_pretrained(tmp_path / "run" / "checkpoint")
    assert loaded.config.id2label == {0: "rotten", 1: "fresh"}


def test_fine_tuning_learns_its_training_set(tmp_path, tokenizer):
    """A run that fits 32 snippets: accuracy on them goes from chance to (nearly) all right. A loop that never
    updates, updates the wrong model or mixes up labels fails this."""
    cfg = small(tmp_path, task="sentiment", epochs=12, learning_rate=1e-2, warmup_ratio=0.05)
    examples = finetune.TASKS["sentiment"].load("train")[:32]
    model, _, _ = build_model(cfg)
    before = sentiment_evaluate(model, tokenizer, examples, cfg)["accuracy"]
    train(cfg, progress=False)
    trained = BertForSequenceClassification.from_pretrained(tmp_path / "run" / "checkpoint")
    after = sentiment_evaluate(trained, tokenizer, examples, cfg)["accuracy"]
    assert after >= 0.9 and after > before + 0.2, f"training accuracy {before:.2f} -> {after:.2f}"


@pytest.mark.parametrize("task", ["ner", "qa"])
def test_token_and_qa_runs_report_their_metrics(tmp_path, task):
    result = train(small(tmp_path, task=task, epochs=1, limit_train=16, limit_eval=8,
                         max_seq_length=96 if task == "qa" else 32, doc_stride=16), progress=False)
    want = {"ner": {"entity_f1", "precision", "recall"}, "qa": {"exact_match", "f1"}}[task]
    assert set(result["test"]) == want and result["metric"] in want
    analysis = result["analysis"]  # where the test errors are, from the same predictions as the test score
    assert len(analysis["errors"]) <= 6
    if task == "ner":
        gold = [tags for _, tags in finetune.TASKS["ner"].load("test")[:8]]
        assert sum(s["support"] for s in analysis["per_type"].values()) == len(
            [e for tags in gold for e in bio_entities(tags)])
    else:
        assert sum(s["n"] for s in analysis["per_type"].values()) == 8
        mean_f1 = sum(s["n"] * s["f1"] for s in analysis["per_type"].values()) / 8
        assert mean_f1 == pytest.approx(result["test"]["f1"]), "the types' F1 average to the test F1"
        assert all(e["predicted"] != e["gold"] for e in analysis["errors"])


def test_sentiment_analysis_counts_the_test_predictions(tmp_path, tokenizer):
    cfg = small(tmp_path, task="sentiment")
    examples = finetune.TASKS["sentiment"].load("test")[:40]
    model, _, _ = build_model(cfg)
    scores = sentiment_evaluate(model, tokenizer, examples, cfg, details=True)
    analysis = scores["analysis"]
    (a, b), (c, d) = analysis["confusion"]
    assert a + b + c + d == 40 and (a + d) / 40 == pytest.approx(scores["accuracy"])
    assert len(analysis["errors"]) == min(6, b + c), "the wrong answers, at most six"
    assert a + b == sum(1 for _, label in examples if label == 0), "rows are the true classes"
    confident = [abs(e["p_fresh"] - 0.5) for e in analysis["errors"]]
    assert confident == sorted(confident, reverse=True), "the errors the model was surest of come first"
    assert all(e["gold"] != e["predicted"] and e["predicted"] == ("fresh" if e["p_fresh"] > 0.5 else "rotten")
               for e in analysis["errors"])
    assert set(sentiment_evaluate(model, tokenizer, examples, cfg)) == {"accuracy"}, "no analysis unless asked"


def test_ctrl_c_stops_after_the_step_and_the_resumed_run_ends_bit_for_bit(tmp_path, monkeypatch):
    straight = train(small(tmp_path / "a", task="sentiment"), progress=False)
    real_forward = BertForSequenceClassification.forward
    calls = {"n": 0}

    def forward(self, *args, **kwargs):
        if self.training:
            calls["n"] += 1
            if calls["n"] == 3:  # inside step 3, mid-epoch
                os.kill(os.getpid(), signal.SIGINT)
        return real_forward(self, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(BertForSequenceClassification, "forward", forward)
        with pytest.raises(KeyboardInterrupt):
            train(small(tmp_path / "b", task="sentiment"), progress=False)
    state = load_trainer_state(tmp_path / "b" / "run" / "checkpoint")
    assert state["step"] == 3, "the step in flight finishes, then the checkpoint is written"
    resumed = train(small(tmp_path / "b", task="sentiment"), progress=False)
    a = BertForSequenceClassification.from_pretrained(tmp_path / "a" / "run" / "checkpoint").state_dict()
    b = BertForSequenceClassification.from_pretrained(tmp_path / "b" / "run" / "checkpoint").state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a), "the resumed run ends with the weights of the straight run"
    assert resumed["history"] == [{**h, "seconds": r["seconds"]} for h, r in
                                  zip(straight["history"], resumed["history"], strict=True)]
    assert resumed["test"] == straight["test"]


def test_answer_sentences_keep_the_answer_in_its_sentence(tokenizer):
    examples = load_qa("train")[:300]
    given = json.loads(json.dumps(examples))
    cut = answer_sentences(examples)
    assert examples == given, "the examples given are not changed"
    assert [e["id"] for e in cut] == [e["id"] for e in examples] and [e["question"] for e in cut] == [
        e["question"] for e in examples]
    shorter = 0
    for before, after in zip(examples, cut, strict=True):
        answer = after["answers"][0]
        assert after["context"][answer["answer_start"]:][:len(answer["text"])] == answer["text"]
        assert after["context"] in before["context"]
        shorter += len(after["context"]) < len(before["context"])
    assert shorter >= 250, f"only {shorter} of 300 contexts were cut to a sentence"
    across = {"id": "x", "question": "What?", "context": "It rained. Then it snowed. Later it froze.",
              "answers": [{"text": "rained. Then", "answer_start": 3}]}
    assert answer_sentences([across]) == [across], "an answer across a sentence end keeps its paragraph"
    inside = {**across, "answers": [{"text": "snowed", "answer_start": 19}]}
    assert answer_sentences([inside])[0]["context"] == "Then it snowed."
    assert answer_sentences([inside])[0]["answers"] == [{"text": "snowed", "answer_start": 8}]
    cfg = FinetuneConfig(task="qa", max_seq_length=64, doc_stride=16)
    whole = qa_features(tokenizer, [inside], cfg)[0]
    one = qa_features(tokenizer, [inside], replace(cfg, qa_context="sentence"))[0]
    assert len(one["input_ids"]) < len(whole["input_ids"])
    assert tokenizer.convert_ids_to_tokens(one["input_ids"][one["start_positions"]:one["end_positions"] + 1]) == [
        "snow", "##ed"]


@pytest.fixture(scope="module")
def two_layers(tmp_path_factory, tokenizer) -> Path:
    folder = tmp_path_factory.mktemp("two") / "checkpoint"
    torch.manual_seed(1)
    BertForPreTraining(BertConfig.tiny(vocab_size=len(tokenizer), max_position_embeddings=32,
                                       **{**SMALL, "num_hidden_layers": 2})).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_frozen_layers_keep_their_loaded_weights_and_the_rest_trains(tmp_path, two_layers, capsys):
    loaded = BertForPreTraining.from_pretrained(two_layers).state_dict()
    cfg = small(tmp_path, task="sentiment", init=str(two_layers), epochs=1, freeze_layers=1)
    train(cfg, progress=False)
    assert "embeddings and layers 1-1 frozen" in capsys.readouterr().out

    def changed() -> set[str]:
        after = BertForSequenceClassification.from_pretrained(tmp_path / "run" / "checkpoint").state_dict()
        return {k for k in after if k in loaded and not torch.equal(after[k], loaded[k])}

    first = changed()
    assert first and all(k.startswith("bert.encoder.layer.1.") or k.startswith("bert.pooler.") for k in first), \
        "the embeddings and layer 0 are as loaded; layer 1 trained"
    assert any(k.startswith("bert.encoder.layer.1.") for k in first)
    train(replace(cfg, epochs=2), progress=False)  # resumes at the end of epoch 1: still frozen
    second = changed()
    assert second and second <= first
    with pytest.raises(ValueError, match="has 2 encoder layers; give 0 .* to 2"):
        train(small(tmp_path / "bad", task="sentiment", init=str(two_layers), freeze_layers=3), progress=False)


def test_bad_qa_context_is_refused_with_the_choices(tmp_path):
    with pytest.raises(ValueError, match="give 'paragraph' or 'sentence'"):
        train(small(tmp_path, task="qa", qa_context="sentences"), progress=False)
    with pytest.raises(ValueError, match="only with --task qa"):
        train(small(tmp_path, task="ner", qa_context="sentence"), progress=False)


# --------------------------------------------------------------------------------------------- CLI, comparison


def test_command_line_runs_a_task(tmp_path, capsys):
    out = tmp_path / "cli"
    code = finetune.main(["--task", "sentiment", "--init", "scratch", "--epochs", "1", "--batch-size", "8",
                          "--seq-len", "32", "--limit-train", "16", "--limit-eval", "8", "--out", str(out),
                          "--no-progress"])
    assert code == 0 and (out / "result.json").exists()
    assert "sentiment from scratch: test" in capsys.readouterr().out


def test_compare_command_keeps_the_recipe_unless_a_flag_overrides_it(monkeypatch, tmp_path):
    seen = {}
    monkeypatch.setattr(comparison, "compare",
                        lambda tasks, inits, progress, seeds, **given: seen.update(given, seeds=seeds) or [])
    monkeypatch.setattr(comparison, "plot_comparison", lambda rows: type("F", (), {"savefig": lambda *a, **k: None})())
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "finetune").mkdir(parents=True)
    assert finetune.main(["--compare", "--batch-size", "16", "--no-progress"]) == 0
    assert seen == {"batch_size": 16, "seeds": (0,)}, "only the flags given, so COMPARE_RECIPE's epochs and limits stay"
    seen.clear()
    assert finetune.main(["--compare", "--seeds", "0,1,2", "--no-progress"]) == 0
    assert seen == {"seeds": (0, 1, 2)}


def test_default_learning_rate_follows_the_width(tmp_path, ours, capsys):
    train(small(tmp_path, task="sentiment", epochs=1, limit_train=16), progress=False)
    assert "peak LR 0.001" in capsys.readouterr().out, "a 32-wide model gets 1e-3"
    with pytest.raises(ValueError, match="fewer than 2 steps"):
        train(small(tmp_path / "one", task="sentiment", epochs=1, limit_train=8), progress=False)


def test_compare_runs_every_start_and_tells_how_to_make_ours(tmp_path, ours):
    with pytest.raises(FileNotFoundError, match="make pretrain"):
        compare(("sentiment",), ("scratch", str(tmp_path / "missing" / "checkpoint")), out_root=str(tmp_path))
    rows = compare(("sentiment",), ("scratch", str(ours)), out_root=str(tmp_path), progress=False, epochs=1,
                   batch_size=8, max_seq_length=24, limit_train=16, limit_eval=8)
    assert [(r["task"], r["init"]) for r in rows] == [("sentiment", "scratch"), ("sentiment", ours.parent.name)]
    scratch = json.loads((tmp_path / "sentiment-scratch" / "finetune_config.json").read_text())
    assert scratch["like"] == str(ours), "scratch takes the size and vocabulary of our checkpoint"
    assert all(r["percent"] == 100 * r["test"]["accuracy"] and r["seconds"] > 0 for r in rows)
    table = comparison_table(rows)
    assert "scratch" in table and ours.parent.name in table and "accuracy" in table
    fig = plot_comparison(rows)
    assert len(fig.axes[0].patches) == 2
    written = write_comparison(rows, tmp_path / "written")
    assert json.loads(written[0].read_text(encoding="utf-8")) == rows and written[1].stat().st_size > 0


def test_write_comparison_keeps_the_runs_of_other_starts_and_replaces_a_rerun(tmp_path):
    """`make finetune-compare` then `make finetune-compare-minilm` build one comparison.json: rows of another task,
    start or seed stay, a run of the same task, start and seed replaces the old one, and the rows go by task."""
    def row(task, init, seed, percent):
        return {"task": task, "init": init, "seed": seed, "metric": "accuracy", "percent": percent, "dev": percent,
                "dev_curve": [percent], "seconds": 1.0}

    write_comparison([row("sentiment", "scratch", 0, 70.0), row("qa", "scratch", 0, 8.0),
                      row("sentiment", "tiny", 0, 71.0)], tmp_path)
    written = write_comparison([row("qa", "minilm", 0, 20.0), row("sentiment", "minilm", 0, 80.0),
                                row("sentiment", "tiny", 0, 72.0)], tmp_path)
    rows = json.loads(written[0].read_text(encoding="utf-8"))
    assert [(r["task"], r["init"], r["percent"]) for r in rows] == [
        ("sentiment", "scratch", 70.0), ("sentiment", "minilm", 80.0), ("sentiment", "tiny", 72.0),
        ("qa", "scratch", 8.0), ("qa", "minilm", 20.0)]


def test_compare_runs_each_seed_in_a_folder_of_its_own_and_summarizes_them(tmp_path, ours):
    rows = compare(("sentiment",), ("scratch",), out_root=str(tmp_path), progress=False, seeds=(0, 1), epochs=1,
                   batch_size=8, max_seq_length=24, limit_train=16, limit_eval=8)
    assert [r["seed"] for r in rows] == [0, 1]
    assert (tmp_path / "sentiment-scratch" / "result.json").exists()
    assert (tmp_path / "sentiment-scratch-seed1" / "result.json").exists()
    assert all(r["recipe"]["seed"] == r["seed"] and r["recipe"]["epochs"] == 1 for r in rows)
    assert all(len(r["dev_curve"]) == 1 and r["dev_curve"][-1] == r["dev"] for r in rows)
    (summary,) = comparison.summarize(rows)
    assert summary["runs"] == 2 and summary["test"] == pytest.approx((rows[0]["percent"] + rows[1]["percent"]) / 2)
    assert "± " in comparison_table(rows)


def test_summarize_gives_mean_and_standard_error():
    rows = [{"task": "ner", "init": "tiny", "metric": "entity_f1", "percent": p, "dev": d, "seconds": 60.0}
            for p, d in ((10.0, 20.0), (12.0, 22.0), (14.0, 24.0))]
    (s,) = comparison.summarize(rows)
    assert (s["runs"], s["test"], s["dev"]) == (3, 12.0, 22.0)
    assert s["test_se"] == pytest.approx(2 / 3 ** 0.5) and s["dev_se"] == pytest.approx(2 / 3 ** 0.5)
    (one,) = comparison.summarize(rows[:1])
    assert one["test_se"] == 0.0 and one["test"] == 10.0


def _analysed(task: str, init: str, seed: int, analysis: dict) -> dict:
    return {"task": task, "init": init, "seed": seed, "metric": "m", "percent": 1.0, "dev": 1.0, "seconds": 1.0,
            "analysis": analysis}


def test_breakdowns_sum_confusions_and_average_types_over_seeds():
    rows = [
        _analysed("sentiment", "tiny", 0, {"classes": ["rotten", "fresh"], "confusion": [[5, 1], [2, 7]],
                                          "errors": [{"text": "dull", "gold": "rotten", "predicted": "fresh"}]}),
        _analysed("sentiment", "tiny", 1, {"classes": ["rotten", "fresh"], "confusion": [[4, 2], [0, 9]],
                                          "errors": []}),
        _analysed("ner", "tiny", 0, {"per_type": {"person": {"f1": 0.5, "support": 10},
                                                  "movie": {"f1": 0.0, "support": 0}}, "errors": []}),
        _analysed("ner", "tiny", 1, {"per_type": {"person": {"f1": 0.3, "support": 10}}, "errors": []}),
        _analysed("qa", "scratch", 0, {"per_type": {"when": {"f1": 40.0, "n": 3}}, "errors": []}),
        {"task": "qa", "init": "old", "seed": 0, "metric": "f1", "percent": 1.0, "dev": 1.0, "seconds": 1.0},
    ]
    found = comparison.breakdowns(rows)
    assert found["sentiment"]["tiny"]["confusion"] == [[9, 3], [2, 16]] and found["sentiment"]["tiny"]["runs"] == 2
    assert found["sentiment"]["tiny"]["errors"][0]["text"] == "dull", "the first seed's wrong answers"
    person = found["ner"]["tiny"]["per_type"]["person"]
    assert person["f1"] == pytest.approx(40.0) and person["f1_se"] == pytest.approx(10.0) and person["size"] == 10
    assert found["qa"]["scratch"]["per_type"]["when"]["f1"] == 40.0 and "old" not in found["qa"], "no analysis"
    text = comparison.breakdown_tables(rows)
    assert "true rotten:     9 rotten,     3 fresh (25% wrong)" in text and "person (10)" in text
    assert "movie" not in text, "a type with no gold entity in the test split is left out"
    fig = comparison.plot_breakdowns(rows)
    assert len(fig.axes) == 3


def test_recipe_is_per_task_and_minilm_has_its_own_budget():
    assert comparison.recipe_for("ner", "scratch") == comparison.COMPARE_RECIPE["ner"]
    assert comparison.recipe_for("ner", "runs/tiny/checkpoint") == comparison.COMPARE_RECIPE["ner"]
    assert comparison.recipe_for("sentiment", "minilm") == comparison.MINILM_RECIPE["sentiment"]
    assert comparison.recipe_for("unknown", "scratch") == {}


def test_shipped_comparison_is_complete_and_was_run_with_the_current_recipe():
    """The figures chapter 08 and the README show without the long runs: every task from both tiny starts, MiniLM
    where it was measured (every seed of each task it has), with the recipe the code has now (a changed recipe must
    ship new figures)."""
    shipped = comparison.shipped_comparison()
    assert {"measured", "command", "checkpoint"} <= set(shipped["provenance"])
    rows = shipped["rows"]
    cells = {(r["task"], r["init"], r["seed"]) for r in rows}
    assert len(cells) == len(rows), "one row per task, start and seed"
    for task in finetune.TASKS:
        for init in ("scratch", "tiny", "minilm"):
            seeds = {seed for t, i, seed in cells if (t, i) == (task, init)}
            assert seeds == set(comparison.COMPARE_SEEDS) or (init == "minilm" and not seeds), (task, init)
    minilm = {t for t, i, _ in cells if i == "minilm"}
    assert minilm and "minilm" in shipped["provenance"], "MiniLM's rows say how they were measured"
    for r in rows:
        recipe = {k: v for k, v in r["recipe"].items() if k != "seed"}
        assert recipe == comparison.recipe_for(r["task"], r["init"]), r
        assert r["dev_curve"][-1] == r["dev"] and 0 <= r["percent"] <= 100 and r["seconds"] > 0
        assert r["percent"] == (r["test"][r["metric"]] if r["task"] == "qa" else 100 * r["test"][r["metric"]])
    assert len(comparison.summarize(rows)) == 2 * len(finetune.TASKS) + len(minilm)
    assert all(r["analysis"]["errors"] for r in rows), "every run says where its test errors are"
    found = comparison.breakdowns(rows)
    assert set(found) == set(finetune.TASKS)
    assert all(set(starts) == {"scratch", "tiny"} | ({"minilm"} & {i for t, i, _ in cells if t == task})
               for task, starts in found.items())
    for init, entry in found["sentiment"].items():  # the confusion matrix counts every test snippet of every seed
        assert sum(map(sum, entry["confusion"])) == 3 * len(load_rotten_tomatoes("test")), init


# --------------------------------------------------------------------------------------------- the linear probe

def test_probe_logistic_regression_predicts_as_scikit_learn_does():
    """The probe's own logistic regression (L-BFGS, L2 as scikit-learn's C = 1, standardized features) against
    scikit-learn's on noisy features: the same predictions on new rows."""
    from sklearn.linear_model import LogisticRegression

    g = torch.Generator().manual_seed(3)
    direction = torch.randn(13, generator=g, dtype=torch.float64)
    x = torch.randn(700, 13, generator=g, dtype=torch.float64) * torch.linspace(0.1, 5, 13, dtype=torch.float64)
    y = ((x @ direction + 2 * torch.randn(700, generator=g, dtype=torch.float64)) > 0).long()
    predict = comparison._logistic_regression(x[:500], y[:500])
    mean, std = x[:500].mean(0), x[:500].std(0) + 1e-6
    reference = LogisticRegression(max_iter=5000).fit(((x[:500] - mean) / std).numpy(), y[:500].numpy())
    want = torch.from_numpy(reference.predict(((x[500:] - mean) / std).numpy()))
    got = predict(x[500:])
    assert (got == want).float().mean() >= 0.99, f"{int((got != want).sum())} of 200 predictions differ"
    assert 0.6 < (got == y[500:]).float().mean() < 1, "the features carry the label, with noise"


def test_linear_probe_finds_sentiment_planted_in_the_word_embeddings(tmp_path, tokenizer):
    """A checkpoint whose word embeddings carry each piece's lean (log-odds of 'fresh' in 4,000 training snippets,
    in one dimension) must probe far above random weights of its size; the rows say what was measured."""
    counts = torch.ones(len(tokenizer), 2)  # add-one smoothing
    for text, label in load_rotten_tomatoes("train")[:4000]:
        for i in set(tokenizer.encode(text)):
            counts[i, label] += 1
    torch.manual_seed(0)
    model = BertForPreTraining(BertConfig.tiny(vocab_size=len(tokenizer), max_position_embeddings=24, **SMALL))
    with torch.no_grad():
        model.bert.embeddings.word_embeddings.weight[:, 0] = 5 * (counts[:, 1] / counts[:, 0]).log()
    folder = tmp_path / "planted"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)

    rows = comparison.linear_probe(str(folder), train_sizes=(600,), seeds=(0, 1), limit_eval=300)
    assert [(r["weights"], r["seed"], r["features"]) for r in rows] == [
        (w, s, f) for w, s in (("pretrained", None), ("random", 0), ("random", 1))
        for f in ("word embeddings", "last layer")]
    assert all(r["train"] == 600 and 0 <= r["dev"] <= 100 for r in rows)
    planted = next(r["dev"] for r in rows if (r["weights"], r["features"]) == ("pretrained", "word embeddings"))
    random = [r["dev"] for r in rows if (r["weights"], r["features"]) == ("random", "word embeddings")]
    assert planted > max(random) + 5, (planted, random)
    table = comparison.probe_table(rows)
    assert f"{planted:.1f}" in table and "word embeddings" in table and "last layer" in table
    with pytest.raises(FileNotFoundError, match="make pretrain"):
        comparison.linear_probe(str(tmp_path / "missing"))


def test_shipped_diagnosis_holds_the_probe_and_the_few_label_runs():
    """Chapter 08's 'why' section reads these without the runs: a probe of a make-pretrain checkpoint (pretrained
    and three random draws, both features, 1,000 and all snippets) and the sentiment runs on 1,000 snippets."""
    diagnosis = comparison.shipped_comparison()["diagnosis"]
    assert {"measured", "checkpoint", "probe_command", "few_labels_command"} <= set(diagnosis)
    probe = diagnosis["probe"]
    assert {(r["weights"], r["seed"]) for r in probe} == {("pretrained", None), ("random", 0), ("random", 1),
                                                          ("random", 2)}
    assert {r["train"] for r in probe} == {1000, len(load_rotten_tomatoes("train"))} and len(probe) == 16
    few = diagnosis["few_labels"]
    seeds = comparison.COMPARE_SEEDS
    assert {(r["init"], r["seed"]) for r in few} == {(i, s) for i in ("scratch", "tiny") for s in seeds}
    assert all(r["task"] == "sentiment" and r["recipe"]["limit_train"] == 1000 for r in few)
    assert "--limit-train 1000" in diagnosis["few_labels_command"]
    assert len(comparison.probe_table(probe).splitlines()) == 5


# ------------------------------------------------------------------------------------ chapter 08's quick QA model

def test_quick_qa_study_runs_each_seed_frozen_and_not_and_answers_every_probe(tmp_path, capsys):
    """`quick_qa_study` trains the demo's recipe once per seed and per freezing (few examples here) and keeps, per
    run, the test and dev F1 of all the questions it scored and an answer to each probe, as a span of its context."""
    rows = comparison.quick_qa_study(seeds=(1,), freeze_layers=(6, 0), out_root=str(tmp_path), progress=False,
                                     limit_train=16, limit_eval=4, batch_size=8)
    assert [(r["init"], r["seed"]) for r in rows] == [("minilm-quick-f6", 1), ("minilm-quick-f0", 1)]
    for r in rows:
        assert r["recipe"] == {**comparison.QUICK_QA_RECIPE, "limit_train": 16, "limit_eval": 4, "batch_size": 8,
                               "freeze_layers": int(r["init"][-1]), "seed": r["seed"]}
        assert r["percent"] == r["test"]["f1"] and r["dev_curve"] == [r["dev"]]
        assert 0 < r["train_seconds"] < r["seconds"], "training, then the scoring"
        assert sum(s["n"] for s in r["analysis"]["per_type"].values()) == 4, "the test questions it scored"
        assert [(a["question"], a["context"]) for a in r["answers"]] == list(comparison.QA_PROBES)
        assert all(a["answer"] in a["context"] for a in r["answers"])
    assert (tmp_path / "qa-f6-seed1" / "result.json").exists() and (tmp_path / "qa-f0-seed1" / "result.json").exists()
    # the freezing is the run's: with all 6 layers frozen the last layer is MiniLM's, with none it has moved
    qa_model = finetune.TASKS["qa"].model_class
    key = "bert.encoder.layer.5.output.dense.weight"
    with pytest.warns(UserWarning, match="newly initialized"):  # MiniLM's body, a QA head drawn anew
        loaded = qa_model.from_pretrained(finetune.pretrained_dir()).state_dict()[key]
    for frozen, same in ((6, True), (0, False)):
        trained = qa_model.from_pretrained(tmp_path / f"qa-f{frozen}-seed1" / "checkpoint").state_dict()[key]
        assert torch.equal(trained, loaded) == same, frozen
    table = comparison.probe_answers_table(rows)
    assert len(table.splitlines()) == len(comparison.QA_PROBES) * (1 + len(rows))
    assert "    minilm-quick-f0  seed 1: " in table
    assert len(comparison.summarize(rows)) == 2


def test_quick_qa_study_command_writes_its_rows(monkeypatch, tmp_path, capsys):
    seen = {}

    def fake(seeds, freeze_layers, progress, **given):
        seen.update(given, seeds=seeds, freeze_layers=freeze_layers)
        row = {"task": "qa", "init": "minilm-quick-f4", "seed": 0, "metric": "f1", "percent": 50.0, "dev": 60.0,
               "seconds": 1.0, "answers": [{"question": q, "context": c, "answer": "x"} for q, c in
                                           comparison.QA_PROBES]}
        return [row]

    monkeypatch.setattr(comparison, "quick_qa_study", fake)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "finetune" / "quick").mkdir(parents=True)
    assert finetune.main(["--quick-qa-study", "--seeds", "0,1,2", "--no-progress"]) == 0
    assert seen == {"seeds": (0, 1, 2), "freeze_layers": (4, 0)}, "QUICK_QA_RECIPE as it is, then the control"
    seen.clear()
    assert finetune.main(["--quick-qa-study", "--lr", "3e-4", "--freeze-layers", "2", "--no-progress"]) == 0
    assert seen == {"seeds": (0,), "learning_rate": 3e-4, "freeze_layers": (2, 0)}, "flags given override the recipe"
    written = json.loads((tmp_path / "runs/finetune/quick/quick_qa.json").read_text(encoding="utf-8"))
    assert written[0]["percent"] == 50.0 and "Which company released BERT?" in capsys.readouterr().out


def test_shipped_quick_qa_runs_were_made_with_the_current_recipe():
    """Chapter 08 prints these without the runs: every seed with the demo's 4 frozen layers and with none, the
    recipe the code has now (a changed recipe must ship new figures), every probe answered from its context."""
    quick = comparison.shipped_comparison()["quick_qa"]
    assert {"measured", "command"} <= set(quick) and "--quick-qa-study" in quick["command"]
    rows = quick["rows"]
    assert {(r["init"], r["seed"]) for r in rows} == {(f"minilm-quick-f{f}", s) for f in (4, 0)
                                                      for s in comparison.COMPARE_SEEDS}
    for r in rows:
        assert r["recipe"] == {**comparison.QUICK_QA_RECIPE, "freeze_layers": int(r["init"][-1]), "seed": r["seed"]}
        assert [(a["question"], a["context"]) for a in r["answers"]] == list(comparison.QA_PROBES)
        assert all(a["answer"] in a["context"] for a in r["answers"])
        assert sum(s["n"] for s in r["analysis"]["per_type"].values()) == len(finetune.TASKS["qa"].load("test"))
        assert 0 <= r["percent"] <= 100 and r["dev_curve"] == [r["dev"]] and 0 < r["train_seconds"] < r["seconds"]


def test_chapter_08_quick_qa_demo_trains_with_the_shipped_recipe():
    """The demo cell's quick QA model and the shipped quick runs (whose figures the text cites) are one recipe: the
    cell's `finetuned("qa", ...)` settings over `finetuned`'s defaults equal QUICK_QA_RECIPE."""
    import ast

    root = Path(__file__).resolve().parents[1]
    cells = {c.get("id"): "".join(c["source"])
             for c in json.loads((root / "solutions" / "08_finetuning.ipynb").read_text(encoding="utf-8"))["cells"]}

    def calls(source: str, name: str) -> list[ast.Call]:
        return [n for n in ast.walk(ast.parse(source.replace("#| demo", "")))
                if isinstance(n, ast.Call) and getattr(n.func, "id", None) == name]

    helper = next(n for n in ast.walk(ast.parse(cells["ch08-21"].replace("#| demo", "")))
                  if isinstance(n, ast.Dict) and any(getattr(k, "value", None) == "epochs" for k in n.keys))
    defaults = {k.value: ast.literal_eval(v) for k, v in zip(helper.keys, helper.values, strict=True) if k is not None}
    (qa_call,) = [c for c in calls(cells["ch08-21a"], "finetuned") if ast.literal_eval(c.args[0]) == "qa"]
    given = {k.arg: ast.literal_eval(k.value) for k in qa_call.keywords}
    given.pop("limit_eval")  # the demo scores 20 dev questions; the study scores every one
    assert {**defaults, **given} == comparison.QUICK_QA_RECIPE
