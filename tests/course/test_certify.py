"""The kit's certificate (minibert_course.certify): each check passes on the reference package and fails on a wrong
one. The whole `make test` of a kit is exercised in test_student_kit.py."""

from __future__ import annotations

import pytest
import torch

from minibert_course import certify


@pytest.fixture(autouse=True)
def _offline(offline):
    yield


def test_tokenizer_check_passes_and_names_the_first_difference(monkeypatch):
    ok, short, detail = certify.certify_tokenizer()
    assert ok and short == "same pieces as transformers" and "300 Wikipedia paragraphs" in detail
    from minibert.tokenization import BertTokenizer

    right = BertTokenizer.tokenize
    monkeypatch.setattr(BertTokenizer, "tokenize", lambda self, text: [p.upper() if p == "the" else p
                                                                        for p in right(self, text)])
    ok, short, detail = certify.certify_tokenizer()
    assert not ok and "paragraphs differ" in short and "'THE'" in detail and "'the'" in detail


def test_real_weights_check_prints_the_difference_and_rejects_a_wrong_model(monkeypatch):
    ok, short, detail = certify.certify_real_weights()
    diff = float(short.split("max diff ")[1].split()[0])
    assert ok and diff < 1e-4 and "last_hidden_state" in detail
    from minibert.model import BertModel

    load = BertModel.from_pretrained.__func__

    def off_by_a_little(cls, folder, **kwargs):  # one LayerNorm shifted by 1e-3: a small, real mistake
        model = load(cls, folder, **kwargs)
        with torch.no_grad():
            model.encoder.layer[0].output.LayerNorm.bias += 1e-3
        return model

    monkeypatch.setattr(BertModel, "from_pretrained", classmethod(off_by_a_little))
    ok, short, detail = certify.certify_real_weights()
    assert not ok and "needs < 1e-4" in detail


def test_quiz_check_comes_from_the_students_code(monkeypatch):
    ok, short, detail = certify.certify_quiz()
    assert ok and "needs" not in detail and "15 targets in every row" in detail and "12.0" in short
    import minibert.masking as masking

    right = masking.expected_counts
    monkeypatch.setattr(masking, "expected_counts", lambda n, *a, **k: {**right(n, *a, **k), "unchanged": 2.0})
    ok, short, _ = certify.certify_quiz()
    assert not ok and "15/12/1.5/1.5" in short
    monkeypatch.setattr(masking, "expected_counts", right)
    mask_tokens = masking.mask_tokens

    def wrong_split(ids, *args, **kwargs):  # 70 / 20 / 10: the counts function is right, the sampler is not
        return mask_tokens(ids, *args, **{**kwargs, "mask_replace_prob": 0.7, "random_replace_prob": 0.2})

    monkeypatch.setattr(masking, "mask_tokens", wrong_split)
    ok, short, detail = certify.certify_quiz()
    assert not ok and "needs exactly 15 targets per row" in detail


def test_pretraining_check_rejects_a_loop_that_does_not_learn(monkeypatch):
    ok, short, detail = certify.certify_pretraining()
    assert ok and "40 steps" in detail, detail
    import minibert.pretrain as pretrain

    def no_update(model, optimizer, batch, lr, max_grad_norm, micro_batches=1, precision="fp32", **forward):
        # computes the loss, never moves a weight
        with torch.no_grad():
            return float(model(**batch, **forward).loss), 0.0

    monkeypatch.setattr(pretrain, "train_step", no_update)
    ok, short, detail = certify.certify_pretraining()
    assert not ok and "a loop that learns" in detail


def test_task_heads_check_gives_the_lecture_shapes_and_rejects_a_wrong_head(monkeypatch):
    ok, short, detail = certify.certify_task_heads()
    assert ok and "(2, 2)" in detail and "(2, 3)" in detail and "QuestionAnswering (2, " in detail, detail
    from minibert.tasks import BertForSequenceClassification, SequenceClassifierOutput

    def raw_cls_state(self, input_ids, attention_mask=None, token_type_ids=None, **kwargs):
        out = self.bert(input_ids, attention_mask, token_type_ids)  # the [CLS] state without the pooler: wrong
        return SequenceClassifierOutput(None, self.classifier(out.last_hidden_state[:, 0]))

    monkeypatch.setattr(BertForSequenceClassification, "forward", raw_cls_state)
    ok, short, detail = certify.certify_task_heads()
    assert not ok and "needs < 1e-4" in detail


def test_flops_check_counts_the_students_model_and_rejects_a_forward_only_count(monkeypatch):
    ok, short, detail = certify.certify_flops()
    assert ok and "545.42 MFLOP per token" in detail, detail
    import minibert.train as train

    real = train.flops_per_token

    def forward_only(config, seq_len, target_fraction=0.15):  # 2N + 4LHT: the backward pass forgotten
        return real(config, seq_len, target_fraction) / 3

    monkeypatch.setattr(train, "flops_per_token", forward_only)
    ok, short, detail = certify.certify_flops()
    assert not ok and "needs < 1e-6" in detail, detail


def test_electra_check_passes_the_reference_and_rejects_a_label_per_target(monkeypatch):
    ok, short, detail = certify.certify_electra()
    assert ok and "(right)" in detail, detail
    import minibert.variants as variants

    def every_target_replaced(input_ids, labels, generator_logits, generator=None):  # a lucky sample still "replaced"
        corrupted, _ = real(input_ids, labels, generator_logits, generator)
        return corrupted, (labels != -100).float()

    real = variants.replace_with_samples
    monkeypatch.setattr(variants, "replace_with_samples", every_target_replaced)
    ok, short, detail = certify.certify_electra()
    assert not ok and "wrong: expected 25%" in detail, detail
