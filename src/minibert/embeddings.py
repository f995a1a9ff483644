# Generated from notebook 02_embeddings.ipynb by minibert_course.export: edit the notebook, not this file.
"""Token + segment + position embeddings (chapter 02).

Why a module of its own: the encoder only ever sees these vectors. Parameter names follow Hugging Face
(`embeddings.word_embeddings`, `embeddings.LayerNorm`, ...) so that checkpoints load both ways.
"""

from __future__ import annotations

import torch
from torch import nn

from minibert.config import BertConfig

__all__ = ["BertEmbeddings", "embedding_parameter_count"]


class BertEmbeddings(nn.Module):
    """x = LayerNorm(E_token[ids] + E_segment[segments] + E_position[positions]), then dropout.

    Args:
        config: `vocab_size`, `hidden_size`, `max_position_embeddings`, `type_vocab_size`, `pad_token_id`,
            `layer_norm_eps`, `hidden_dropout_prob` are used.
    """

    def __init__(self, config: BertConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """input_ids, token_type_ids: (B, T) -> (B, T, H)."""
        T = input_ids.shape[1]
        if T > self.position_embeddings.num_embeddings:
            raise ValueError(
                f"{T} positions, but the model has {self.position_embeddings.num_embeddings} position embeddings: "
                "cut the input (minibert.tokenization.split_into_windows)"
            )
        if position_ids is None:
            position_ids = torch.arange(T, device=input_ids.device).unsqueeze(0)  # (1, T)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)  # (B, T)
        x = (
            self.word_embeddings(input_ids)  # (B, T, H)
            + self.token_type_embeddings(token_type_ids)  # (B, T, H)
            + self.position_embeddings(position_ids)  # (1 or B, T, H)
        )
        return self.dropout(self.LayerNorm(x))


def embedding_parameter_count(config: BertConfig) -> int:
    """Parameters of BertEmbeddings(config): (vocab + positions + segments) * H + 2H for the LayerNorm."""
    H = config.hidden_size
    return (config.vocab_size + config.max_position_embeddings + config.type_vocab_size) * H + 2 * H
