"""minibert.BertModel against Hugging Face `transformers`: keys, outputs, checkpoints both ways, errors.

Expected values come from `transformers` (the reference implementation) or from reasoning about BERT itself
(padding keys are invisible, attention is bidirectional, a causal mask hides the future), never from minibert.
Random-weight tests use odd, distinct sizes (batch 3, seq 7, vocab 99, hidden 24, heads 3, intermediate 37,
2 layers, 11 positions, 3 segments) so that a swapped or mis-split axis cannot go unnoticed.
Run with `pytest -s` to see the measured differences and parameter counts.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
import torch
import transformers
from helpers import hf_config, max_diff
from safetensors.torch import load_file, save_file

import minibert.checkpoint
from minibert import BertConfig, BertModel, BertTokenizer
from minibert.attention import additive_mask, attention_pattern
from minibert.model import BertLayer, count_parameters
from minibert.tokenization import pretrained_dir

B, T = 3, 7
SMALL = dict(vocab_size=99, hidden_size=24, num_attention_heads=3, intermediate_size=37, num_hidden_layers=2,
             max_position_embeddings=11, type_vocab_size=3)
ATOL = 1e-5


def small_config(**overrides) -> BertConfig:
    return BertConfig(**{**SMALL, **overrides})


@pytest.fixture(scope="module")
def inputs():
    """A padded batch: row 0 full, row 1 padded from position 5, row 2 from position 3; segments 0/1/2."""
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1, SMALL["vocab_size"], (B, T), generator=g)
    mask = torch.ones(B, T, dtype=torch.long)
    mask[1, 5:] = 0
    mask[2, 3:] = 0
    segments = torch.zeros(B, T, dtype=torch.long)
    segments[:, 3:] = 1
    segments[0, 6] = 2
    return ids, mask, segments


@pytest.fixture(scope="module")
def pair(offline):
    """A random transformers.BertModel (eager attention, so it can return attention maps) and minibert with its
    weights."""
    torch.manual_seed(0)
    cfg = small_config(initializer_range=0.3)  # pre-activations of order 1: GELU's exact form matters
    hf = transformers.BertModel(hf_config(cfg, attn_implementation="eager")).eval()
    with torch.no_grad():  # non-trivial LayerNorms and biases: HF initializes them to 1 and 0
        for name, p in hf.named_parameters():
            if "LayerNorm" in name or name.endswith("bias"):
                p.add_(0.1 * torch.randn_like(p))
    mb = BertModel(cfg)
    mb.load_state_dict(hf.state_dict(), strict=True)
    return hf, mb.eval()


@pytest.fixture(scope="module")
def hf_folder(offline, tmp_path_factory):
    """A checkpoint folder written by transformers.BertModel.save_pretrained, and the model that wrote it."""
    torch.manual_seed(2)
    hf = transformers.BertModel(hf_config(small_config())).eval()
    folder = tmp_path_factory.mktemp("hf_bert")
    hf.save_pretrained(folder)
    return folder, hf


def copy_folder(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "ckpt"
    shutil.copytree(src, dst)
    return dst


def edit_config(folder: Path, **changes) -> None:
    data = json.loads((folder / "config.json").read_text())
    data.update(changes)
    (folder / "config.json").write_text(json.dumps(data))


def same_outputs(hf_model, mb_model, ids, mask, segments, atol=ATOL) -> float:
    with torch.no_grad():
        ref = hf_model(input_ids=ids, attention_mask=mask, token_type_ids=segments)
        out = mb_model(ids, mask, segments)
    diff = max_diff(ref.last_hidden_state, out.last_hidden_state)
    assert diff < atol, f"last_hidden_state differs from transformers by {diff:.3g}"
    assert max_diff(ref.pooler_output, out.pooler_output) < atol
    return diff


# 1. Keys and config -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("pooling", [True, False])
def test_state_dict_keys_and_shapes_equal_transformers(offline, pooling):
    cfg = small_config()
    ref = {k: tuple(v.shape) for k, v in transformers.BertModel(hf_config(cfg), add_pooling_layer=pooling)
           .state_dict().items()}
    ours = {k: tuple(v.shape) for k, v in BertModel(cfg, add_pooling_layer=pooling).state_dict().items()}
    assert set(ours) == set(ref), f"only minibert: {set(ours) - set(ref)}, only transformers: {set(ref) - set(ours)}"
    assert ours == ref
    assert ref["encoder.layer.1.intermediate.dense.weight"] == (37, 24)  # (out, in) as nn.Linear stores it


def test_config_fields_are_transformers_fields_with_equal_base_defaults():
    ref = transformers.BertConfig()
    base = BertConfig.base()
    for f in dataclasses.fields(BertConfig):
        assert hasattr(ref, f.name), f"{f.name} is not a transformers.BertConfig field"
        assert getattr(base, f.name) == getattr(ref, f.name), f.name
    # BERT-Large per Devlin et al. (2019): L=24, H=1024, A=16, 4H feed-forward.
    large = BertConfig.large()
    assert (large.num_hidden_layers, large.hidden_size, large.num_attention_heads, large.intermediate_size) == (
        24, 1024, 16, 4096)


# 2. Random weights: outputs equal transformers' ---------------------------------------------------------------


def test_random_weights_match_transformers(pair, inputs):
    hf, mb = pair
    ids, mask, segments = inputs
    with torch.no_grad():
        ref = hf(input_ids=ids, attention_mask=mask, token_type_ids=segments, output_hidden_states=True,
                 output_attentions=True)
        out = mb(ids, mask, segments, output_hidden_states=True, output_attentions=True)
    real = mask.bool()
    d_real = max_diff(ref.last_hidden_state[real], out.last_hidden_state[real])
    # transformers masks padding *keys* only: padding query rows still attend to the real pieces, so their outputs
    # are defined and must match too (they did when this test was written; compared here on all positions).
    d_all = max_diff(ref.last_hidden_state, out.last_hidden_state)
    d_pool = max_diff(ref.pooler_output, out.pooler_output)
    print(f"\nrandom weights: max |diff| last_hidden_state real={d_real:.3g} all={d_all:.3g} pooler={d_pool:.3g}")
    assert d_real < ATOL, f"real positions differ from transformers by {d_real:.3g}"
    assert d_all < ATOL, f"padding positions differ from transformers by {d_all:.3g}"
    assert d_pool < ATOL, f"pooler_output differs by {d_pool:.3g}"

    assert len(out.hidden_states) == len(ref.hidden_states) == SMALL["num_hidden_layers"] + 1
    for i, (r, o) in enumerate(zip(ref.hidden_states, out.hidden_states, strict=True)):
        assert r.shape == o.shape == (B, T, 24)
        assert max_diff(r, o) < ATOL, f"hidden_states[{i}] differs by {max_diff(r, o):.3g}"
    assert len(out.attentions) == len(ref.attentions) == SMALL["num_hidden_layers"]
    for i, (r, o) in enumerate(zip(ref.attentions, out.attentions, strict=True)):
        assert r.shape == o.shape == (B, 3, T, T)
        assert max_diff(r, o) < ATOL, f"attentions[{i}] differs by {max_diff(r, o):.3g}"
    # Independent of transformers: no query reads a padding key, and every row is a distribution.
    for probs in out.attentions:
        assert torch.all(probs.masked_select(~real[:, None, None, :].expand_as(probs)) == 0)
        torch.testing.assert_close(probs.sum(-1), torch.ones(B, 3, T))


def test_defaults_without_mask_and_segments_match_transformers(pair, inputs):
    hf, mb = pair
    ids = inputs[0]
    with torch.no_grad():
        ref = hf(input_ids=ids).last_hidden_state
        out = mb(ids).last_hidden_state
    assert max_diff(ref, out) < ATOL


def test_fused_sdpa_path_equals_explicit_path(pair, inputs):
    _, mb = pair
    ids, mask, segments = inputs
    with torch.no_grad():
        fused = mb(ids, mask, segments, output_attentions=False, output_hidden_states=True)
        explicit = mb(ids, mask, segments, output_attentions=True, output_hidden_states=True)
    assert fused.attentions is None
    for f, e in zip(fused.hidden_states, explicit.hidden_states, strict=True):
        assert max_diff(f, e) < ATOL
    assert max_diff(fused.pooler_output, explicit.pooler_output) < ATOL


def test_sdpa_transformers_model_matches_too(pair, inputs):
    """transformers' own default (SDPA) attention gives the same outputs as minibert's fused path."""
    hf, mb = pair
    hf_sdpa = transformers.BertModel(hf_config(mb.config, attn_implementation="sdpa")).eval()
    hf_sdpa.load_state_dict(hf.state_dict())
    same_outputs(hf_sdpa, mb, *inputs)


# 3. Real weights ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_models(offline):
    folder = pretrained_dir()
    hf = transformers.BertModel.from_pretrained(str(folder), dtype=torch.float32).eval()
    mb = BertModel.from_pretrained(folder)
    assert not mb.training, "from_pretrained should return the model in eval mode, as transformers does"
    assert mb.config.hidden_size == 384 and mb.config.num_hidden_layers == 6
    return hf, mb


def compare_real(real_models, ids, mask, segments, label):
    hf, mb = real_models
    with torch.no_grad():
        ref = hf(input_ids=ids, attention_mask=mask, token_type_ids=segments)
        out = mb(ids, mask, segments)
    real = mask.bool()
    diff = max_diff(ref.last_hidden_state[real], out.last_hidden_state[real])
    d_all = max_diff(ref.last_hidden_state, out.last_hidden_state)  # padding rows too (see the random test)
    d_pool = max_diff(ref.pooler_output, out.pooler_output)
    print(f"\nreal weights, {label}: max |diff| last_hidden_state real={diff:.3g} all={d_all:.3g} "
          f"pooler={d_pool:.3g} (output scale {ref.last_hidden_state.abs().max().item():.3g})")
    assert diff < 1e-4, f"{label}: max abs diff of last_hidden_state vs transformers = {diff:.3g} (>= 1e-4)"
    assert d_all < 1e-4, f"{label}: padding positions differ by {d_all:.3g}"
    assert d_pool < 1e-4, f"{label}: pooler_output differs by {d_pool:.3g}"


def test_real_weights_sentence_pair(real_models):
    tok = BertTokenizer.from_pretrained()
    enc = tok("The quick brown fox jumps over the lazy dog.", "A watched pot never boils, they say.")
    assert enc.token_type_ids.count(1) > 0
    ids, segments, mask = (torch.tensor([x]) for x in (enc.input_ids, enc.token_type_ids, enc.attention_mask))
    compare_real(real_models, ids, mask, segments, "sentence pair")


def test_real_weights_padded_batch(real_models):
    tok = BertTokenizer.from_pretrained()
    texts = ["Paris is the capital of France.", "Hello!",
             "Transformers read every word of a sentence at once, in both directions, unlike recurrent networks."]
    encs = [tok(t) for t in texts]
    n = max(len(e.input_ids) for e in encs)
    assert len({len(e.input_ids) for e in encs}) == 3
    ids = torch.tensor([e.input_ids + [0] * (n - len(e.input_ids)) for e in encs])
    mask = torch.tensor([e.attention_mask + [0] * (n - len(e.input_ids)) for e in encs])
    compare_real(real_models, ids, mask, torch.zeros_like(ids), "padded batch of 3")


# 4. Checkpoints both ways -------------------------------------------------------------------------------------


def test_minibert_save_loads_in_transformers(offline, inputs, tmp_path):
    torch.manual_seed(3)
    mb = BertModel(small_config(pad_token_id=1)).eval()
    mb.save_pretrained(tmp_path)
    hf, info = transformers.BertModel.from_pretrained(tmp_path, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    same_outputs(hf.eval(), mb, *inputs)


def test_transformers_save_loads_in_minibert(hf_folder, inputs):
    folder, hf = hf_folder
    mb = BertModel.from_pretrained(folder)
    same_outputs(hf, mb, *inputs)


def test_pretraining_checkpoint_loads_into_bert_model(offline, inputs, tmp_path):
    torch.manual_seed(4)
    pre = transformers.BertForPreTraining(hf_config(small_config())).eval()
    pre.save_pretrained(tmp_path)
    keys = set(load_file(str(tmp_path / "model.safetensors")))
    assert any(k.startswith("cls.") for k in keys) and all(k.startswith(("bert.", "cls.")) for k in keys)
    mb = BertModel.from_pretrained(tmp_path)
    same_outputs(pre.bert, mb, *inputs)


def test_pytorch_model_bin_folder_loads(hf_folder, inputs, tmp_path):
    folder, hf = hf_folder
    state = dict(hf.state_dict())
    state["embeddings.position_ids"] = torch.arange(SMALL["max_position_embeddings"])[None]  # old transformers
    shutil.copy(folder / "config.json", tmp_path / "config.json")
    torch.save(state, tmp_path / "pytorch_model.bin")
    mb = BertModel.from_pretrained(tmp_path)
    same_outputs(hf, mb, *inputs)


# 5. Padding invariance ----------------------------------------------------------------------------------------


def test_ids_under_padding_do_not_matter(pair, inputs):
    _, mb = pair
    ids, mask, segments = inputs
    other = torch.where(mask.bool(), ids, (ids * 7 + 5) % SMALL["vocab_size"])
    assert not torch.equal(other, ids)
    with torch.no_grad():
        a = mb(ids, mask, segments).last_hidden_state
        b = mb(other, mask, segments).last_hidden_state
    real = mask.bool()
    assert max_diff(a[real], b[real]) < 1e-6
    assert max_diff(a[~real], b[~real]) > 1e-3  # the padding rows themselves did see the change


def test_padded_batch_equals_sequences_alone(pair, inputs):
    _, mb = pair
    ids, mask, segments = inputs
    with torch.no_grad():
        batch = mb(ids, mask, segments)
        for i in range(B):
            n = int(mask[i].sum())
            alone = mb(ids[i:i + 1, :n], torch.ones(1, n, dtype=torch.long), segments[i:i + 1, :n])
            d = max_diff(batch.last_hidden_state[i, :n], alone.last_hidden_state[0])
            assert d < ATOL, f"row {i} ({n} real pieces) differs from running it alone by {d:.3g}"
            assert max_diff(batch.pooler_output[i], alone.pooler_output[0]) < ATOL


# 6. Bidirectional vs causal -----------------------------------------------------------------------------------


def test_model_is_bidirectional(pair):
    _, mb = pair
    ids = torch.arange(10, 10 + T)[None].repeat(2, 1)
    ids[1, 5] = 50
    with torch.no_grad():
        out = mb(ids).last_hidden_state
    assert max_diff(out[0, :5], out[1, :5]) > 1e-3, "a later token did not change earlier positions"
    assert max_diff(out[0, 1], out[1, 1]) > 1e-3


@pytest.mark.parametrize("explicit", [False, True])
def test_causal_mask_blocks_the_future_in_a_layer(explicit):
    torch.manual_seed(5)
    layer = BertLayer(small_config()).eval()
    x = torch.randn(2, T, 24)
    y = x.clone()
    y[:, 5] += torch.randn(2, 24)
    causal = additive_mask(attention_pattern(T, causal=True))
    with torch.no_grad():
        (a, probs), (b, _) = layer(x, causal, explicit), layer(y, causal, explicit)
        (c, _), (d, _) = layer(x, None, explicit), layer(y, None, explicit)
    assert max_diff(a[:, :5], b[:, :5]) == 0, "causal: positions before 5 saw position 5"
    assert max_diff(a[:, 5:], b[:, 5:]) > 1e-3  # 5 and 6 may read position 5
    assert max_diff(c[:, 1], d[:, 1]) > 1e-3, "without a mask, position 1 must read position 5"
    if explicit:
        assert torch.all(probs[..., torch.triu(torch.ones(T, T, dtype=torch.bool), 1)] == 0)


# 7. Errors ----------------------------------------------------------------------------------------------------


def test_folder_without_config(tmp_path):
    with pytest.raises(FileNotFoundError, match="config.json"):
        BertModel.from_pretrained(tmp_path)


def test_folder_without_weights(hf_folder, tmp_path):
    shutil.copy(hf_folder[0] / "config.json", tmp_path / "config.json")
    with pytest.raises(FileNotFoundError, match="model.safetensors"):
        BertModel.from_pretrained(tmp_path)


def test_vocab_size_mismatch_names_the_embedding(hf_folder, tmp_path):
    folder = copy_folder(hf_folder[0], tmp_path)
    edit_config(folder, vocab_size=97)
    with pytest.raises(ValueError, match=r"embeddings\.word_embeddings\.weight") as exc:
        BertModel.from_pretrained(folder)
    assert "vocabulary" in str(exc.value)
    assert "(99, 24)" in str(exc.value) and "(97, 24)" in str(exc.value)


def test_shape_mismatch_names_the_key(hf_folder, tmp_path):
    folder = copy_folder(hf_folder[0], tmp_path)
    edit_config(folder, intermediate_size=41)
    saved = load_file(str(folder / "model.safetensors"))
    wanted = transformers.BertModel(hf_config(small_config(intermediate_size=41))).state_dict()
    mismatched = {k for k in saved if tuple(saved[k].shape) != tuple(wanted[k].shape)}
    assert mismatched == {f"encoder.layer.{i}.{n}" for i in range(2) for n in
                          ("intermediate.dense.weight", "intermediate.dense.bias", "output.dense.weight")}
    with pytest.raises(ValueError) as exc:
        BertModel.from_pretrained(folder)
    msg = str(exc.value)
    named = [k for k in mismatched if msg.startswith(k) or f"{k}:" in msg]
    assert named, f"the message names none of the mismatched keys: {msg}"
    key = named[0]
    assert str(tuple(saved[key].shape)) in msg and str(tuple(wanted[key].shape)) in msg, msg


def test_missing_key_is_listed(hf_folder, tmp_path):
    folder = copy_folder(hf_folder[0], tmp_path)
    state = load_file(str(folder / "model.safetensors"))
    del state["encoder.layer.1.attention.self.key.bias"]
    save_file(state, str(folder / "model.safetensors"))
    with pytest.raises(KeyError, match=r"encoder\.layer\.1\.attention\.self\.key\.bias"):
        BertModel.from_pretrained(folder)


def test_unexpected_key_is_listed(hf_folder, tmp_path):
    folder = copy_folder(hf_folder[0], tmp_path)
    state = load_file(str(folder / "model.safetensors"))
    state["encoder.layer.0.attention.self.rotary.weight"] = torch.zeros(3)
    save_file(state, str(folder / "model.safetensors"))
    with pytest.raises(KeyError, match=r"encoder\.layer\.0\.attention\.self\.rotary\.weight"):
        BertModel.from_pretrained(folder)


def test_gpt2_config_is_rejected(hf_folder, tmp_path):
    folder = copy_folder(hf_folder[0], tmp_path)
    edit_config(folder, model_type="gpt2")
    with pytest.raises(ValueError, match="gpt2"):
        BertModel.from_pretrained(folder)


def test_ids_outside_vocabulary(pair):
    _, mb = pair
    with pytest.raises(ValueError, match="tokenizer") as exc:
        mb(torch.tensor([[2, 99, 5]]))
    assert "99" in str(exc.value)
    mb(torch.tensor([[2, 98, 5]]))  # the last id of the vocabulary is fine


def test_negative_id_is_named(pair):
    _, mb = pair
    with pytest.raises(ValueError, match="tokenizer") as exc:
        mb(torch.tensor([[2, -1, 5]]))
    assert "-1" in str(exc.value), f"the message should name the offending id -1, not another one: {exc.value}"


def test_sequence_longer_than_positions(pair):
    _, mb = pair
    mb(torch.ones(1, 11, dtype=torch.long))  # exactly max_position_embeddings is fine
    with pytest.raises(ValueError, match="11 position"):
        mb(torch.ones(1, 12, dtype=torch.long))


def test_hidden_size_not_divisible_by_heads():
    with pytest.raises(ValueError, match="divisible"):
        BertConfig(hidden_size=25, num_attention_heads=3)


# 8. Parameter counts ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "low", "high"), [("base", 105e6, 115e6), ("large", 330e6, 345e6)])
def test_parameter_count_equals_transformers(name, low, high):
    cfg = getattr(BertConfig, name)()
    with torch.device("meta"):
        ref_model = transformers.BertModel(hf_config(cfg))
    assert next(ref_model.parameters()).is_meta
    ref = sum(p.numel() for p in ref_model.parameters())
    ours = count_parameters(cfg)
    print(f"\n{name}: minibert {ours:,} parameters, transformers {ref:,}")
    assert ours == ref
    assert low <= ours <= high


def closed_form_parameters(V, H, L, I, P, S):  # noqa: E741
    """BERT's parameters counted by hand: embeddings (+ LayerNorm), L layers, pooler."""
    layer = 4 * (H * H + H) + 2 * H + (H * I + I) + (I * H + H) + 2 * H  # Q, K, V, O; LN; W1; W2; LN
    return (V + P + S) * H + 2 * H + L * layer + H * H + H


