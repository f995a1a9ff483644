# Generated from notebook 03_attention.ipynb by minibert_course.export: edit the notebook, not this file.
"""Scaled dot-product and multi-head self-attention (chapter 03).

Why two paths: `attention_with_probs` below is the formula written out, which students write and which returns
the attention probabilities for plotting; the model's fast path calls PyTorch's fused
`torch.nn.functional.scaled_dot_product_attention` (flash / memory-efficient kernels), which gives the same output
but no probabilities. (The written-out function has its own name so that it never shadows PyTorch's.)
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from minibert.config import BertConfig

__all__ = ["BertSelfAttention", "BertAttention", "BertResidual", "additive_mask", "padding_mask",
           "attention_with_probs", "attention_pattern"]


def additive_mask(allowed: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Boolean or 0/1 mask (True/1 = may attend) -> additive mask (0 where allowed, dtype's minimum elsewhere)."""
    return torch.zeros(allowed.shape, dtype=dtype, device=allowed.device).masked_fill(
        ~allowed.bool(), torch.finfo(dtype).min
    )


def padding_mask(attention_mask: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """(B, T) with 1 = real piece, 0 = padding -> additive (B, 1, 1, T): no query reads a padding key."""
    return additive_mask(attention_mask[:, None, None, :], dtype)


def attention_with_probs(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(Q K^T / sqrt(d) + mask) V, written out.

    Args:
        query, key, value: (B, A, T, d).
        mask: additive, broadcastable to (B, A, T, T): 0 = may attend, very negative = may not.
        dropout_p: dropout on the attention probabilities (training only).

    Returns:
        output: (B, A, T, d); probs: (B, A, T, T), rows summing to 1 (before dropout).
    """
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))  # (B, A, T, T)
    if mask is not None:
        scores = scores + mask
    probs = scores.softmax(dim=-1)  # over keys j
    weights = F.dropout(probs, p=dropout_p) if dropout_p > 0 else probs
    return weights @ value, probs  # (B, A, T, d), (B, A, T, T)


def attention_pattern(seq_len: int, causal: bool = False) -> torch.Tensor:
    """(T, T) bool: [i, j] = position i may read position j. BERT: all True; causal decoder: j <= i."""
    allowed = torch.ones(seq_len, seq_len, dtype=torch.bool)
    return torch.tril(allowed) if causal else allowed


class BertSelfAttention(nn.Module):
    """Multi-head self-attention: Q, K, V projections, A heads of width d = H / A, merged back to H."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_dim = config.head_dim
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout_p = config.attention_probs_dropout_prob

    def forward(
        self, hidden_states: torch.Tensor, mask: torch.Tensor | None = None, output_attentions: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """hidden_states (B, T, H), additive mask broadcastable to (B, A, T, T) -> (B, T, H), probs (B, A, T, T)."""
        B, T, H = hidden_states.shape
        def heads(x: torch.Tensor) -> torch.Tensor:
            return x.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)  # (B, T, H) -> (B, A, T, d)

        q, k, v = heads(self.query(hidden_states)), heads(self.key(hidden_states)), heads(self.value(hidden_states))
        dropout_p = self.dropout_p if self.training else 0.0
        if output_attentions:
            context, probs = attention_with_probs(q, k, v, mask, dropout_p)
        else:
            context, probs = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p), None
        return context.transpose(1, 2).reshape(B, T, H), probs  # (B, A, T, d) -> (B, T, H)


class BertResidual(nn.Module):
    """dense -> dropout -> add the residual -> LayerNorm: the 'output' block after attention and after the FFN."""

    def __init__(self, in_features: int, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(in_features, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)  # post-LN: normalize after the add


class BertAttention(nn.Module):
    """Self-attention plus its output block (keys `attention.self.*`, `attention.output.*`)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertResidual(config.hidden_size, config)

    def forward(self, hidden_states, mask=None, output_attentions=False):
        context, probs = self.self(hidden_states, mask, output_attentions)
        return self.output(context, hidden_states), probs
