# Generated from notebook 03_attention.ipynb by minibert_course.export: edit the notebook, not this file.
"""Hugging Face-compatible checkpoints: from_pretrained / save_pretrained (chapter 03).

Why strict: a checkpoint whose keys or shapes do not match the model must fail, naming the key. Loading with
`strict=False` and carrying on with random weights is the classic silent bug of weight porting.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import fields, replace
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from minibert.config import BertConfig

__all__ = ["PreTrainedMixin", "load_state_dict", "adapt_keys", "check_state_dict"]

LEGACY_BUFFERS = ("embeddings.position_ids", "embeddings.token_type_ids")  # saved by old transformers, not weights
LEGACY_NAMES = {"LayerNorm.gamma": "LayerNorm.weight", "LayerNorm.beta": "LayerNorm.bias"}  # TensorFlow-era BERT


def _load_file(path: Path) -> dict[str, torch.Tensor]:
    if path.suffix == ".safetensors":
        return load_file(str(path))
    return torch.load(path, map_location="cpu", weights_only=True)


def load_state_dict(folder: str | Path) -> dict[str, torch.Tensor]:
    """The tensors of model.safetensors (preferred) or pytorch_model.bin in `folder`, or of the shards that their
    `.index.json` lists (how transformers saves large models)."""
    folder = Path(folder)
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (folder / name).exists():
            return _load_file(folder / name)
        index = folder / f"{name}.index.json"
        if index.exists():
            shards = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
            missing = [s for s in shards if not (folder / s).exists()]
            if missing:
                raise FileNotFoundError(f"{index} lists shards that are missing: {missing}")
            return {k: v for shard in shards for k, v in _load_file(folder / shard).items()}
    raise FileNotFoundError(f"{folder} has neither model.safetensors nor pytorch_model.bin")


def adapt_keys(state: dict[str, torch.Tensor], expected: set[str], prefix: str) -> dict[str, torch.Tensor]:
    """Add or remove the base-model prefix (`bert.`) so the checkpoint's keys can meet the model's.

    A bare BertModel has keys without the prefix; task models hold it under `bert.`. Heads the model does not have
    (e.g. `cls.*` when loading a pretraining checkpoint into BertModel) are dropped: they are not part of it.
    """
    state = {k: v for k, v in state.items() if not k.endswith(LEGACY_BUFFERS)}
    for old, new in LEGACY_NAMES.items():  # `...LayerNorm.gamma` -> `...LayerNorm.weight`, as transformers does
        state = {(k[: -len(old)] + new if k.endswith(old) else k): v for k, v in state.items()}
    model_prefixed = any(k.startswith(prefix) for k in expected)
    ckpt_prefixed = any(k.startswith(prefix) for k in state)
    if ckpt_prefixed and not model_prefixed:
        return {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
    if model_prefixed and not ckpt_prefixed:
        return {(prefix + k if prefix + k in expected else k): v for k, v in state.items()}
    return state


def check_state_dict(model: torch.nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Raise, naming the key, unless `state` has exactly the model's keys with the model's shapes."""
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        raise KeyError(
            f"checkpoint and model disagree: missing {missing[:5]}{' ...' if len(missing) > 5 else ''}, "
            f"unexpected {unexpected[:5]}{' ...' if len(unexpected) > 5 else ''}"
        )
    for key, tensor in state.items():
        if tuple(tensor.shape) != tuple(expected[key].shape):
            hint = " (vocabulary size: use the tokenizer and config.json of this checkpoint)" if (
                key.endswith("word_embeddings.weight")) else ""
            raise ValueError(
                f"{key}: checkpoint has shape {tuple(tensor.shape)}, model expects {tuple(expected[key].shape)}{hint}"
            )


def _prefixes(keys: list[str]) -> list[str]:
    """`cls.predictions.bias`, `cls.predictions.transform.dense.weight`, ... -> `cls.predictions.*`, for messages."""
    return sorted({".".join(k.split(".")[:2]) + ".*" if k.count(".") > 1 else k for k in keys})


