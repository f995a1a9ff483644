"""minibert against `transformers` where eval-mode tests cannot look: training mode (dropout on), gradients, the
initialization minibert draws itself, and the per-forward input-id check (no device sync, no graph break).

Why: every other equivalence test runs in eval mode, where dropout is the identity. A dropout moved after the
LayerNorm, a forgotten attention or embedding dropout, or a dropout left on in eval would pass them all. Here both
implementations get the same weights and the same `torch.manual_seed` before each forward pass: if minibert applies
the same dropouts, at the same places, in the same order, it draws the same masks from the same random stream and
its outputs equal transformers' bit for bit. Two routes are compared: transformers' "sdpa" attention against
minibert's default fused path (`F.scaled_dot_product_attention`, dropout inside the kernel), and transformers'
"eager" attention against minibert's written-out path (`output_attentions=True`, `F.dropout` on the probabilities).
On CPU both kernels draw their attention-dropout mask from the default CPU generator in the same pattern, so all four
paths line up (on a GPU the fused kernels use their own Philox stream; these tests run on CPU).
Each wrong implementation of section 2 and each wrong initialization of section 3 is a monkeypatch of minibert
inside the test (src/ is never edited): the same comparison must reject it, which shows the comparison has teeth.
Sizes are tiny (vocab 99, hidden 32, 2 layers, 2 heads: head width 16, so 1/sqrt(d) = 0.25 is exact in both
implementations' scaling). Run with `pytest -s` to see the measured differences.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
import transformers
from helpers import hf_config, max_diff, padded_pair_batch
from torch import nn

import minibert.attention
import minibert.checkpoint
import minibert.embeddings
from minibert import BertConfig, BertForPreTraining, BertModel

SMALL = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
             max_position_embeddings=16, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
B, T, V = 3, 9, SMALL["vocab_size"]
FORWARD_ATOL = 1e-6  # observed: exactly equal (0.0); the margin only absorbs a reordered float sum
GRAD_TOL = 1e-5  # relative and absolute; observed: exactly equal (0.0)
# route -> (transformers' attn_implementation, minibert's output_attentions)
ROUTES = {"fused": ("sdpa", False), "written-out": ("eager", True)}
SEEDS = (0, 1)


def small_config(**overrides) -> BertConfig:
    return BertConfig(**{**SMALL, **overrides})


@pytest.fixture(scope="module")
def batch():
    """A padded pair batch: row 0 full, row 1 padded from 6, row 2 from 4; segments 0/1; MLM labels at a few real
    positions (-100 elsewhere) and NSP labels."""
    ids, mask, segments = padded_pair_batch(V, seed=7, low=1)
    ids[mask == 0] = 0
    labels = torch.full((B, T), -100)
    for r, c in [(0, 1), (0, 6), (1, 2), (1, 5), (2, 3)]:
        labels[r, c] = (int(ids[r, c]) + 11) % V
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": segments, "labels": labels,
            "next_sentence_label": torch.tensor([0, 1, 1])}


@pytest.fixture(scope="module")
def pairs(offline):
    """route -> (transformers.BertForPreTraining with that attention, minibert.BertForPreTraining with its weights).
    Large random weights, and LayerNorms and biases moved off their 1/0 start, so that nothing is trivially equal."""
    out = {}
    for route, (impl, _) in ROUTES.items():
        torch.manual_seed(0)
        cfg = small_config(initializer_range=0.2)
        hf = transformers.BertForPreTraining(hf_config(cfg, attn_implementation=impl))
        assert hf.config._attn_implementation == impl
        with torch.no_grad():
            for name, p in hf.named_parameters():
                if "LayerNorm" in name or name.endswith("bias"):
                    p.add_(0.2 * torch.randn_like(p))
        mb = BertForPreTraining(cfg)
        mb.load_state_dict(hf.state_dict(), strict=True)
        out[route] = hf, mb
    return out


# 1. Training mode equals transformers, dropout on --------------------------------------------------------------


def run_both(hf, mb, route: str, batch: dict, *, train: bool, seed: int, grad: bool = False):
    """Both models' BertModel and BertForPreTraining outputs, each forward pass preceded by the same seed."""
    output_attentions = ROUTES[route][1]
    hf.train(train)
    mb.train(train)
    base_inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")}
    with torch.set_grad_enabled(grad):
        torch.manual_seed(seed)
        ref_base = hf.bert(**base_inputs)
        torch.manual_seed(seed)
        out_base = mb.bert(**base_inputs, output_attentions=output_attentions)
        assert (out_base.attentions is not None) == output_attentions, f"{route}: minibert took the other path"
        torch.manual_seed(seed)
        ref = hf(**batch)
        torch.manual_seed(seed)
        out = mb(**batch, output_attentions=output_attentions)
    return {"BertModel.last_hidden_state": (ref_base.last_hidden_state, out_base.last_hidden_state),
            "BertModel.pooler_output": (ref_base.pooler_output, out_base.pooler_output),
            "prediction_logits": (ref.prediction_logits, out.prediction_logits),
            "seq_relationship_logits": (ref.seq_relationship_logits, out.seq_relationship_logits),
            "loss": (ref.loss, out.loss)}


