# Generated from notebook 09_base_pretraining.ipynb by minibert_course.export: edit the notebook, not this file.
"""The unpadded encoder: the same BERT, computed on the real pieces only (chapter 09).

Why: a pretraining batch pads every pair to the longest in the batch, and ~15-20% of its positions are padding. The
padded encoder computes all of them (embeddings, Q/K/V and output projections, feed-forward, LayerNorm) and throws
the results away; those position-wise operations are most of a step's FLOPs, so skipping the padding saves about the
padding share of them. The real pieces are packed into one (N, H) matrix, N = the number of real pieces in the
batch; only attention needs to know which row belongs to which sequence, and it gets its rows back in the (B, T)
layout for one fused `scaled_dot_product_attention` call with the padding mask (the padded rows are zeros there and
are dropped again right after). MosaicBERT and ModernBERT are built this way.
Why the last layer stops early: pretraining's heads read only the MLM targets (~15% of the pieces) and each `[CLS]`.
In the last layer every piece is still needed as a key and a value, but only the rows the heads read need what comes
after attention (the output projection, the feed-forward block, two LayerNorms: 9 of the layer's 12 H² weights per
row at the usual I = 4H), so those run on the kept rows only. MosaicBERT does the same (`subset_idx`).
Why its own dropout: dropout is position-wise too, so the packed rows get their masks from the same distribution as
the padded ones (not the same random numbers). On a CPU `F.dropout` draws its mask with `bernoulli_`, and SDPA's CPU
kernel has no dropout (with it, attention falls back to a written-out path that draws with `bernoulli_` too); drawing
the mask with `torch.rand` instead is the same distribution in about half the time (chapter 09, section 6, measures
it). The uniform numbers are drawn in fp32 whatever the activations' dtype: drawn in bf16 they take too few distinct
values, and the keep probability is off (at p = 0.001, about three times too many drops). On a GPU both keep their
fused kernels.
Why a second forward over the same modules rather than a second model: the weights, their names and the checkpoints
are BertForPreTraining's; `UnpaddedBertForPreTraining` only changes how a batch flows through them, so a checkpoint
trained on either path loads on the other, and `transformers` loads both.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from minibert.attention import BertResidual, BertSelfAttention, padding_mask
from minibert.heads import BertForPreTraining, BertForPreTrainingOutput, pretraining_loss
from minibert.masking import IGNORE_INDEX
from minibert.model import BertLayer, BertModel, check_input_ids

__all__ = ["Packing", "packing", "unpadded_encoder", "UnpaddedBertForPreTraining"]


@dataclass
class Packing:
    """Where the N real pieces of a (B, T) batch sit: `indices` (N,) into the flattened B * T positions."""

    indices: torch.Tensor  # (N,) flat positions b * T + t of the pieces whose attention_mask is 1, in order
    batch: int
    seq: int

    def pack(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, ...) -> (N, ...): the rows of the real pieces."""
        return x.reshape(self.batch * self.seq, *x.shape[2:])[self.indices]

    def unpack(self, x: torch.Tensor) -> torch.Tensor:
        """(N, ...) -> (B, T, ...), zeros at the padding."""
        out = x.new_zeros(self.batch * self.seq, *x.shape[1:])
        return out.index_copy(0, self.indices, x).view(self.batch, self.seq, *x.shape[1:])


def packing(attention_mask: torch.Tensor) -> Packing:
    """(B, T) with 1 = real piece, 0 = padding -> the Packing of its real pieces. (On a GPU, `nonzero` waits for the
    device once per batch: the number of real pieces decides the shapes of everything after.)"""
    B, T = attention_mask.shape
    return Packing(attention_mask.reshape(-1).bool().nonzero().squeeze(1), B, T)


def _dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """F.dropout's distribution: each entry kept with probability 1 - p and scaled by 1 / (1 - p), zero otherwise. On a
    CPU the mask comes from `torch.rand` (see the module's docstring for why); elsewhere it is F.dropout."""
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu" or p >= 1.0:
        return F.dropout(x, p, training=True)
    keep = torch.rand_like(x, dtype=torch.float32).ge_(p)  # u ~ U[0, 1) in fp32: kept when u >= p, probability 1 - p
    return x * keep.mul_(1.0 / (1.0 - p)).to(x.dtype)