class PreTrainedMixin:
    """Weight initialization, parameter counting, and Hugging Face-compatible load/save for minibert models."""

    base_model_prefix = "bert"
    _new_head_keys: tuple[str, ...] = ()  # task heads (chapter 07): keys a pretrained body lacks, initialized fresh
    _tied_weights_keys: dict[str, str] = {}  # key -> the key whose tensor it shares, when the config ties them

    @property
    def tied_weights(self) -> dict[str, str]:
        """The keys stored once because they share a tensor (none when config.tie_word_embeddings is False)."""
        return dict(self._tied_weights_keys) if self.config.tie_word_embeddings else {}

    def init_weights(self) -> None:
        """Hugging Face's BERT initialization: normal(0, initializer_range), zero biases, LayerNorm = identity.

        A model built on the meta device (shapes only, to count parameters) has no values to set: skipped, which
        saves the seconds torch spends drawing normals for meta tensors in Python."""
        if next(self.parameters()).is_meta:
            return
        std = self.config.initializer_range
        embedding_weights = {id(m.weight) for m in self.modules() if isinstance(m, torch.nn.Embedding)}
        for module in self.modules():
            if isinstance(module, torch.nn.Linear):
                if id(module.weight) not in embedding_weights:  # a decoder tied to the embeddings keeps them
                    torch.nn.init.normal_(module.weight, std=std)
                if module.bias is not None:
                    torch.nn.init.zeros_(module.bias)
            elif isinstance(module, torch.nn.Embedding):
                torch.nn.init.normal_(module.weight, std=std)
                if module.padding_idx is not None:
                    with torch.no_grad():
                        module.weight[module.padding_idx].zero_()
            elif isinstance(module, torch.nn.LayerNorm):
                torch.nn.init.ones_(module.weight)
                torch.nn.init.zeros_(module.bias)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    @classmethod
    def from_pretrained(cls, folder: str | Path, **kwargs):
        """Build the model from `folder`/config.json and load its weights (strictly)."""
        folder = Path(folder)
        if not (folder / "config.json").exists():
            raise FileNotFoundError(f"{folder / 'config.json'} does not exist: not a Hugging Face model folder")
        config = BertConfig.from_json_file(folder / "config.json")
        overrides = {k: kwargs.pop(k) for k in list(kwargs) if k in {f.name for f in fields(BertConfig)}}
        if "id2label" in overrides:  # the label names decide the number of labels
            if overrides.get("num_labels", len(overrides["id2label"])) != len(overrides["id2label"]):
                raise ValueError(f"num_labels={overrides['num_labels']} disagrees with id2label, which names "
                                 f"{len(overrides['id2label'])} labels: give one of them")
            overrides["num_labels"] = len(overrides["id2label"])
        elif "num_labels" in overrides:  # a new head: new classes, named LABEL_0, LABEL_1, ...
            config.id2label = None
        model = cls(replace(config, **overrides), **kwargs)  # e.g. num_labels=3 for a new classification head
        expected = set(model.state_dict())
        state = adapt_keys(load_state_dict(folder), expected, cls.base_model_prefix + ".")
        for tied, source in model.tied_weights.items():
            if tied in state and source in state and not torch.equal(state[tied], state[source]):
                raise ValueError(  # loading both into the one shared tensor would let the last one win silently
                    f"the checkpoint's {tied} differs from its {source}, but config.json ties them "
                    "(tie_word_embeddings is true or absent): if this model was trained with a separate output "
                    'matrix, set "tie_word_embeddings": false in config.json to load both'
                )
        for tied, source in model._tied_weights_keys.items():  # saved once, under the source's name (older
            if tied not in state and source in state:  # transformers also left out an untied decoder's bias)
                state[tied] = state[source]
        new, unused = [], []
        if cls._new_head_keys:  # a task model from a pretrained body: its head is new, other heads go unused
            new = sorted(k for k in expected - set(state) if k.startswith(cls._new_head_keys))
            unused = sorted(set(state) - expected)
            state = {k: v for k, v in state.items() if k in expected}
            shapes = model.state_dict()
            wrong = [k for k in sorted(state) if k.startswith(cls._new_head_keys) and state[k].shape != shapes[k].shape]
            if wrong:  # a task checkpoint whose head has another number of labels
                raise ValueError(
                    "the checkpoint's head does not fit: " + ", ".join(
                        f"{k} {tuple(state[k].shape)} in the checkpoint, {tuple(shapes[k].shape)} in the model"
                        for k in wrong) + f" (num_labels={model.config.num_labels}): load it with the checkpoint's "
                    "num_labels, or start a new head from a checkpoint without one (a pretrained body)")
            state.update({k: v for k, v in model.state_dict().items() if k in new})  # keeps its initialization
            if new or unused:
                warnings.warn(f"{cls.__name__} from {folder}: newly initialized (train them): {new}; not used: "
                              f"{_prefixes(unused)}", stacklevel=2)
        check_state_dict(model, state)
        model.load_state_dict(state, strict=True)
        model.loading_info = {"new_keys": new, "unused_keys": unused}
        return model.eval()

    def save_pretrained(self, folder: str | Path) -> Path:
        """Write config.json and model.safetensors that `transformers` (and minibert) load."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        tied = self.tied_weights  # e.g. the MLM decoder = the word embeddings: store it once
        state = {k: v.detach().contiguous() for k, v in self.state_dict().items() if k not in tied}
        weights_tmp, config_tmp = folder / "model.safetensors.tmp", folder / "config.json.tmp"
        try:  # write both files aside, then swap them in: an interrupted save leaves the old pair intact
            save_file(state, str(weights_tmp), metadata={"format": "pt"})
            self.config.to_json_file(config_tmp, architectures=[type(self).__name__])
        except BaseException:
            weights_tmp.unlink(missing_ok=True)
            config_tmp.unlink(missing_ok=True)
            raise
        os.replace(weights_tmp, folder / "model.safetensors")
        os.replace(config_tmp, folder / "config.json")
        return folder