def differences(hf, mb, route: str, batch: dict, *, train: bool, seed: int = 0) -> dict[str, float]:
    """The comparison used by the real test and by the wrong variants: max |transformers - minibert| per output."""
    return {name: max_diff(r, o) for name, (r, o) in run_both(hf, mb, route, batch, train=train, seed=seed).items()}


def mismatches(diffs: dict[str, float]) -> dict[str, float]:
    return {name: d for name, d in diffs.items() if not d <= FORWARD_ATOL}


@pytest.mark.parametrize("route", ROUTES)
def test_training_mode_outputs_equal_transformers(pairs, batch, route):
    hf, mb = pairs[route]
    for seed in SEEDS:
        outputs = run_both(hf, mb, route, batch, train=True, seed=seed)
        diffs = {name: max_diff(r, o) for name, (r, o) in outputs.items()}
        exact = all(torch.equal(r, o) for r, o in outputs.values())
        print(f"\n{route}, train, seed {seed}: exactly equal={exact}, max |diff| "
              + " ".join(f"{k}={v:.3g}" for k, v in diffs.items()))
        assert not mismatches(diffs), (f"{route} route, training mode, seed {seed}: minibert differs from "
                                       f"transformers (expected max |diff| <= {FORWARD_ATOL}, got {mismatches(diffs)})")
        assert outputs["loss"][0].item() > 0.1, "a loss this small would compare nothing"


@pytest.mark.parametrize("route", ROUTES)
def test_training_mode_gradients_equal_transformers(pairs, batch, route):
    hf, mb = pairs[route]
    hf.zero_grad(set_to_none=True)
    mb.zero_grad(set_to_none=True)
    outputs = run_both(hf, mb, route, batch, train=True, seed=3, grad=True)
    ref_loss, loss = outputs["loss"]
    assert abs(ref_loss.item() - loss.item()) <= FORWARD_ATOL, f"loss: expected {ref_loss.item()}, got {loss.item()}"
    ref_loss.backward()
    loss.backward()
    ref_params, params = dict(hf.named_parameters()), dict(mb.named_parameters())
    assert set(params) == set(ref_params), (f"parameter names differ: only minibert {set(params) - set(ref_params)}, "
                                            f"only transformers {set(ref_params) - set(params)}")
    worst, inexact = 0.0, []
    for name, p in params.items():
        ref_grad = ref_params[name].grad
        assert p.grad is not None and ref_grad is not None, f"{name}: no gradient (minibert {p.grad is not None}, " \
            f"transformers {ref_grad is not None})"
        torch.testing.assert_close(p.grad, ref_grad, rtol=GRAD_TOL, atol=GRAD_TOL,
                                   msg=lambda m, name=name: f"{route}: gradient of {name} differs: {m}")
        worst = max(worst, max_diff(p.grad, ref_grad))
        inexact += [] if torch.equal(p.grad, ref_grad) else [name]
    print(f"\n{route}: {len(params)} gradients, max |diff| {worst:.3g}, not bit-identical: {inexact or 'none'}")
    assert any(p.grad.abs().max() > 0 for p in params.values())


