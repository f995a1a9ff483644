# Generated from notebook 03_attention.ipynb by minibert_course.export: edit the notebook, not this file.
"""BertModel: embeddings, a stack of post-LN encoder layers, and the pooler (chapter 03).

Why the class nesting looks like this: it reproduces the checkpoint key paths of Google's BERT and Hugging Face
(`encoder.layer.N.attention.self.query`, `intermediate.dense`, `output.LayerNorm`, `pooler.dense`), so that weights
load both ways without renaming. Loading and saving live in `minibert.checkpoint`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from minibert.attention import BertAttention, BertResidual, padding_mask
from minibert.checkpoint import PreTrainedMixin
from minibert.config import BertConfig
from minibert.embeddings import BertEmbeddings

__all__ = ["BertModel", "BaseModelOutputWithPooling", "BertLayer", "BertIntermediate", "BertEncoder", "BertPooler",
           "check_input_ids", "count_parameters"]

ACTIVATIONS = {
    "gelu": F.gelu,  # exact erf form, Hugging Face's "gelu"
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "relu": F.relu,
}


class BertIntermediate(nn.Module):
    """The widening half of the feed-forward block: dense H -> 4H, then GELU."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.act = ACTIVATIONS[config.hidden_act]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.dense(x))  # (B, T, I)


class BertLayer(nn.Module):
    """One post-LN encoder layer: attention block, then feed-forward block, each with residual + LayerNorm."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertResidual(config.intermediate_size, config)

    def forward(self, hidden_states, mask=None, output_attentions=False):
        """(B, T, H) -> (B, T, H), attention probabilities (B, A, T, T) or None."""
        attended, probs = self.attention(hidden_states, mask, output_attentions)  # LayerNorm(x + Attn(x))
        return self.output(self.intermediate(attended), attended), probs  # LayerNorm(h + FFN(h))


class BertEncoder(nn.Module):
    """The stack of L layers (key `encoder.layer.N`): each reads the previous one's output."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.layer = nn.ModuleList(BertLayer(config) for _ in range(config.num_hidden_layers))

    def forward(self, hidden_states: torch.Tensor, mask: torch.Tensor | None = None, output_attentions: bool = False
                ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...], tuple[torch.Tensor | None, ...]]:
        """(B, T, H) -> the last layer's (B, T, H); the L + 1 hidden states (the input, then each layer's); the L
        attention probabilities (B, A, T, T), or None each without output_attentions."""
        hidden, attentions = [hidden_states], []
        for layer in self.layer:
            hidden_states, probs = layer(hidden_states, mask, output_attentions)
            hidden.append(hidden_states)
            attentions.append(probs)
        return hidden_states, tuple(hidden), tuple(attentions)


class BertPooler(nn.Module):
    """dense + tanh on the final [CLS] state: the sentence vector that classification heads read."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(hidden_states[:, 0]))  # (B, H)


@dataclass
class BaseModelOutputWithPooling:
    """Field names as in transformers."""

    last_hidden_state: torch.Tensor  # (B, T, H)
    pooler_output: torch.Tensor | None = None  # (B, H)
    hidden_states: tuple[torch.Tensor, ...] | None = None  # L + 1 times (B, T, H): embeddings, then each layer
    attentions: tuple[torch.Tensor, ...] | None = None  # L times (B, A, T, T)


def check_input_ids(input_ids: torch.Tensor, vocab_size: int) -> None:
    """Raise, naming the id, if `input_ids` leave the vocabulary: the usual sign of a tokenizer/checkpoint mismatch.
    The model calls it for CPU tensors only, outside torch.compile: on a GPU, reading the ids back would stall the
    device on every forward pass, and a compiled graph would break at the data-dependent branch."""
    if input_ids.numel() == 0:
        return
    low, high = int(input_ids.min()), int(input_ids.max())
    if low < 0 or high >= vocab_size:
        bad = low if low < 0 else high
        raise ValueError(
            f"input id {bad} is outside the model's vocabulary of {vocab_size} ids: "
            "the tokenizer and the checkpoint do not match"
        )


class BertModel(PreTrainedMixin, nn.Module):
    """The bidirectional encoder: embeddings -> L post-LN layers -> pooler.

    Args:
        config: the sizes.
        add_pooling_layer: False for models that never read the pooled [CLS] vector.
    """

    base_model_prefix = "bert"

    def __init__(self, config: BertConfig, add_pooling_layer: bool = True):
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooling_layer else None
        self.init_weights()

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        output_attentions: bool = False,
        output_hidden_states: bool = False,
    ) -> BaseModelOutputWithPooling:
        """input_ids, attention_mask (1 = piece, 0 = padding), token_type_ids: (B, T)."""
        if input_ids.device.type == "cpu" and not torch.compiler.is_compiling():
            check_input_ids(input_ids, self.config.vocab_size)  # on GPU the embedding lookup itself asserts
        x = self.embeddings(input_ids, token_type_ids, position_ids)  # (B, T, H)
        mask = None if attention_mask is None else padding_mask(attention_mask, x.dtype)  # (B, 1, 1, T)
        x, hidden, attentions = self.encoder(x, mask, output_attentions)  # (B, T, H)
        return BaseModelOutputWithPooling(
            last_hidden_state=x,
            pooler_output=self.pooler(x) if self.pooler is not None else None,
            hidden_states=hidden if output_hidden_states else None,
            attentions=attentions if output_attentions else None,
        )


def count_parameters(config: BertConfig) -> int:
    """Parameters of BertModel(config), counted on the meta device (no memory is allocated)."""
    with torch.device("meta"):
        model = BertModel(config)
    return sum(p.numel() for p in model.parameters())
