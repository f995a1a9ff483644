"""minibert.variants (chapter 10): RoBERTa's FULL-SENTENCES rows and dynamic masks, ELECTRA's corruption, loss and
discriminator (against transformers, dropout on), and the masking-rate study (tiny, on the real corpus)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F
import transformers

from minibert import BertConfig
from minibert.tokenization import BertTokenizer
from minibert.variants import (
    Electra,
    ElectraForPreTraining,
    MLMCollator,
    StudyConfig,
    check_study_folder,
    electra_loss,
    generator_config,
    masking_rate_study,
    pack_sentences,
    pretrain_rows,
    replace_with_samples,
    sentence_features,
)

C, S = 101, 102


def test_full_sentence_rows_keep_sentences_whole_and_cross_documents_with_one_separator():
    docs = [[[1, 2, 3], [4, 5]], [[6, 7]], [[8, 9, 10, 11, 12, 13, 14, 15, 16]]]
    assert pack_sentences(docs, 10, C, S) == [[C, 1, 2, 3, 4, 5, S, 6, 7, S], [C, 8, 9, 10, 11, 12, 13, 14, 15, S],
                                               [C, 16, S]]
    # every piece survives, in order, and no row is longer than asked
    for m in (5, 7, 12, 30):
        rows = pack_sentences(docs, m, C, S)
        assert all(len(r) <= m and r[0] == C and r[-1] == S and r[1] != S for r in rows)
        inner = [t for r in rows for t in r[1:-1] if t != S]
        assert inner == list(range(1, 17)), m
    assert pack_sentences([], 8, C, S) == []


def test_the_collator_masks_anew_at_every_call_without_nsp(tmp_path):
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(40)]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tok = BertTokenizer(tmp_path / "vocab.txt")
    rows = [[2, *range(5, 45), 3], [2, *range(10, 30), 3, *range(30, 40), 3]]
    collate = MLMCollator(tok, 0.3, generator=torch.Generator().manual_seed(0))
    a, b = collate(rows), collate(rows)
    assert set(a) == {"input_ids", "attention_mask", "token_type_ids", "labels"}  # no next_sentence_label
    assert a["token_type_ids"].eq(0).all() and a["attention_mask"].sum().item() == 42 + 33
    assert not torch.equal(a["labels"], b["labels"]), "the same rows must get a new mask at every call"
    special = torch.isin(torch.where(a["attention_mask"].bool(), a["labels"].clamp(min=0), 0), torch.tensor([2, 3]))
    assert not (special & (a["labels"] != -100)).any()
    assert (a["labels"][a["attention_mask"] == 0] == -100).all() and (a["input_ids"][1, 33:] == 0).all()


def test_samples_follow_the_generator_and_a_lucky_sample_counts_as_original():
    n = 6000
    ids = torch.full((n, 2), 7)
    labels = torch.tensor([[-100, 7]]).repeat(n, 1)
    logits = torch.log(torch.tensor([[0.0, 0.2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.5, 0.3]])).repeat(n, 1)
    corrupted, replaced = replace_with_samples(ids, labels, logits, torch.Generator().manual_seed(0))
    share = torch.bincount(corrupted[:, 1], minlength=9)[[1, 7, 8]].float() / n
    assert torch.allclose(share, torch.tensor([0.2, 0.5, 0.3]), atol=0.025), share
    assert torch.equal(replaced[:, 1], (corrupted[:, 1] != 7).float()) and replaced[:, 0].eq(0).all()
    assert abs(replaced[:, 1].mean().item() - 0.5) < 0.025  # the originals drawn (50%) are labelled original


def test_electra_loss_is_mlm_plus_fifty_times_the_mean_rtd_over_real_positions():
    logits = torch.tensor([[1.0, -2.0, 0.5], [3.0, 0.0, -1.0]], requires_grad=True)
    replaced = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    terms = [F.softplus(-x) if y else F.softplus(x) for x, y, m in
             zip(logits.detach().flatten(), replaced.flatten(), mask.flatten(), strict=True) if m]
    want = float(sum(terms) / len(terms))
    loss, rtd = electra_loss(torch.tensor(2.0), logits, replaced, mask)
    assert math.isclose(rtd.item(), want, rel_tol=1e-6) and math.isclose(loss.item(), 2.0 + 50 * want, rel_tol=1e-6)


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_the_discriminator_is_transformers_electra_for_pretraining_in_training_mode(offline, attention):
    """Same weights, same seed before each forward, dropout on: the same logits and loss, and the same gradients."""
    cfg = BertConfig.tiny(vocab_size=60, max_position_embeddings=16, hidden_size=32, num_attention_heads=4,
                          intermediate_size=64, initializer_range=0.2)
    torch.manual_seed(0)
    hf = transformers.ElectraForPreTraining(transformers.ElectraConfig(
        vocab_size=60, embedding_size=32, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=16, initializer_range=0.2, attn_implementation=attention))
    ours = ElectraForPreTraining(cfg)
    assert set(ours.state_dict()) == set(hf.state_dict())
    ours.load_state_dict(hf.state_dict(), strict=True)
    ids = torch.randint(5, 60, (3, 9), generator=torch.Generator().manual_seed(1))
    mask = torch.ones(3, 9, dtype=torch.long)
    mask[1, 6:] = 0
    segments = torch.zeros_like(ids)
    segments[:, 4:] = 1
    labels = torch.randint(0, 2, (3, 9), generator=torch.Generator().manual_seed(2))
    hf.train()
    ours.train()
    torch.manual_seed(5)
    ref = hf(ids, attention_mask=mask, token_type_ids=segments, labels=labels)
    torch.manual_seed(5)
    out = ours(ids, mask, segments, labels=labels)
    torch.manual_seed(6)
    other = ours(ids, mask, segments, labels=labels)
    assert (other.logits - out.logits).abs().max() > 1e-3, "dropout must be on for this comparison to mean anything"
    assert (ref.logits - out.logits).abs().max() < 1e-5 and abs(ref.loss.item() - out.loss.item()) < 1e-6
    ref.loss.backward()
    out.loss.backward()
    ref_grads = dict(hf.named_parameters())
    for name, p in ours.named_parameters():
        assert torch.allclose(p.grad, ref_grads[name].grad, atol=1e-5, rtol=1e-4), name


def test_electra_trains_both_models_and_no_gradient_flows_through_the_samples():
    cfg = BertConfig.tiny(vocab_size=40, max_position_embeddings=24, hidden_size=32, num_attention_heads=2,
                          intermediate_size=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    gen = generator_config(cfg, 4)
    assert (gen.hidden_size, gen.num_attention_heads, gen.num_hidden_layers) == (8, 1, 2)
    torch.manual_seed(0)
    model = Electra(cfg)
    ids = torch.randint(5, 40, (4, 20), generator=torch.Generator().manual_seed(0))
    labels = torch.full_like(ids, -100)
    labels[:, ::4] = ids[:, ::4]
    masked = torch.where(labels != -100, torch.full_like(ids, 4), ids)
    mask = torch.ones_like(ids)
    grads = {}
    for weight in (50.0, 0.0):
        model.zero_grad()
        model.rtd_weight = weight
        out = model(masked, mask, labels=labels, sampler=torch.Generator().manual_seed(3))
        out.loss.backward()
        grads[weight] = ({n: p.grad.clone() for n, p in model.generator.named_parameters()},
                         [p.grad for p in model.discriminator.parameters()])
    for name, g in grads[50.0][0].items():  # L_RTD adds nothing to the generator's gradient
        assert torch.allclose(g, grads[0.0][0][name], atol=1e-7), name
    assert all(g is not None and g.abs().sum() > 0 for g in grads[50.0][1][:3])
    assert out.is_replaced[labels == -100].eq(0).all()


def test_the_loop_updates_generator_and_discriminator_and_counts_the_rows_it_was_given():
    cfg = BertConfig.tiny(vocab_size=30, max_position_embeddings=24, hidden_size=32, num_attention_heads=2,
                          intermediate_size=64)

    class Tok:
        vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4}

        def __len__(self):
            return 30

    rows = [[2, *[5 + (s + i) % 25 for i in range(20)], 3] for s in range(25)]
    collate = MLMCollator(Tok(), 0.15, 0.85, 0.0, generator=torch.Generator().manual_seed(0))
    torch.manual_seed(0)
    model = Electra(cfg)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    history = pretrain_rows(model, collate, rows, 3, 8, 1e-3, 0, log_every=1)
    assert [h["step"] for h in history] == [1, 2, 3] and all(math.isfinite(h["loss"]) for h in history)
    moved = {n.split(".")[0] for n, p in model.named_parameters() if not torch.equal(p, before[n])}
    assert moved == {"generator", "discriminator"}
    assert model.training


def test_sentence_features_do_not_depend_on_the_padding_of_the_batch(tmp_path):
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good", "film", "long", "and", "dull", "story"]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tok = BertTokenizer(tmp_path / "vocab.txt")
    torch.manual_seed(0)
    encoder = ElectraForPreTraining(BertConfig.tiny(vocab_size=len(vocab), max_position_embeddings=32)).electra
    alone = sentence_features(encoder, tok, ["a good film"])
    together = sentence_features(encoder, tok, ["a good film", "a long and dull story and a long and dull film"])
    assert torch.allclose(alone[0], together[0], atol=1e-5) and not torch.allclose(together[0], together[1])


def test_the_masking_rate_study_writes_its_rows_and_resumes(tmp_path, capsys):
    cfg = StudyConfig(limit_documents=6, vocab_size=300, max_seq_length=32, steps=4, batch_size=8, rates=(0.15, 0.4),
                      downstream_train=200, eval_rows=32)
    rows = masking_rate_study(cfg, tmp_path)
    assert [r["rate"] for r in rows] == [0.0, 0.15, 0.4] and rows[0]["accuracy_at_rate"] is None
    for r in rows:
        assert 0 <= r["accuracy_at_15"] <= 1 and 0.3 < r["sentiment_probe"] < 0.9
    saved = json.loads((tmp_path / "masking_rates.json").read_text(encoding="utf-8"))
    assert saved["rows"] == rows and saved["config"]["steps"] == 4
    again = masking_rate_study(cfg, tmp_path)  # the models are reused: the same figures, no training
    assert [r["accuracy_at_15"] for r in again] == [r["accuracy_at_15"] for r in rows]
    assert all(a["pretrain_seconds"] == b["pretrain_seconds"] for a, b in zip(again[1:], rows[1:], strict=True))
    # the folder's vocabulary and models belong to this setting: another one is refused, not given the old models
    with pytest.raises(ValueError, match=r"seed 0 there, 1 now.*another --out"):
        masking_rate_study(replace(cfg, seed=1), tmp_path)
    run = subprocess.run([sys.executable, "-m", "minibert.variants", "--masking-rates", "--out", str(tmp_path),
                          "--limit-documents", "6", "--vocab-size", "300", "--seq-len", "64", "--steps", "4"],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "max_seq_length 32 there, 64 now" in run.stderr
    assert [r["accuracy_at_15"] for r in masking_rate_study(cfg, tmp_path)] == [r["accuracy_at_15"] for r in rows]


def test_a_study_folder_without_a_recorded_setting_is_refused(tmp_path):
    """A folder from before the setting was recorded (a vocabulary, rate models) cannot be checked: refused."""
    (tmp_path / "rate-0.15").mkdir()
    (tmp_path / "rate-0.15" / "study_row.json").write_text('{"rate": 0.15, "steps": 3000}', encoding="utf-8")
    with pytest.raises(ValueError, match="before its setting was recorded"):
        check_study_folder(StudyConfig(), tmp_path)
    check_study_folder(StudyConfig(), tmp_path / "new")  # an empty or new folder is fine, and records the setting
    recorded = json.loads((tmp_path / "new" / "study_config.json").read_text(encoding="utf-8"))
    assert recorded["corpus"] == "course+wikipedia" and recorded["seed"] == 0


def test_the_command_line_refuses_nothing_to_do_and_rates_outside_0_1():
    run = subprocess.run([sys.executable, "-m", "minibert.variants"], capture_output=True, text=True)
    assert run.returncode == 2 and "give --masking-rates" in run.stderr
    run = subprocess.run([sys.executable, "-m", "minibert.variants", "--masking-rates", "--rates", "15"],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "between 0 and 1" in run.stderr


def test_the_shipped_masking_rate_study_was_made_with_the_current_setting():
    """Chapter 10 prints and cites the shipped study when the student has not run one: it must be what
    `make masking-rates` runs now (a changed default must ship new figures), the untrained encoder first, then every
    rate, each with its own accuracies and probe."""
    from dataclasses import asdict
    from importlib.resources import files

    shipped = json.loads((files("minibert") / "resources" / "masking_rates.json").read_text(encoding="utf-8"))
    assert shipped["config"] == json.loads(json.dumps(asdict(StudyConfig())))
    rows = shipped["rows"]
    assert [r["rate"] for r in rows] == [0.0, *StudyConfig().rates] and rows[0]["accuracy_at_rate"] is None
    for r in rows[1:]:
        assert r["steps"] == StudyConfig().steps and 0 < r["accuracy_at_rate"] < 1 and r["pretrain_seconds"] > 0
    assert all(0.5 < r["sentiment_probe"] < 1 and 0 <= r["accuracy_at_15"] < 1 for r in rows)