@pytest.mark.parametrize("route", ROUTES)
def test_training_is_stochastic_and_eval_is_not(pairs, batch, route):
    """The comparisons above test something only if dropout really draws: two seeds differ in training mode (in
    both libraries), the same seed repeats, and in eval mode the seed does not matter."""
    hf, mb = pairs[route]
    first = run_both(hf, mb, route, batch, train=True, seed=10)
    second = run_both(hf, mb, route, batch, train=True, seed=11)
    again = run_both(hf, mb, route, batch, train=True, seed=10)
    for name in first:
        for lib, i in (("transformers", 0), ("minibert", 1)):
            d = max_diff(first[name][i], second[name][i])
            assert d > 1e-3, f"{route}, {lib}, {name}: seeds 10 and 11 gave outputs {d:.3g} apart: dropout is off"
            assert torch.equal(first[name][i], again[name][i]), f"{route}, {lib}, {name}: seed 10 did not repeat"
    eval_a = run_both(hf, mb, route, batch, train=False, seed=10)
    eval_b = run_both(hf, mb, route, batch, train=False, seed=11)
    for name in eval_a:
        for lib, i in (("transformers", 0), ("minibert", 1)):
            assert torch.equal(eval_a[name][i], eval_b[name][i]), f"{route}, {lib}, {name}: eval mode is random"
    assert not mismatches(differences(hf, mb, route, batch, train=False))


# 2. The comparison rejects wrong implementations --------------------------------------------------------------


def residual_dropout_after_layernorm(self, x, residual):
    return self.dropout(self.LayerNorm(self.dense(x) + residual))


def residual_dropout_in_eval_too(self, x, residual):
    return self.LayerNorm(F.dropout(self.dense(x), self.dropout.p, training=True) + residual)


def embeddings_without_dropout(self, input_ids, token_type_ids=None, position_ids=None):
    T_ = input_ids.shape[1]
    position_ids = torch.arange(T_, device=input_ids.device).unsqueeze(0) if position_ids is None else position_ids
    token_type_ids = torch.zeros_like(input_ids) if token_type_ids is None else token_type_ids
    x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
    return self.LayerNorm(x + self.position_embeddings(position_ids))


def attention_dropout_on_the_context(self, hidden_states, mask=None, output_attentions=False):
    """Dropout on the attention output instead of on the probabilities (the same rate, the wrong tensor)."""
    B_, T_, H = hidden_states.shape
    q, k, v = (lin(hidden_states).view(B_, T_, self.num_heads, self.head_dim).transpose(1, 2)
               for lin in (self.query, self.key, self.value))
    if output_attentions:  # written out, as minibert.attention.attention_with_probs
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        probs = (scores if mask is None else scores + mask).softmax(-1)
        context = probs @ v
    else:
        context, probs = F.scaled_dot_product_attention(q, k, v, attn_mask=mask), None
    context = F.dropout(context, self.dropout_p, training=self.training)
    return context.transpose(1, 2).reshape(B_, T_, H), probs


def apply_wrong(variant: str, mb, monkeypatch) -> None:
    if variant == "dropout after the LayerNorm":
        monkeypatch.setattr(minibert.attention.BertResidual, "forward", residual_dropout_after_layernorm)
    elif variant == "no attention dropout":
        for module in mb.modules():
            if isinstance(module, minibert.attention.BertSelfAttention):
                monkeypatch.setattr(module, "dropout_p", 0.0)
    elif variant == "no embedding dropout":
        monkeypatch.setattr(minibert.embeddings.BertEmbeddings, "forward", embeddings_without_dropout)
    elif variant == "attention dropout on the context":
        monkeypatch.setattr(minibert.attention.BertSelfAttention, "forward", attention_dropout_on_the_context)
    elif variant == "dropout in eval too":
        monkeypatch.setattr(minibert.attention.BertResidual, "forward", residual_dropout_in_eval_too)
    else:
        raise AssertionError(variant)


# variant -> (the training-mode comparison catches it, the eval-mode comparison catches it)
WRONG = {"dropout after the LayerNorm": (True, False), "no attention dropout": (True, False),
         "no embedding dropout": (True, False), "attention dropout on the context": (True, False),
         "dropout in eval too": (False, True)}


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("variant", WRONG)
def test_comparison_rejects_wrong_dropout(pairs, batch, route, variant, monkeypatch):
    """Each wrong dropout is invisible to one of the two comparisons: the first four to eval mode (dropout is the
    identity there), the last one to training mode. Both comparisons are needed, and each catches its variants."""
    hf, mb = pairs[route]
    assert not mismatches(differences(hf, mb, route, batch, train=True)), "the correct model must pass first"
    apply_wrong(variant, mb, monkeypatch)
    caught_in_train, caught_in_eval = WRONG[variant]
    for train, expected in ((True, caught_in_train), (False, caught_in_eval)):
        diffs = differences(hf, mb, route, batch, train=train)
        mode = "training" if train else "eval"
        print(f"\n{variant}, {route}, {mode}: max |diff| {max(diffs.values()):.3g}")
        if expected:
            assert mismatches(diffs), f"{variant!r} ({route}): the {mode}-mode comparison did not notice it: {diffs}"
            assert max(diffs.values()) > 1e-3, f"{variant!r}: a difference this small could pass as rounding"
        else:
            assert not mismatches(diffs), (f"{variant!r} ({route}): expected the {mode}-mode comparison to be blind "
                                           f"to it (max |diff| <= {FORWARD_ATOL}), got {mismatches(diffs)}")