def test_parameter_count_of_unusual_sizes_equals_transformers():
    sizes = {"vocab_size": 1000, "hidden_size": 96, "num_hidden_layers": 3, "num_attention_heads": 4,
             "intermediate_size": 200, "max_position_embeddings": 64, "type_vocab_size": 3}
    cfg = BertConfig(**sizes)
    with torch.device("meta"):
        ref = sum(p.numel() for p in transformers.BertModel(hf_config(cfg)).parameters())
    assert count_parameters(cfg) == ref == closed_form_parameters(1000, 96, 3, 200, 64, 3)


def test_parameter_count_allocates_nothing():
    """The word embeddings alone would take 2^58 bytes in fp32: counting must not allocate them (meta device)."""
    cfg = BertConfig(vocab_size=2**42, hidden_size=2**14, num_hidden_layers=3, num_attention_heads=2**7,
                     intermediate_size=3 * 2**14 + 5, max_position_embeddings=2**20, type_vocab_size=7)
    assert count_parameters(cfg) == closed_form_parameters(2**42, 2**14, 3, 3 * 2**14 + 5, 2**20, 7)
    with pytest.raises(RuntimeError):  # building it for real is impossible: the test above really needs meta
        BertModel(cfg)


# 9. Saving ----------------------------------------------------------------------------------------------------