def _output(block: BertResidual, h: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    """BertResidual's LayerNorm(dropout(dense(h)) + residual), with `_dropout`. (M, ...) -> (M, H)."""
    return block.LayerNorm(_dropout(block.dense(h), block.dropout.p, block.training) + residual)


def _attention(self_attention: BertSelfAttention, x: torch.Tensor, p: Packing, mask: torch.Tensor) -> torch.Tensor:
    """Multi-head self-attention of packed rows (N, H) -> (N, H). Q, K and V come from one matrix product (the three
    weights side by side: one (N, H) x (H, 3H) product instead of three thin ones); attention itself runs per
    sequence, in the (B, T) layout, with the padding mask."""
    sa, A, d = self_attention, self_attention.num_heads, self_attention.head_dim
    weight = torch.cat([sa.query.weight, sa.key.weight, sa.value.weight])  # (3H, H)
    bias = torch.cat([sa.query.bias, sa.key.bias, sa.value.bias])  # (3H,)
    qkv = p.unpack(F.linear(x, weight, bias))  # (N, 3H) -> (B, T, 3H)
    q, k, v = qkv.view(p.batch, p.seq, 3, A, d).permute(2, 0, 3, 1, 4)  # 3 x (B, A, T, d)
    if sa.training and sa.dropout_p > 0 and x.device.type == "cpu":  # SDPA's CPU kernel has no dropout: write it out
        probs = (q @ k.transpose(-1, -2) * d**-0.5 + mask).softmax(-1)  # (B, A, T, T)
        context = _dropout(probs, sa.dropout_p, True) @ v  # (B, A, T, d)
    else:
        dropout_p = sa.dropout_p if sa.training else 0.0
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)  # (B, A, T, d)
    return p.pack(context.transpose(1, 2).reshape(p.batch, p.seq, A * d))  # (N, H)


def _layer(layer: BertLayer, x: torch.Tensor, p: Packing, mask: torch.Tensor,
           keep: torch.Tensor | None = None) -> torch.Tensor:
    """One post-LN encoder layer on packed rows: BertLayer's modules, with attention as above. (N, H) -> (N, H), or
    (M, H) for the M rows where the (N,) bool `keep` is True: every row is a key and a value, only those go on."""
    context = _attention(layer.attention.self, x, p, mask)  # (N, H)
    if keep is not None:
        context, x = context[keep], x[keep]  # (M, H)
    attended = _output(layer.attention.output, context, x)  # LayerNorm(x + Attn(x))
    return _output(layer.output, layer.intermediate(attended), attended)  # LayerNorm(h + FFN(h))