# 3. minibert's own initialization -----------------------------------------------------------------------------

INIT = dict(vocab_size=500, hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
            max_position_embeddings=64)


def tolerance(n: int) -> float:
    """Relative tolerance of a sample std of n normal draws: 10%, or 5 standard errors (1 / sqrt(2n)) if larger
    (the 2 x 64 NSP classifier and segment table have only 128 entries)."""
    return max(0.1, 5 / math.sqrt(2 * n))


def init_problems(model, r: float) -> list[str]:
    """Everything wrong with `model`'s initialization for initializer_range r (empty = as Hugging Face's BERT)."""
    problems = []
    cfg = model.config
    word = model.bert.embeddings.word_embeddings.weight
    decoder = model.cls.predictions.decoder
    for name, param in model.named_parameters():
        p = param.detach()
        if p.dim() == 2:  # every Linear weight and embedding matrix, each on its own
            values = p[torch.arange(p.shape[0]) != cfg.pad_token_id] if param is word else p
            n, mean, std = values.numel(), values.mean().item(), values.std().item()
            if abs(mean) > 5 * r / math.sqrt(n):
                problems.append(f"{name}: mean {mean:.3g}, expected 0 (+- {5 * r / math.sqrt(n):.2g})")
            if abs(std / r - 1) > tolerance(n):
                problems.append(f"{name}: std {std:.4g}, expected {r} (+- {tolerance(n):.0%})")
        elif name.endswith("LayerNorm.weight"):
            if not torch.all(p == 1):
                problems.append(f"{name}: expected all ones, got values in [{p.min().item():.3g}, "
                                f"{p.max().item():.3g}]")
        elif name.endswith("bias"):
            if not torch.all(p == 0):
                problems.append(f"{name}: expected all zeros, got max |value| {p.abs().max().item():.3g}")
        else:
            problems.append(f"{name}: unexpected parameter of shape {tuple(p.shape)}")
    if not torch.all(word[cfg.pad_token_id] == 0):
        problems.append(f"word_embeddings row {cfg.pad_token_id} (pad_token_id) is not zero")
    if getattr(cfg, "tie_word_embeddings", True):
        if decoder.weight is not word:
            problems.append("tied: the decoder weight is not the word-embedding tensor")
        if decoder.bias is not model.cls.predictions.bias:
            problems.append("tied: the decoder bias is not cls.predictions.bias")
    else:
        if decoder.weight is word or decoder.weight.data_ptr() == word.data_ptr():
            problems.append("untied: the decoder still shares the word-embedding tensor")
        elif torch.equal(decoder.weight, word):
            problems.append("untied: the decoder is a copy of the word embeddings, not drawn on its own")
    return problems


INIT_CASES = [(r, pad, tie) for r in (0.02, 0.1) for pad in (0, 3) for tie in (True, False)]


def init_config(r: float, pad: int, tie: bool = True) -> BertConfig:
    """The statistics config; tie_word_embeddings is passed only when False (True is the default)."""
    return BertConfig(**INIT, initializer_range=r, pad_token_id=pad, **({} if tie else {"tie_word_embeddings": False}))


@pytest.mark.parametrize(("r", "pad", "tie"), INIT_CASES)
def test_own_initialization_follows_bert(r, pad, tie):
    torch.manual_seed(100)
    model = BertForPreTraining(init_config(r, pad, tie))
    problems = init_problems(model, r)
    assert not problems, "\n".join(problems)
    names = dict(model.named_parameters())
    assert ("cls.predictions.decoder.weight" in names) == (not tie)  # untied: a parameter of its own, also checked
    assert "cls.predictions.bias" in names
    if not tie:
        assert torch.all(model.cls.predictions.decoder.bias == 0)