def test_save_leaves_no_tmp_and_config_loads_in_transformers(offline, tmp_path):
    cfg = small_config(hidden_act="relu", layer_norm_eps=1e-7, initializer_range=0.05, pad_token_id=2,
                       hidden_dropout_prob=0.2, attention_probs_dropout_prob=0.3)
    mb = BertModel(cfg)
    mb.save_pretrained(tmp_path)
    mb.save_pretrained(tmp_path)  # overwriting an existing checkpoint
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "model.safetensors"]
    assert not list(tmp_path.rglob("*.tmp"))
    ref = transformers.BertConfig.from_pretrained(tmp_path)
    assert ref.model_type == "bert"
    for f in dataclasses.fields(BertConfig):
        assert getattr(ref, f.name) == getattr(cfg, f.name), f.name


def test_interrupted_save_keeps_the_old_weights(hf_folder, inputs, tmp_path, monkeypatch):
    folder = copy_folder(hf_folder[0], tmp_path)
    mb = BertModel.from_pretrained(folder)
    with torch.no_grad():
        for p in mb.parameters():
            p.add_(1.0)

    def crash(state, path, metadata=None):
        Path(path).write_bytes(b"half a file")
        raise OSError("disk full")

    monkeypatch.setattr(minibert.checkpoint, "save_file", crash)
    with pytest.raises(OSError, match="disk full"):
        mb.save_pretrained(folder)
    same_outputs(hf_folder[1], BertModel.from_pretrained(folder), *inputs)