def unpadded_encoder(bert: BertModel, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                     token_type_ids: torch.Tensor | None = None,
                     keep: torch.Tensor | None = None) -> tuple[torch.Tensor, Packing]:
    """`bert`'s embeddings and encoder on the real pieces only: the final states (N, H) of the N pieces whose
    attention_mask is 1, and their Packing. Position ids stay those of the padded layout (0..T-1 in every row), so
    each piece gets exactly the state the padded model gives it. With `keep` ((B, T) bool, True at real pieces only)
    the last layer goes past attention for those pieces only: (M, H), M = keep.sum(), in the same order."""
    if input_ids.device.type == "cpu" and not torch.compiler.is_compiling():
        check_input_ids(input_ids, bert.config.vocab_size)
    B, T = input_ids.shape
    if T > bert.config.max_position_embeddings:  # the embeddings see one position per row here: check it ourselves
        raise ValueError(f"{T} positions, but the model has {bert.config.max_position_embeddings} position embeddings:"
                         " cut the input (minibert.tokenization.split_into_windows)")
    if attention_mask.shape != (B, T):
        raise ValueError(f"attention_mask has shape {tuple(attention_mask.shape)}, input_ids {(B, T)}: the unpadded "
                         "path needs one mask entry per position (1 = piece, 0 = padding)")
    p = packing(attention_mask)
    positions = torch.arange(T, device=input_ids.device).expand(B, T)  # (B, T)
    types = torch.zeros_like(input_ids) if token_type_ids is None else token_type_ids
    e = bert.embeddings  # BertEmbeddings' sum of three lookups, LayerNorm, dropout, on the N real pieces: (N, H)
    x = e.LayerNorm(e.word_embeddings(p.pack(input_ids)) + e.token_type_embeddings(p.pack(types))
                    + e.position_embeddings(p.pack(positions)))
    x = _dropout(x, e.dropout.p, e.training)
    kept = None if keep is None else p.pack(keep.bool())  # (N,): keep at the real pieces
    if kept is not None and int(kept.sum()) != int(keep.bool().sum()):
        raise ValueError("keep is True at a padding position: only real pieces (attention_mask 1) can be kept")
    mask = padding_mask(attention_mask, x.dtype)  # (B, 1, 1, T)
    last = len(bert.encoder.layer) - 1
    for i, layer in enumerate(bert.encoder.layer):
        x = _layer(layer, x, p, mask, kept if i == last else None)  # (N, H); (M, H) after the last
    return x, p


def _packable(attention_mask: torch.Tensor, labels: torch.Tensor) -> bool:
    """Every row starts with a real piece (its [CLS]) and no MLM label sits at padding. (On a GPU this reads one
    flag back from the device, once per batch.)"""
    padding = ~attention_mask.bool()
    return not bool(padding[:, 0].any() | (padding & (labels != IGNORE_INDEX)).any())


class UnpaddedBertForPreTraining(BertForPreTraining):
    """BertForPreTraining whose encoder skips the padding: the same modules, weights, checkpoint keys and outputs
    (at the real pieces; `prediction_logits` at the targets, as with targets_only=True, which is how it trains).
    Calls that need the padded path take it: without targets_only=True or labels, without an attention_mask, with
    position_ids, attentions or hidden states asked for, with a row whose first position ([CLS], which the pooler
    reads) is padding, or with an MLM label at a padding position (the padded loss counts it; this one could not).
    With dropout on, both paths draw their masks from the same distribution but not the same random numbers."""

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None, labels=None,
                next_sentence_label=None, targets_only: bool = False, output_attentions: bool = False,
                output_hidden_states: bool = False) -> BertForPreTrainingOutput:
        if attention_mask is None or position_ids is not None or output_attentions or output_hidden_states \
                or not targets_only or labels is None or not _packable(attention_mask, labels):
            return super().forward(input_ids, attention_mask, token_type_ids, position_ids, labels,
                                   next_sentence_label, targets_only, output_attentions, output_hidden_states)
        keep = labels != IGNORE_INDEX  # (B, T): the rows the heads read, the MLM targets ...
        keep[:, 0] = True  # ... and each [CLS], for the pooler
        states, p = unpadded_encoder(self.bert, input_ids, attention_mask, token_type_ids, keep)  # (M, H)
        kept_labels = labels[keep]  # (M,): row-major, the order of the packed rows
        targets = kept_labels != IGNORE_INDEX
        # [CLS] is position 0 of each row: its kept row is the number of kept pieces before it
        first = torch.cumsum(keep.reshape(-1).long(), 0).view_as(keep)[:, 0] - 1  # (B,)
        pooled = self.bert.pooler(states[first, None])  # BertPooler reads row 0 of (B, 1, H): (B, H)
        logits, nsp_logits = self.cls(states[targets], pooled)  # (n, V), (B, 2)
        loss = mlm_loss = nsp_loss = None
        if next_sentence_label is not None:
            loss, mlm_loss, nsp_loss = pretraining_loss(logits, kept_labels[targets], nsp_logits, next_sentence_label)
        return BertForPreTrainingOutput(loss, logits, nsp_logits, mlm_loss, nsp_loss)