@pytest.mark.parametrize(("r", "pad", "tie"), [(0.02, 0, True), (0.1, 3, False)])
def test_initialization_matches_transformers_distribution(offline, r, pad, tie):
    """The same config in transformers: every parameter has the same std (within the two samples' tolerance), and
    the exact values (ones, zeros, the padding row) are equal."""
    cfg = init_config(r, pad, tie)
    torch.manual_seed(101)
    ref = dict(transformers.BertForPreTraining(hf_config(cfg)).named_parameters())
    torch.manual_seed(102)
    ours = dict(BertForPreTraining(cfg).named_parameters())
    assert set(ours) == set(ref), f"only minibert: {set(ours) - set(ref)}, only transformers: {set(ref) - set(ours)}"
    for name, p in ours.items():
        q = ref[name].detach()
        p = p.detach()
        if p.dim() == 2:
            s, s_ref = p.std().item(), q.std().item()
            assert abs(s - s_ref) / r <= 2 * tolerance(p.numel()), f"{name}: std {s:.4g}, transformers' {s_ref:.4g}"
        else:
            assert torch.equal(p, q), f"{name}: expected transformers' constant init, got {p[:5].tolist()}..."
    key = "bert.embeddings.word_embeddings.weight"
    assert torch.all(ref[key][pad] == 0) and torch.all(ours[key][pad] == 0)


def init_std_hardcoded(self):
    std = 0.02  # wrong: ignores config.initializer_range
    for module in self.modules():
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=std)
            if getattr(module, "bias", None) is not None:
                nn.init.zeros_(module.bias)
            if isinstance(module, nn.Embedding) and module.padding_idx is not None:
                with torch.no_grad():
                    module.weight[module.padding_idx].zero_()


def init_wrapping(skip: str):
    """The correct init_weights, then one thing undone or done wrong."""
    correct = minibert.checkpoint.PreTrainedMixin.init_weights

    def init_weights(self):
        correct(self)
        std = self.config.initializer_range
        embeddings = {id(m.weight) for m in self.modules() if isinstance(m, nn.Embedding)}
        for module in self.modules():
            if skip == "Linear weights at PyTorch's default" and isinstance(module, nn.Linear):
                if id(module.weight) not in embeddings:  # a tied decoder is the embedding matrix
                    module.reset_parameters()  # kaiming-uniform weight ...
                    if module.bias is not None:
                        nn.init.zeros_(module.bias)  # ... biases still zero
            elif skip == "biases at PyTorch's default" and isinstance(module, nn.Linear) and module.bias is not None:
                bound = 1 / math.sqrt(module.in_features)
                nn.init.uniform_(module.bias, -bound, bound)
            elif skip == "LayerNorm weight drawn like a matrix" and isinstance(module, nn.LayerNorm):
                nn.init.normal_(module.weight, std=std)
            elif skip == "padding row not zeroed" and isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, std=std)
            elif skip == "fresh Parameters (tie broken)" and isinstance(module, nn.Linear):
                module.weight = nn.Parameter(torch.empty_like(module.weight).normal_(0, std))
        if skip == "untied decoder copied from the embeddings" and hasattr(self, "cls"):
            with torch.no_grad():
                self.cls.predictions.decoder.weight.copy_(self.bert.embeddings.word_embeddings.weight)

    return init_weights


WRONG_INIT = ["std hard-coded 0.02", "Linear weights at PyTorch's default", "biases at PyTorch's default",
              "LayerNorm weight drawn like a matrix", "padding row not zeroed", "fresh Parameters (tie broken)",
              "untied decoder copied from the embeddings"]


@pytest.mark.parametrize("variant", WRONG_INIT)
def test_initialization_checks_reject_wrong_inits(variant, monkeypatch):
    cfg = init_config(0.1, 3, tie=variant != "untied decoder copied from the embeddings")
    wrong = init_std_hardcoded if variant == "std hard-coded 0.02" else init_wrapping(variant)
    monkeypatch.setattr(minibert.checkpoint.PreTrainedMixin, "init_weights", wrong)
    torch.manual_seed(100)
    problems = init_problems(BertForPreTraining(cfg), 0.1)
    print(f"\n{variant}: {len(problems)} problems, e.g. {problems[:2]}")
    assert problems, f"the initialization checks accepted a wrong init: {variant}"


# 4. The per-forward input-id check: no device sync, no graph break --------------------------------------------


