"""Loading real and variant Hugging Face checkpoints: untied output matrices, legacy names, shards, config variants.

Real checkpoints are not all saved the way `transformers.BertModel.save_pretrained` saves a fresh model today: some
train the MLM decoder apart from the word embeddings (`"tie_word_embeddings": false`), TensorFlow-era files name
LayerNorm parameters `gamma`/`beta`, large models come in shards listed by `model.safetensors.index.json`, and a
config.json may ask for a variant (relative positions, a decoder) that minibert does not compute. Each must either
load with the outputs of `transformers` (the reference) or be refused with a message naming the reason; a silent
wrong load (e.g. the decoder overwriting the tied embeddings) is the failure these tests exist for.

Random-weight tests use a tiny config (vocab 99, hidden 32, 2 layers, 2 heads, intermediate 64, 16 positions) with
large, perturbed weights so that a swapped matrix or bias shows; real-weight tests use the MiniLM folder of
`minibert.tokenization.pretrained_dir()` (6 layers, 384 wide). Run with `pytest -s` to see the measured differences.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
import transformers
from helpers import max_diff, padded_pair_batch
from safetensors.torch import load_file, save_file

from minibert import BertConfig, BertForMaskedLM, BertForPreTraining, BertModel, BertTokenizer
from minibert.tokenization import pretrained_dir

TINY = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
            max_position_embeddings=16)
B, T, V, H = 3, 9, TINY["vocab_size"], TINY["hidden_size"]
ATOL = 1e-5
REAL_ATOL = 1e-4  # real weights: outputs of order 1-10, float32 kernels of the two libraries differ slightly
DECODER, EMBEDDINGS = "cls.predictions.decoder.weight", "bert.embeddings.word_embeddings.weight"
DECODER_BIAS, BIAS = "cls.predictions.decoder.bias", "cls.predictions.bias"
HEADS = {"BertForPreTraining": BertForPreTraining, "BertForMaskedLM": BertForMaskedLM}


# --- helpers ----------------------------------------------------------------------------------------------------


def random_hf(name: str, seed: int, **config):
    """A tiny transformers model (`name` is a transformers class name) with large random weights and perturbed
    LayerNorms and biases, so that every parameter (both biases of the MLM head included) changes the outputs."""
    torch.manual_seed(seed)
    model = getattr(transformers, name)(transformers.BertConfig(**TINY, initializer_range=0.3, **config))
    with torch.no_grad():
        for key, p in model.named_parameters():
            if "LayerNorm" in key or key.endswith("bias"):
                p.add_(0.3 * torch.randn_like(p))
    return model.eval()


def run(model, batch, **kwargs):
    with torch.no_grad():
        return model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                     token_type_ids=batch["token_type_ids"], **kwargs)


def mlm_logits(out):
    return out.prediction_logits if hasattr(out, "prediction_logits") else out.logits


def assert_same_head_outputs(ref, out, label: str) -> None:
    """Hidden states, MLM logits (and NSP logits where the model has them) of transformers and minibert agree."""
    assert len(out.hidden_states) == len(ref.hidden_states) == TINY["num_hidden_layers"] + 1, label
    for i, (r, o) in enumerate(zip(ref.hidden_states, out.hidden_states, strict=True)):
        assert max_diff(r, o) < ATOL, f"{label}: hidden_states[{i}] differ from transformers by {max_diff(r, o):.3g}"
    d = max_diff(mlm_logits(ref), mlm_logits(out))
    print(f"\n{label}: max |diff| MLM logits={d:.3g} (scale {mlm_logits(ref).abs().max().item():.3g})")
    assert d < ATOL, f"{label}: MLM logits differ from transformers by {d:.3g} (expected < {ATOL})"
    if hasattr(ref, "seq_relationship_logits"):
        d = max_diff(ref.seq_relationship_logits, out.seq_relationship_logits)
        assert d < ATOL, f"{label}: NSP logits differ from transformers by {d:.3g} (expected < {ATOL})"


def edit_config(folder: Path, remove: tuple[str, ...] = (), **changes) -> None:
    data = json.loads((folder / "config.json").read_text())
    for key in remove:
        data.pop(key, None)
    data.update(changes)
    (folder / "config.json").write_text(json.dumps(data))


def copy_real_folder(tmp_path: Path, name: str = "real") -> Path:
    """config.json and model.safetensors of the MiniLM folder (the weights only, not the tokenizer files)."""
    dst = tmp_path / name
    dst.mkdir()
    for f in ("config.json", "model.safetensors"):
        shutil.copy(pretrained_dir() / f, dst / f)
    return dst


@pytest.fixture(scope="module")
def batch():
    """A padded batch of the tiny vocabulary: row 0 full, row 1 padded from 6, row 2 from 4; segments 0/1."""
    ids, mask, segments = padded_pair_batch(V, seed=11, low=5)
    ids[mask == 0] = 0
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": segments}


@pytest.fixture(scope="module")
def untied_folders(offline, tmp_path_factory):
    """name -> (folder written by transformers' save_pretrained, the untied transformers model that wrote it)."""
    out = {}
    for seed, name in enumerate(HEADS):
        hf = random_hf(name, seed=20 + seed, tie_word_embeddings=False)
        assert hf.cls.predictions.decoder.weight is not hf.bert.embeddings.word_embeddings.weight
        folder = tmp_path_factory.mktemp(f"untied_{name}")
        hf.save_pretrained(folder)
        out[name] = folder, hf
    return out


# 1. Untied output matrix ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(HEADS))
def test_untied_checkpoint_loads_both_matrices(untied_folders, batch, name):
    folder, hf = untied_folders[name]
    saved = load_file(str(folder / "model.safetensors"))
    assert json.loads((folder / "config.json").read_text())["tie_word_embeddings"] is False
    assert {DECODER, EMBEDDINGS, DECODER_BIAS, BIAS} <= set(saved), "transformers should store both matrices"
    assert max_diff(saved[DECODER], saved[EMBEDDINGS]) > 0.1, "the file's decoder must differ from its embeddings"
    assert max_diff(saved[DECODER_BIAS], saved[BIAS]) > 0.1

    mb = HEADS[name].from_pretrained(folder)
    assert not mb.training
    assert_same_head_outputs(run(hf, batch, output_hidden_states=True), run(mb, batch, output_hidden_states=True),
                             f"untied {name}")
    decoder, embeddings = mb.cls.predictions.decoder, mb.bert.embeddings.word_embeddings
    assert decoder.weight is not embeddings.weight, "untied config: the decoder must have its own matrix"
    assert torch.equal(decoder.weight, saved[DECODER]), f"minibert's decoder is not the file's {DECODER}"
    assert torch.equal(embeddings.weight, saved[EMBEDDINGS]), f"minibert's embeddings are not the file's {EMBEDDINGS}"
    assert torch.equal(decoder.bias, saved[DECODER_BIAS]), f"minibert's decoder bias is not the file's {DECODER_BIAS}"
    assert getattr(mb.config, "tie_word_embeddings", None) is False, "config.tie_word_embeddings should be False"


@pytest.mark.parametrize("name", list(HEADS))
def test_untied_model_saves_both_matrices_and_transformers_loads_them(untied_folders, batch, name, tmp_path):
    folder, hf = untied_folders[name]
    mb = HEADS[name].from_pretrained(folder)
    mb.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config.get("tie_word_embeddings") is False, f"config.json should say tie_word_embeddings=false: {config}"
    saved = load_file(str(tmp_path / "model.safetensors"))
    assert {DECODER, EMBEDDINGS, DECODER_BIAS, BIAS} <= set(saved), f"missing: {({DECODER, DECODER_BIAS}) - set(saved)}"
    original = load_file(str(folder / "model.safetensors"))
    for key in (DECODER, EMBEDDINGS, DECODER_BIAS, BIAS):
        assert torch.equal(saved[key], original[key]), f"{key} changed in minibert's save"

    again, info = getattr(transformers, name).from_pretrained(tmp_path, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    again.eval()
    assert again.cls.predictions.decoder.weight is not again.bert.embeddings.word_embeddings.weight
    assert_same_head_outputs(run(hf, batch, output_hidden_states=True), run(again, batch, output_hidden_states=True),
                             f"untied {name}: minibert save -> transformers load")
    # and minibert reads its own untied folder back
    back = HEADS[name].from_pretrained(tmp_path)
    assert back.cls.predictions.decoder.weight is not back.bert.embeddings.word_embeddings.weight
    assert_same_head_outputs(run(hf, batch, output_hidden_states=True), run(back, batch, output_hidden_states=True),
                             f"untied {name}: minibert save -> minibert load")


@pytest.mark.parametrize("name", list(HEADS))
def test_fresh_untied_model_has_its_own_decoder_and_tied_default_shares(offline, name):
    untied = HEADS[name](BertConfig(**TINY, tie_word_embeddings=False))
    decoder, embeddings = untied.cls.predictions.decoder, untied.bert.embeddings.word_embeddings
    assert decoder.weight is not embeddings.weight and decoder.bias is not untied.cls.predictions.bias
    assert decoder.weight.data_ptr() != embeddings.weight.data_ptr(), "the untied decoder shares the storage"
    with torch.no_grad():
        decoder.weight[7, 3] = 12.5
        decoder.bias[5] = -3.0
    assert embeddings.weight[7, 3].item() != 12.5, "writing the untied decoder changed the embeddings"
    assert untied.cls.predictions.bias[5].item() != -3.0, "writing the untied decoder bias changed cls.predictions.bias"
    ref = getattr(transformers, name)(transformers.BertConfig(**TINY, tie_word_embeddings=False))
    n_ref = sum(p.numel() for p in ref.parameters())
    assert untied.num_parameters() == n_ref, f"parameters: expected {n_ref:,} (transformers, untied), got " \
        f"{untied.num_parameters():,}"

    tied = HEADS[name](BertConfig(**TINY))
    assert tied.cls.predictions.decoder.weight is tied.bert.embeddings.word_embeddings.weight
    assert tied.cls.predictions.decoder.bias is tied.cls.predictions.bias
    assert untied.num_parameters() - tied.num_parameters() == V * H + V, "untying adds one V x H matrix and a bias"


# 2. A tied config with a differing decoder is refused ------------------------------------------------------------


@pytest.mark.parametrize("how", ["absent", "true"])
def test_tied_config_with_differing_decoder_is_refused(untied_folders, tmp_path, how):
    folder = tmp_path / "ckpt"
    shutil.copytree(untied_folders["BertForPreTraining"][0], folder)
    if how == "absent":
        edit_config(folder, remove=("tie_word_embeddings",))
    else:
        edit_config(folder, tie_word_embeddings=True)
    with pytest.raises(ValueError) as exc:
        BertForPreTraining.from_pretrained(folder)
    msg = str(exc.value)
    for part in (DECODER, EMBEDDINGS, "tie_word_embeddings"):
        assert part in msg, f"the message should name {part}: {msg}"


def test_tied_config_with_differing_decoder_bias_is_refused(offline, tmp_path):
    """Decoder weight equal to the embeddings, but the decoder bias differs from cls.predictions.bias."""
    hf = random_hf("BertForPreTraining", seed=30)
    state = {k: v.detach().clone().contiguous() for k, v in hf.state_dict().items()}
    state[DECODER_BIAS] = state[BIAS] + 1.0
    hf.config.save_pretrained(tmp_path)
    save_file(state, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(ValueError) as exc:
        BertForPreTraining.from_pretrained(tmp_path)
    assert DECODER_BIAS in str(exc.value) and BIAS in str(exc.value), str(exc.value)


@pytest.mark.parametrize("fmt", ["model.safetensors", "pytorch_model.bin"])
def test_tied_checkpoint_storing_equal_copies_loads(offline, batch, tmp_path, fmt):
    """Older files store the tied decoder too, as an equal copy: that is no conflict."""
    hf = random_hf("BertForPreTraining", seed=31)
    assert hf.cls.predictions.decoder.weight is hf.bert.embeddings.word_embeddings.weight
    state = {k: v.detach().clone().contiguous() for k, v in hf.state_dict().items()}
    assert {DECODER, EMBEDDINGS, DECODER_BIAS, BIAS} <= set(state) and torch.equal(state[DECODER], state[EMBEDDINGS])
    hf.config.save_pretrained(tmp_path)
    if fmt == "model.safetensors":
        save_file(state, str(tmp_path / fmt), metadata={"format": "pt"})
    else:
        torch.save(state, tmp_path / fmt)
    mb = BertForPreTraining.from_pretrained(tmp_path)
    assert mb.cls.predictions.decoder.weight is mb.bert.embeddings.word_embeddings.weight
    assert_same_head_outputs(run(hf, batch, output_hidden_states=True), run(mb, batch, output_hidden_states=True),
                             f"tied, equal copies in {fmt}")


# --- real weights -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_batch():
    """A padded batch of real sentences (bert-base-uncased vocabulary), one of them a pair."""
    tok = BertTokenizer.from_pretrained()
    encs = [tok("Paris is the capital of France.", "It lies on the Seine."), tok("Hello!"),
            tok("Transformers read every word of a sentence at once, in both directions.")]
    n = max(len(e.input_ids) for e in encs)

    def pad(rows):
        return torch.tensor([r + [0] * (n - len(r)) for r in rows])

    return (pad([e.input_ids for e in encs]), pad([e.attention_mask for e in encs]),
            pad([e.token_type_ids for e in encs]))


@pytest.fixture(scope="module")
def real_reference(offline, real_batch):
    """last_hidden_state and pooler_output of transformers.BertModel and of minibert on the original folder."""
    hf = transformers.BertModel.from_pretrained(str(pretrained_dir()), dtype=torch.float32).eval()
    mb = BertModel.from_pretrained(pretrained_dir())
    ids, mask, segments = real_batch
    with torch.no_grad():
        ref = hf(input_ids=ids, attention_mask=mask, token_type_ids=segments)
        ours = mb(ids, mask, segments)
    assert max_diff(ref.last_hidden_state, ours.last_hidden_state) < REAL_ATOL
    return ref, ours


def assert_same_as_original(real_reference, real_batch, mb: BertModel, label: str) -> None:
    ref, original = real_reference
    with torch.no_grad():
        out = mb(*real_batch)
    d_orig = max_diff(original.last_hidden_state, out.last_hidden_state)
    d_ref = max_diff(ref.last_hidden_state, out.last_hidden_state)
    d_pool = max_diff(ref.pooler_output, out.pooler_output)
    print(f"\n{label}: max |diff| vs the original folder {d_orig:.3g}, vs transformers {d_ref:.3g}")
    assert d_orig <= 1e-6, f"{label}: outputs differ from loading the original folder by {d_orig:.3g}"
    assert max_diff(original.pooler_output, out.pooler_output) <= 1e-6, f"{label}: pooler_output differs"
    assert d_ref < REAL_ATOL, f"{label}: outputs differ from transformers by {d_ref:.3g}"
    assert d_pool < REAL_ATOL, f"{label}: pooler_output differs from transformers by {d_pool:.3g}"


# 3. Legacy LayerNorm names (gamma / beta) ------------------------------------------------------------------------


def legacy_names(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    renamed = {}
    for k, v in state.items():
        k = k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
        renamed[k] = v
    return renamed


@pytest.mark.parametrize("fmt", ["pytorch_model.bin", "model.safetensors"])
def test_legacy_gamma_beta_names_load(real_reference, real_batch, tmp_path, fmt):
    state = legacy_names(load_file(str(pretrained_dir() / "model.safetensors")))
    n_layer_norms = 1 + 2 * 6  # embeddings, then attention and output in each of the 6 layers
    assert sum(k.endswith("LayerNorm.gamma") for k in state) == n_layer_norms
    assert sum(k.endswith("LayerNorm.beta") for k in state) == n_layer_norms
    assert not any(k.endswith(("LayerNorm.weight", "LayerNorm.bias")) for k in state)
    shutil.copy(pretrained_dir() / "config.json", tmp_path / "config.json")
    if fmt == "pytorch_model.bin":
        torch.save(state, tmp_path / fmt)
    else:
        save_file(state, str(tmp_path / fmt), metadata={"format": "pt"})
    mb = BertModel.from_pretrained(tmp_path)
    assert_same_as_original(real_reference, real_batch, mb, f"gamma/beta names in {fmt}")


def test_legacy_names_in_a_pretraining_checkpoint(offline, batch, tmp_path):
    """The MLM head's LayerNorm (cls.predictions.transform.LayerNorm) is renamed too."""
    hf = random_hf("BertForPreTraining", seed=32)
    state = legacy_names({k: v for k, v in hf.state_dict().items() if k != DECODER})  # tied: stored once
    assert "cls.predictions.transform.LayerNorm.gamma" in state
    hf.config.save_pretrained(tmp_path)
    torch.save(state, tmp_path / "pytorch_model.bin")
    mb = BertForPreTraining.from_pretrained(tmp_path)
    assert_same_head_outputs(run(hf, batch, output_hidden_states=True), run(mb, batch, output_hidden_states=True),
                             "gamma/beta names, BertForPreTraining")


# 4. Sharded checkpoints -------------------------------------------------------------------------------------------


def write_shards(folder: Path, fmt: str) -> list[str]:
    """The MiniLM weights split into 2 shards plus the index transformers writes for them; returns shard names."""
    state = load_file(str(pretrained_dir() / "model.safetensors"))
    keys = sorted(state)
    halves = [keys[: len(keys) // 2], keys[len(keys) // 2:]]
    stem, ext = ("model", "safetensors") if fmt == "safetensors" else ("pytorch_model", "bin")
    names = [f"{stem}-0000{i + 1}-of-00002.{ext}" for i in range(2)]
    weight_map = {}
    for name, part in zip(names, halves, strict=True):
        tensors = {k: state[k].contiguous() for k in part}
        if fmt == "safetensors":
            save_file(tensors, str(folder / name), metadata={"format": "pt"})
        else:
            torch.save(tensors, folder / name)
        weight_map.update(dict.fromkeys(part, name))
    total = sum(v.numel() * v.element_size() for v in state.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (folder / f"{stem}.{ext}.index.json").write_text(json.dumps(index, indent=2))
    shutil.copy(pretrained_dir() / "config.json", folder / "config.json")
    return names


@pytest.mark.parametrize("fmt", ["safetensors", "bin"])
def test_sharded_checkpoint_loads(real_reference, real_batch, tmp_path, fmt):
    write_shards(tmp_path, fmt)
    assert not (tmp_path / "model.safetensors").exists() and not (tmp_path / "pytorch_model.bin").exists()
    mb = BertModel.from_pretrained(tmp_path)
    assert_same_as_original(real_reference, real_batch, mb, f"2 {fmt} shards")


def test_sharded_folder_is_one_transformers_loads_too(real_reference, real_batch, tmp_path):
    """The hand-written index is transformers' format: transformers itself loads the folder."""
    write_shards(tmp_path, "safetensors")
    hf = transformers.BertModel.from_pretrained(str(tmp_path), dtype=torch.float32).eval()
    ids, mask, segments = real_batch
    with torch.no_grad():
        out = hf(input_ids=ids, attention_mask=mask, token_type_ids=segments)
    assert max_diff(real_reference[0].last_hidden_state, out.last_hidden_state) <= 1e-6


def test_missing_shard_is_named(offline, tmp_path):
    names = write_shards(tmp_path, "safetensors")
    (tmp_path / names[1]).unlink()
    with pytest.raises(FileNotFoundError) as exc:
        BertModel.from_pretrained(tmp_path)
    assert names[1] in str(exc.value), f"the message should name the missing shard {names[1]}: {exc.value}"
    assert names[0] not in str(exc.value), f"the shard that is there should not be listed as missing: {exc.value}"


# 5. Config variants that compute something else -----------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_folder(offline, tmp_path_factory):
    hf = random_hf("BertModel", seed=40)
    folder = tmp_path_factory.mktemp("tiny_bert")
    hf.save_pretrained(folder)
    return folder, hf


@pytest.mark.parametrize(("field", "value"), [("position_embedding_type", "relative_key"),
                                              ("position_embedding_type", "relative_key_query"),
                                              ("is_decoder", True), ("add_cross_attention", True)])
def test_unsupported_config_variant_is_refused(tiny_folder, tmp_path, field, value):
    folder = tmp_path / "ckpt"
    shutil.copytree(tiny_folder[0], folder)
    edit_config(folder, **{field: value})
    with pytest.raises(ValueError) as exc:
        BertModel.from_pretrained(folder)
    assert field in str(exc.value), f"the message should name {field}: {exc.value}"


def test_default_config_variant_values_load(tiny_folder, batch, tmp_path):
    folder = tmp_path / "ckpt"
    shutil.copytree(tiny_folder[0], folder)
    edit_config(folder, position_embedding_type="absolute", is_decoder=False, add_cross_attention=False)
    mb = BertModel.from_pretrained(folder)
    hf = tiny_folder[1]
    with torch.no_grad():
        ref = hf(**batch).last_hidden_state
        out = mb(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"]).last_hidden_state
    assert max_diff(ref, out) < ATOL, f"absolute positions: outputs differ from transformers by {max_diff(ref, out)}"


def test_real_config_declares_absolute_positions_and_loads(offline):
    """MiniLM's own config.json says position_embedding_type=absolute: the check must not refuse it."""
    assert json.loads((pretrained_dir() / "config.json").read_text())["position_embedding_type"] == "absolute"
    assert BertModel.from_pretrained(pretrained_dir()).config.hidden_size == 384


def test_untied_checkpoint_without_a_decoder_bias_takes_the_shared_bias(tmp_path):
    """transformers 4.x kept the decoder bias tied to `cls.predictions.bias` even when the matrices were untied, and
    saved it once: such a file has no `cls.predictions.decoder.bias`. It loads with the decoder bias = that bias."""
    torch.manual_seed(0)
    config = BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=16, tie_word_embeddings=False)
    model = BertForPreTraining(config)
    with torch.no_grad():
        model.cls.predictions.bias.normal_()
        model.cls.predictions.decoder.bias.copy_(model.cls.predictions.bias)
    folder = model.save_pretrained(tmp_path / "untied")
    state = load_file(str(folder / "model.safetensors"))
    del state["cls.predictions.decoder.bias"]
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    loaded = BertForPreTraining.from_pretrained(folder)
    assert loaded.cls.predictions.decoder.weight is not loaded.bert.embeddings.word_embeddings.weight
    assert torch.equal(loaded.cls.predictions.decoder.bias, state["cls.predictions.bias"])
    assert torch.equal(loaded.cls.predictions.decoder.weight, state["cls.predictions.decoder.weight"])
