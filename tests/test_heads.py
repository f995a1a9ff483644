"""minibert's pretraining heads (BertForPreTraining, BertForMaskedLM) against Hugging Face `transformers`.

Expected values come from `transformers` (the reference implementation) or from hand computation, never from
minibert itself. Random weights use odd, distinct sizes (vocab 99, hidden 24, heads 3, intermediate 37, 2 layers,
16 positions) and a large initializer_range (0.3) so that GELU, LayerNorm or a misplaced bias would show.
Run with `pytest -s` to see the measured differences.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
import transformers
from helpers import hf_config, max_diff, padded_pair_batch
from safetensors.torch import load_file

from minibert import BertConfig, BertForMaskedLM, BertForPreTraining, BertModel
from minibert.heads import masked_token_accuracy, pretraining_loss

SMALL = dict(vocab_size=99, hidden_size=24, num_attention_heads=3, intermediate_size=37, num_hidden_layers=2,
             max_position_embeddings=16)
B, T, V = 3, 9, SMALL["vocab_size"]
MASK_ID = 4  # any id stands for [MASK] here: the models do not treat it specially
ATOL = 1e-5
TIED = {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias"}


def small_config(**overrides) -> BertConfig:
    return BertConfig(**{**SMALL, **overrides})


def random_hf(cls, seed: int):
    """A transformers model with large random weights and non-trivial LayerNorms and biases (HF starts them at 1
    and 0, where a swapped weight/bias or a forgotten bias would not show)."""
    torch.manual_seed(seed)
    model = cls(hf_config(small_config(initializer_range=0.3)))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm" in name or name.endswith("bias"):
                p.add_(0.3 * torch.randn_like(p))
    return model.eval()


@pytest.fixture(scope="module")
def batch():
    """A padded batch with MLM labels: row 0 full, row 1 padded from 6, row 2 from 4; labels at a few real
    positions (one of them at a [MASK] input, the others at unchanged or random pieces), -100 elsewhere."""
    original, mask, segments = padded_pair_batch(V, seed=11, low=5)
    labels = torch.full((B, T), -100)
    ids = original.clone()
    for r, c, kind in [(0, 1, "mask"), (0, 5, "same"), (0, 7, "random"), (1, 2, "mask"), (1, 3, "mask"),
                       (1, 5, "same"), (2, 2, "mask"), (2, 3, "random")]:
        labels[r, c] = original[r, c]
        if kind == "mask":
            ids[r, c] = MASK_ID
        elif kind == "random":
            ids[r, c] = (original[r, c] + 17) % V
    ids[mask == 0] = 0
    nsp = torch.tensor([0, 1, 1])
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": segments, "labels": labels,
            "next_sentence_label": nsp}


@pytest.fixture(scope="module")
def pretraining_pair(offline):
    hf = random_hf(transformers.BertForPreTraining, seed=0)
    mb = BertForPreTraining(small_config(initializer_range=0.3))
    mb.load_state_dict(hf.state_dict(), strict=True)
    return hf, mb.eval()


@pytest.fixture(scope="module")
def mlm_pair(offline):
    hf = random_hf(transformers.BertForMaskedLM, seed=1)
    mb = BertForMaskedLM(small_config(initializer_range=0.3))
    mb.load_state_dict(hf.state_dict(), strict=True)
    return hf, mb.eval()


# 1. Keys, shapes and tying ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["BertForPreTraining", "BertForMaskedLM"])
def test_state_dict_keys_and_shapes_equal_transformers(offline, name):
    cfg = small_config()
    ref_model = getattr(transformers, name)(hf_config(cfg))
    ours_model = {"BertForPreTraining": BertForPreTraining, "BertForMaskedLM": BertForMaskedLM}[name](cfg)
    ref = {k: tuple(v.shape) for k, v in ref_model.state_dict().items()}
    ours = {k: tuple(v.shape) for k, v in ours_model.state_dict().items()}
    # Both list the tied decoder under its own name as well (nn.Module.state_dict keeps every name of a shared
    # Parameter); only save_pretrained writes it once.
    assert TIED <= set(ref), sorted(ref)
    assert set(ours) == set(ref), f"only minibert: {set(ours) - set(ref)}, only transformers: {set(ref) - set(ours)}"
    assert ours == ref
    assert ours["cls.predictions.decoder.weight"] == (V, 24)
    assert ours["cls.predictions.transform.dense.weight"] == (24, 24)
    if name == "BertForPreTraining":
        assert ours["cls.seq_relationship.weight"] == (2, 24) and "bert.pooler.dense.weight" in ours
    else:  # the MLM-only model has no pooler and no NSP head, as in transformers
        assert not any(k.startswith(("bert.pooler", "cls.seq_relationship")) for k in ours)


@pytest.mark.parametrize("cls", [BertForPreTraining, BertForMaskedLM])
def test_decoder_is_tied_to_the_word_embeddings(cls):
    model = cls(small_config())
    decoder = model.cls.predictions.decoder
    assert decoder.weight is model.bert.embeddings.word_embeddings.weight
    assert decoder.bias is model.cls.predictions.bias
    n_params = sum(p.numel() for p in model.parameters())
    n_named = sum(p.numel() for _, p in model.state_dict().items())
    assert n_named - n_params == V * 24 + V, "the tied matrix and bias should be counted once as parameters"
    # A gradient step on the decoder is a step on the embeddings: one tensor, two roles.
    with torch.no_grad():
        decoder.weight[7, 3] = 12.5
    assert model.bert.embeddings.word_embeddings.weight[7, 3].item() == 12.5
    # After loading a state dict the tie survives (load_state_dict copies into the one shared tensor).
    model.load_state_dict(cls(small_config()).state_dict(), strict=True)
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight


# 2. Outputs equal transformers' --------------------------------------------------------------------------------


def test_pretraining_outputs_match_transformers(pretraining_pair, batch):
    hf, mb = pretraining_pair
    assert mb.cls.predictions.decoder.weight is mb.bert.embeddings.word_embeddings.weight
    with torch.no_grad():
        ref = hf(**batch)
        out = mb(**batch)
    assert out.prediction_logits.shape == ref.prediction_logits.shape == (B, T, V)
    assert out.seq_relationship_logits.shape == ref.seq_relationship_logits.shape == (B, 2)
    d_loss = abs(out.loss.item() - ref.loss.item())
    d_logits = max_diff(out.prediction_logits, ref.prediction_logits)
    d_nsp = max_diff(out.seq_relationship_logits, ref.seq_relationship_logits)
    print(f"\nBertForPreTraining vs transformers: max |diff| loss={d_loss:.3g} prediction_logits={d_logits:.3g} "
          f"seq_relationship_logits={d_nsp:.3g} (logit scale {ref.prediction_logits.abs().max().item():.3g})")
    assert ref.prediction_logits.abs().max() > 1.0, "weights too small to test anything"
    assert d_logits < ATOL, f"prediction_logits differ from transformers by {d_logits:.3g}"
    assert d_nsp < ATOL, f"seq_relationship_logits differ from transformers by {d_nsp:.3g}"
    assert d_loss < ATOL, f"loss differs from transformers by {d_loss:.3g}"
    # The parts of the loss: transformers' total is MLM + NSP, each its own cross-entropy.
    mlm = F.cross_entropy(ref.prediction_logits.reshape(-1, V), batch["labels"].reshape(-1))
    nsp = F.cross_entropy(ref.seq_relationship_logits, batch["next_sentence_label"])
    assert abs(out.mlm_loss.item() - mlm.item()) < ATOL and abs(out.nsp_loss.item() - nsp.item()) < ATOL


def test_pretraining_without_labels_has_no_loss(pretraining_pair, batch):
    _, mb = pretraining_pair
    with torch.no_grad():
        out = mb(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
        only_mlm = mb(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"], labels=batch["labels"])
    assert out.loss is None and out.prediction_logits.shape == (B, T, V)
    assert only_mlm.loss is None, "the pretraining loss needs both MLM and NSP labels (as transformers' total)"


def test_masked_lm_outputs_match_transformers(mlm_pair, batch):
    hf, mb = mlm_pair
    inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids", "labels")}
    with torch.no_grad():
        ref = hf(**inputs)
        out = mb(**inputs)
    assert out.logits.shape == ref.logits.shape == (B, T, V)
    d_loss = abs(out.loss.item() - ref.loss.item())
    d_logits = max_diff(out.logits, ref.logits)
    print(f"\nBertForMaskedLM vs transformers: max |diff| loss={d_loss:.3g} logits={d_logits:.3g}")
    assert ref.logits.abs().max() > 1.0
    assert d_logits < ATOL, f"logits differ from transformers by {d_logits:.3g}"
    assert d_loss < ATOL, f"loss differs from transformers by {d_loss:.3g}"


# 3. targets_only ----------------------------------------------------------------------------------------------


def test_targets_only_gives_the_same_loss_and_rows(pretraining_pair, batch):
    _, mb = pretraining_pair
    with torch.no_grad():
        full = mb(**batch)
        part = mb(**batch, targets_only=True)
    targets = batch["labels"] != -100
    n = int(targets.sum())
    assert part.prediction_logits.shape == (n, V) == (8, V)
    d = max_diff(part.prediction_logits, full.prediction_logits[targets])  # row-major order of the targets
    assert d < 1e-6, f"target rows differ from the full logits by {d:.3g}"
    assert abs(part.loss.item() - full.loss.item()) < 1e-6
    assert abs(part.mlm_loss.item() - full.mlm_loss.item()) < 1e-6
    assert torch.equal(part.seq_relationship_logits, full.seq_relationship_logits)


def test_targets_only_masked_lm(mlm_pair, batch):
    _, mb = mlm_pair
    inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids", "labels")}
    with torch.no_grad():
        full = mb(**inputs)
        part = mb(**inputs, targets_only=True)
    targets = batch["labels"] != -100
    assert part.logits.shape == (int(targets.sum()), V)
    assert max_diff(part.logits, full.logits[targets]) < 1e-6
    assert abs(part.loss.item() - full.loss.item()) < 1e-6


@pytest.mark.parametrize("cls", [BertForPreTraining, BertForMaskedLM])
def test_targets_only_without_labels_raises(cls, batch):
    model = cls(small_config()).eval()
    with pytest.raises(ValueError, match="labels"):
        model(batch["input_ids"], batch["attention_mask"], targets_only=True)


def test_targets_only_backward_reaches_the_tied_matrix(batch):
    """Training uses targets_only: the tied matrix gets gradient from both roles (input rows and decoder)."""
    torch.manual_seed(3)
    model = BertForPreTraining(small_config()).train()
    model(**batch, targets_only=True).loss.backward()
    grad = model.bert.embeddings.word_embeddings.weight.grad
    assert grad is not None
    unused = sorted(set(range(V)) - set(batch["input_ids"].flatten().tolist()))
    assert grad[unused].abs().sum() > 0, "ids absent from the input must still get gradient through the decoder"
    assert model.cls.predictions.bias.grad is not None and model.cls.seq_relationship.weight.grad is not None


# 4. What the loss counts -------------------------------------------------------------------------------------


def test_padding_never_changes_the_loss(pretraining_pair, batch):
    _, mb = pretraining_pair
    extra = 5
    pad = {
        "input_ids": F.pad(batch["input_ids"], (0, extra), value=0),
        "attention_mask": F.pad(batch["attention_mask"], (0, extra), value=0),
        "token_type_ids": F.pad(batch["token_type_ids"], (0, extra), value=0),
        "labels": F.pad(batch["labels"], (0, extra), value=-100),
        "next_sentence_label": batch["next_sentence_label"],
    }
    padded_more = dict(pad, input_ids=pad["input_ids"].clone())
    padded_more["input_ids"][:, T:] = 42  # what sits under padding must not matter either
    with torch.no_grad():
        base = mb(**batch)
        longer = mb(**pad)
        other = mb(**padded_more)
    for out in (longer, other):
        assert abs(out.loss.item() - base.loss.item()) < 1e-5, (out.loss.item(), base.loss.item())
        assert abs(out.mlm_loss.item() - base.mlm_loss.item()) < 1e-5
        assert max_diff(out.seq_relationship_logits, base.seq_relationship_logits) < 1e-5
        real = batch["attention_mask"].bool()
        assert max_diff(out.prediction_logits[:, :T][real], base.prediction_logits[real]) < 1e-5


def test_loss_scores_every_target_not_only_the_masked_ones(pretraining_pair, batch):
    """BERT's MLM loss covers all selected targets, including those left unchanged or replaced by a random
    piece (80/10/10); scoring only the [MASK] positions is a different (wrong) loss."""
    _, mb = pretraining_pair
    labels = batch["labels"]
    targets = labels != -100
    at_mask = targets & (batch["input_ids"] == MASK_ID)
    assert 0 < int(at_mask.sum()) < int(targets.sum())
    with torch.no_grad():
        out = mb(**batch)
    logp = out.prediction_logits.log_softmax(-1)
    nll = -logp.gather(-1, labels.clamp(min=0)[..., None])[..., 0]  # (B, T)
    all_targets = nll[targets].mean().item()
    masked_only = nll[at_mask].mean().item()
    nsp = -out.seq_relationship_logits.log_softmax(-1).gather(-1, batch["next_sentence_label"][:, None]).mean()
    assert abs(out.mlm_loss.item() - all_targets) < 1e-5
    assert abs(out.loss.item() - (all_targets + nsp.item())) < 1e-5
    assert abs(masked_only - all_targets) > 1e-3, "this batch cannot tell the two losses apart"
    assert abs(out.mlm_loss.item() - masked_only) > 1e-3


# 5. Checkpoints both ways ------------------------------------------------------------------------------------


def assert_same_pretraining_outputs(ref, out, route: str) -> None:
    """transformers' and minibert's BertForPreTraining outputs agree: MLM logits, NSP logits and loss."""
    d = max_diff(ref.prediction_logits, out.prediction_logits)
    print(f"\n{route}: max |diff| prediction_logits={d:.3g}")
    assert d < ATOL
    assert max_diff(ref.seq_relationship_logits, out.seq_relationship_logits) < ATOL
    assert abs(ref.loss.item() - out.loss.item()) < ATOL


def test_save_pretrained_writes_the_tied_matrix_once_and_transformers_loads_it(offline, batch, tmp_path):
    torch.manual_seed(5)
    mb = BertForPreTraining(small_config(initializer_range=0.3)).eval()
    with torch.no_grad():
        mb.cls.predictions.bias.add_(torch.randn(V))  # a non-zero decoder bias must survive the round trip
    mb.save_pretrained(tmp_path)
    keys = set(load_file(str(tmp_path / "model.safetensors")))
    assert "cls.predictions.decoder.weight" not in keys
    assert "bert.embeddings.word_embeddings.weight" in keys and "cls.predictions.bias" in keys
    assert keys | TIED == set(mb.state_dict()), sorted(set(mb.state_dict()) ^ keys)
    hf, info = transformers.BertForPreTraining.from_pretrained(tmp_path, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    hf.eval()
    assert hf.cls.predictions.decoder.weight is hf.bert.embeddings.word_embeddings.weight
    with torch.no_grad():
        ref = hf(**batch)
        out = mb(**batch)
    assert_same_pretraining_outputs(ref, out, "minibert save -> transformers load")
    # and minibert reads its own folder back, tie restored
    again = BertForPreTraining.from_pretrained(tmp_path)
    assert again.cls.predictions.decoder.weight is again.bert.embeddings.word_embeddings.weight
    with torch.no_grad():
        assert max_diff(again(**batch).prediction_logits, out.prediction_logits) < 1e-6


def test_transformers_save_loads_into_minibert(offline, batch, tmp_path):
    hf = random_hf(transformers.BertForPreTraining, seed=6)
    hf.save_pretrained(tmp_path)
    mb = BertForPreTraining.from_pretrained(tmp_path)
    assert not mb.training
    assert mb.cls.predictions.decoder.weight is mb.bert.embeddings.word_embeddings.weight
    assert mb.cls.predictions.decoder.bias is mb.cls.predictions.bias
    with torch.no_grad():
        ref = hf(**batch)
        out = mb(**batch)
    assert_same_pretraining_outputs(ref, out, "transformers save -> minibert load")


def test_transformers_masked_lm_save_loads_into_minibert(offline, batch, tmp_path):
    hf = random_hf(transformers.BertForMaskedLM, seed=7)
    hf.save_pretrained(tmp_path)
    mb = BertForMaskedLM.from_pretrained(tmp_path)
    inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids", "labels")}
    with torch.no_grad():
        ref = hf(**inputs)
        out = mb(**inputs)
    assert max_diff(ref.logits, out.logits) < ATOL
    assert abs(ref.loss.item() - out.loss.item()) < ATOL


def test_bert_model_loads_a_pretraining_folder_without_its_heads(batch, tmp_path):
    torch.manual_seed(8)
    pre = BertForPreTraining(small_config(initializer_range=0.3)).eval()
    pre.save_pretrained(tmp_path)
    base = BertModel.from_pretrained(tmp_path)
    assert not any(k.startswith("cls.") for k in base.state_dict())
    args = (batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
    with torch.no_grad():
        ref = pre.bert(*args)
        out = base(*args)
    assert max_diff(ref.last_hidden_state, out.last_hidden_state) < 1e-6
    assert max_diff(ref.pooler_output, out.pooler_output) < 1e-6


# 6. Metrics and the loss function by hand ------------------------------------------------------------------


def test_masked_token_accuracy_by_hand():
    logits = torch.zeros(1, 5, 6)
    logits[0, 0, 2] = 1.0  # predicts 2
    logits[0, 1, 3] = 1.0  # predicts 3
    logits[0, 2, 5] = 1.0  # predicts 5
    logits[0, 3, 1] = 1.0  # predicts 1 (not a target)
    logits[0, 4, 4] = 1.0  # predicts 4
    labels = torch.tensor([[2, 0, 5, -100, 1]])  # right, wrong, right, ignored, wrong
    assert masked_token_accuracy(logits, labels) == pytest.approx(2 / 4)
    # the (N, V) logits of targets_only with the (N,) labels of the targets
    assert masked_token_accuracy(logits[0, [0, 1, 2, 4]], labels[0, [0, 1, 2, 4]]) == pytest.approx(2 / 4)
    assert masked_token_accuracy(logits, torch.full((1, 5), -100)) == 0.0  # no targets: 0, not NaN


def test_pretraining_loss_by_hand():
    # MLM: two targets over V=4. Uniform logits cost log 4; logits (log 3, 0, 0, 0) give p(0) = 3/6.
    pred = torch.zeros(1, 3, 4)
    pred[0, 1, 0] = math.log(3)
    labels = torch.tensor([[2, 0, -100]])
    expected_mlm = (math.log(4) + -math.log(3 / 6)) / 2
    # NSP: logits (0, log 3): p(NotNext) = 3/4; pair 0 is NotNext (1), pair 1 IsNext (0).
    nsp_logits = torch.tensor([[0.0, math.log(3)], [0.0, math.log(3)]])
    nsp_labels = torch.tensor([1, 0])
    expected_nsp = (-math.log(3 / 4) - math.log(1 / 4)) / 2
    loss, mlm, nsp = pretraining_loss(pred, labels, nsp_logits, nsp_labels)
    assert mlm.item() == pytest.approx(expected_mlm, abs=1e-6)
    assert nsp.item() == pytest.approx(expected_nsp, abs=1e-6)
    assert loss.item() == pytest.approx(expected_mlm + expected_nsp, abs=1e-6)
    # the padding row's logits are irrelevant: change them wildly, same loss
    pred[0, 2] = torch.tensor([100.0, -50.0, 3.0, 7.0])
    assert pretraining_loss(pred, labels, nsp_logits, nsp_labels)[0].item() == pytest.approx(loss.item(), abs=1e-6)


def test_next_sentence_logits_by_hand():
    """The NSP head: classifier(tanh(dense(h[:, 0]))), with weights chosen so that every step shows."""
    from minibert.heads import next_sentence_logits

    dense, classifier = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    with torch.no_grad():
        dense.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, -2.0]]))
        dense.bias.copy_(torch.tensor([0.0, 1.0]))
        classifier.weight.copy_(torch.tensor([[1.0, 1.0], [2.0, -1.0]]))
        classifier.bias.copy_(torch.tensor([0.5, -0.5]))
    h = torch.tensor([[[0.5, 1.0], [9.0, 9.0]], [[-1.0, 0.0], [-9.0, 9.0]]])  # (B=2, T=2, H=2); position 0 = [CLS]
    pooled = [[math.tanh(0.5), math.tanh(-1.0)], [math.tanh(-1.0), math.tanh(1.0)]]  # tanh(W h0 + b)
    expected = torch.tensor([[p0 + p1 + 0.5, 2 * p0 - p1 - 0.5] for p0, p1 in pooled])
    assert max_diff(next_sentence_logits(h, dense, classifier), expected) < 1e-6


def test_the_model_reads_nsp_from_the_pooler_and_seq_relationship(batch):
    """BertForPreTraining's NSP logits are next_sentence_logits of bert.pooler.dense and cls.seq_relationship,
    and equal the classifier applied to BertModel's pooler_output."""
    torch.manual_seed(3)
    model = BertForPreTraining(small_config()).eval()
    with torch.no_grad():
        out = model(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
        base = model.bert(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
        h0 = base.last_hidden_state[:, 0]
        dense, cls = model.bert.pooler.dense, model.cls.seq_relationship
        expected = torch.tanh(h0 @ dense.weight.T + dense.bias) @ cls.weight.T + cls.bias
    assert out.seq_relationship_logits.shape == (B, 2)
    assert max_diff(out.seq_relationship_logits, expected) < 1e-6
    assert max_diff(out.seq_relationship_logits, cls(base.pooler_output)) < 1e-6
    from minibert.heads import next_sentence_logits

    assert torch.equal(out.seq_relationship_logits, next_sentence_logits(base.last_hidden_state, dense, cls))
    calls = []
    hook = dense.register_forward_hook(lambda *_: calls.append(1))
    with torch.no_grad():
        model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    hook.remove()
    assert len(calls) == 1, f"the pooler ran {len(calls)} times in one forward: BertModel's pooler_output is read"
