# Generated from notebook 03_attention.ipynb by minibert_course.export: edit the notebook, not this file.
"""BERT's hyperparameters (chapter 03).

Why a dataclass with Hugging Face's field names: a `config.json` moves between minibert and `transformers` without
translation, and every size of the model is in one place.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path

__all__ = ["BertConfig"]


@dataclass
class BertConfig:
    """Sizes and regularization of a BERT model.

    Args:
        vocab_size: WordPiece vocabulary size (30,522 for bert-base-uncased).
        hidden_size: H, the width of every position's state.
        num_hidden_layers: L, the number of encoder layers.
        num_attention_heads: A; `hidden_size` must be divisible by it (head width H / A).
        intermediate_size: width of the feed-forward block (4H in BERT).
        hidden_act: "gelu" is the exact erf GELU, as Hugging Face's "gelu" (not the tanh approximation, which is
            "gelu_new"); "relu" is also accepted.
        hidden_dropout_prob: dropout on embeddings and on each residual branch.
        attention_probs_dropout_prob: dropout on the attention probabilities.
        max_position_embeddings: rows of the learned position table (BERT's 512 limit).
        type_vocab_size: number of segments (A/B).
        initializer_range: std of the normal initialization of weights.
        layer_norm_eps: 1e-12, as in the original TensorFlow code (PyTorch's default is 1e-5).
        pad_token_id: id of [PAD], whose embedding row starts at zero.
        tie_word_embeddings: the MLM decoder shares the word-embedding matrix (chapter 06). Some checkpoints train
            them apart (`false` in their config.json): then the decoder has its own weight and bias.
        num_labels, id2label: the classes of a task head (chapter 07). transformers stores only `id2label` in
            config.json, so it decides `num_labels`; without it the names are LABEL_0, LABEL_1, ...
        classifier_dropout: dropout before a task head's classifier; None means hidden_dropout_prob.
        problem_type: how a sequence classifier's loss reads its labels (None: regression when num_labels == 1,
            else single-label cross-entropy for integer labels, multi-label BCE for float labels), as transformers.
    """

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    tie_word_embeddings: bool = True
    num_labels: int = 2
    id2label: dict[int, str] | None = None
    classifier_dropout: float | None = None
    problem_type: str | None = None

    def __post_init__(self):
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size={self.hidden_size} is not divisible by num_attention_heads={self.num_attention_heads}"
            )
        if self.hidden_act not in ("gelu", "gelu_new", "gelu_pytorch_tanh", "relu"):
            raise ValueError(f"hidden_act={self.hidden_act!r} is not supported: use 'gelu' (BERT's)")
        if self.id2label is None:  # transformers' default names: LABEL_0, LABEL_1, ...
            self.id2label = {i: f"LABEL_{i}" for i in range(self.num_labels)}
        self.id2label = {int(k): v for k, v in self.id2label.items()}  # JSON keys are strings: {"0": "O"}
        self.num_labels = len(self.id2label)

    @classmethod
    def tiny(cls, **overrides) -> BertConfig:
        """2 layers, 128 wide, 2 heads: trains on a laptop CPU (the course's default)."""
        return cls(**{"hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
                      "intermediate_size": 512, **overrides})

    @classmethod
    def small(cls, **overrides) -> BertConfig:
        """BERT-Small (Turc et al., 2019, "Well-Read Students Learn Better"): L=4, H=512, A=8 (~29M parameters)."""
        return cls(**{"hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8,
                      "intermediate_size": 2048, **overrides})

    @classmethod
    def base(cls, **overrides) -> BertConfig:
        """BERT-Base: L=12, H=768, A=12 (~110M parameters)."""
        return cls(**overrides)

    @classmethod
    def large(cls, **overrides) -> BertConfig:
        """BERT-Large: L=24, H=1024, A=16 (~340M parameters)."""
        return cls(**{"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
                      "intermediate_size": 4096, **overrides})

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    def to_dict(self) -> dict:
        return {**asdict(self), "model_type": "bert"}

    @classmethod
    def from_dict(cls, data: dict) -> BertConfig:
        """Known fields only: a Hugging Face config.json carries many more (architectures, torch_dtype, ...)."""
        if data.get("model_type", "bert") != "bert":
            raise ValueError(f"not a BERT config: model_type={data.get('model_type')!r}")
        unsupported = {"position_embedding_type": "absolute", "is_decoder": False, "add_cross_attention": False}
        for name, ours in unsupported.items():  # weights of these variants would load, but compute something else
            if data.get(name, ours) != ours:
                raise ValueError(f"config.json has {name}={data[name]!r}: minibert implements {name}={ours!r} only")
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    @classmethod
    def from_json_file(cls, path: str | Path) -> BertConfig:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path} is not valid JSON ({exc})") from exc
        return cls.from_dict(data)

    def to_json_file(self, path: str | Path, **extra) -> None:
        text = json.dumps({**self.to_dict(), **extra}, indent=2, sort_keys=True)
        Path(path).write_text(text + "\n", encoding="utf-8")