@pytest.fixture(scope="module")
def compiled():
    """Both minibert models in eval mode, each with its torch.compile(fullgraph=True) twin (a graph break, such as
    a data-dependent branch on the ids, is an error under fullgraph=True)."""
    torch.manual_seed(5)
    cfg = small_config()
    models = {"BertModel": BertModel(cfg).eval(), "BertForPreTraining": BertForPreTraining(cfg).eval()}
    return {name: (m, torch.compile(m, backend="eager", fullgraph=True)) for name, m in models.items()}


@pytest.mark.parametrize("name", ["BertModel", "BertForPreTraining"])
def test_compiles_without_graph_break_and_equals_eager(compiled, batch, name):
    model, twin = compiled[name]
    inputs = (batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
    with torch.no_grad():
        ref, out = model(*inputs), twin(*inputs)
    field = "last_hidden_state" if name == "BertModel" else "prediction_logits"
    d = max_diff(getattr(ref, field), getattr(out, field))
    print(f"\n{name}: compiled vs eager max |diff| {d:.3g}")
    assert d <= FORWARD_ATOL, f"{name}.{field}: compiled differs from eager by {d:.3g}"


@pytest.mark.parametrize("name", ["BertModel", "BertForPreTraining"])
def test_compiled_model_still_refuses_an_out_of_range_id(compiled, batch, name):
    """Inside the compiled graph the check is skipped; on CPU the embedding lookup itself still refuses the id."""
    _, twin = compiled[name]
    ids = batch["input_ids"].clone()
    ids[0, 2] = V
    with pytest.raises((IndexError, ValueError)), torch.no_grad():
        twin(ids, batch["attention_mask"], batch["token_type_ids"])


@pytest.mark.parametrize("how", ["built on meta", "moved to meta"])
@pytest.mark.parametrize("cls", [BertModel, BertForPreTraining])
def test_forward_runs_on_the_meta_device(cls, how):
    """The CPU twin of "no device sync": meta tensors have shapes but no values, so any check that reads the ids
    (or a boolean-mask index, whose size depends on them) fails here, as it would stall a GPU."""
    cfg = small_config()
    if how == "built on meta":
        with torch.device("meta"):
            model = cls(cfg)
    else:
        model = cls(cfg).to("meta")
    assert next(model.parameters()).is_meta
    ids = torch.empty(B, T, dtype=torch.long, device="meta")
    mask = torch.ones(B, T, dtype=torch.long, device="meta")
    out = model(ids, mask, torch.zeros_like(ids))
    if cls is BertModel:
        assert out.last_hidden_state.shape == (B, T, 32) and out.last_hidden_state.is_meta
        assert out.pooler_output.shape == (B, 32)
    else:
        assert out.prediction_logits.shape == (B, T, V) and out.prediction_logits.is_meta
        assert out.seq_relationship_logits.shape == (B, 2)


@pytest.mark.parametrize("bad", [V, -1, V + 1000])
@pytest.mark.parametrize("cls", [BertModel, BertForPreTraining])
def test_out_of_range_id_is_named_on_cpu(cls, bad):
    torch.manual_seed(6)
    model = cls(small_config()).eval()
    ids = torch.tensor([[2, 5, bad, 7], [2, 3, 4, 5]])
    with pytest.raises(ValueError, match="tokenizer") as exc:
        model(ids)
    assert f"input id {bad} " in str(exc.value), f"expected the message to name id {bad}, got: {exc.value}"
    model(torch.tensor([[2, 0, V - 1, 7]]))  # the first and last ids of the vocabulary are fine


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU: checks that a forward pass never reads "
                    "the ids back to the host (its CPU twin is test_forward_runs_on_the_meta_device)")
@pytest.mark.parametrize("cls", [BertModel, BertForPreTraining])
def test_forward_does_not_sync_the_gpu(cls, batch):
    torch.manual_seed(8)
    model = cls(small_config()).cuda().eval()
    inputs = [batch[k].cuda() for k in ("input_ids", "attention_mask", "token_type_ids")]
    torch.cuda.synchronize()
    previous = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("error")
    try:
        with pytest.raises(RuntimeError, match="synchroniz"):  # the mode is armed: reading a value back raises
            int(inputs[0].max())
        with torch.no_grad():
            out = model(*inputs)
    finally:
        torch.cuda.set_sync_debug_mode(previous)
    torch.cuda.synchronize()
    first = out.last_hidden_state if cls is BertModel else out.prediction_logits
    assert first.is_cuda and torch.isfinite(first).all()
