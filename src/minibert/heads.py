# Generated from notebook 06_pretraining.ipynb by minibert_course.export: edit the notebook, not this file.
"""Pretraining heads and loss: BertForPreTraining (MLM + NSP) and BertForMaskedLM (chapter 06).

Why tie the decoder to the word embeddings: the same matrix reads pieces in and writes them out, which saves
vocab_size x H parameters (23M in BERT-Base) and is what the original checkpoints expect. Why compute the MLM
logits on targets only: the vocabulary projection is the most expensive matrix product of a small model, and only
~15% of the positions have a label.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from minibert.checkpoint import PreTrainedMixin
from minibert.config import BertConfig
from minibert.masking import IGNORE_INDEX
from minibert.model import ACTIVATIONS, BertModel

__all__ = ["BertForPreTraining", "BertForMaskedLM", "BertForPreTrainingOutput", "MaskedLMOutput",
           "BertPreTrainingHeads", "BertOnlyMLMHead", "BertLMPredictionHead", "BertPredictionHeadTransform",
           "untie_decoder", "pretraining_loss", "next_sentence_logits", "masked_token_accuracy"]


class BertPredictionHeadTransform(nn.Module):
    """dense + activation + LayerNorm before the vocabulary projection (key `cls.predictions.transform`)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.act = ACTIVATIONS[config.hidden_act]
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.act(self.dense(x)))


class BertLMPredictionHead(nn.Module):
    """transform -> decoder tied to the word embeddings, plus its own bias: (..., H) -> (..., V)."""

    def __init__(self, config: BertConfig, word_embeddings: nn.Embedding):
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size)
        self.decoder.weight = word_embeddings.weight  # tied: one matrix reads pieces in and scores them out
        self.decoder.bias = self.bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.transform(x))


def next_sentence_logits(
    sequence_output: torch.Tensor, pooler_dense: nn.Linear, seq_relationship: nn.Linear
) -> torch.Tensor:
    """The NSP head: pooler (dense + tanh on the final [CLS] state) then the 2-way classifier.

    Args:
        sequence_output: (B, T, H) final hidden states; position 0 is [CLS].
        pooler_dense: the pooler's Linear(H, H) (key `bert.pooler.dense`).
        seq_relationship: the classifier Linear(H, 2) (key `cls.seq_relationship`).

    Returns:
        (B, 2) logits: column 0 scores IsNext, column 1 NotNext.
    """
    pooled = torch.tanh(pooler_dense(sequence_output[:, 0]))  # (B, H): the [CLS] state of every sequence
    return seq_relationship(pooled)  # (B, 2)


def pretraining_loss(
    prediction_logits: torch.Tensor,
    labels: torch.Tensor,
    seq_relationship_logits: torch.Tensor,
    next_sentence_label: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """L = L_MLM + L_NSP. MLM: mean cross-entropy over the targets (labels != -100) only; NSP: mean over pairs.

    Returns:
        loss, mlm_loss, nsp_loss (scalars).
    """
    V = prediction_logits.shape[-1]
    mlm_loss = F.cross_entropy(prediction_logits.reshape(-1, V), labels.reshape(-1), ignore_index=IGNORE_INDEX)
    nsp_loss = F.cross_entropy(seq_relationship_logits.reshape(-1, 2), next_sentence_label.reshape(-1))
    return mlm_loss + nsp_loss, mlm_loss, nsp_loss


@dataclass
class BertForPreTrainingOutput:
    """Field names as in transformers (plus the two parts of the loss)."""

    loss: torch.Tensor | None = None
    prediction_logits: torch.Tensor | None = None  # (B, T, V), or (N, V) at the N targets with targets_only=True
    seq_relationship_logits: torch.Tensor | None = None  # (B, 2)
    mlm_loss: torch.Tensor | None = None
    nsp_loss: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


@dataclass
class MaskedLMOutput:
    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None  # (B, T, V), or (N, V) with targets_only=True
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


class BertPreTrainingHeads(nn.Module):
    """Both heads (key `cls`): `predictions` (MLM) and `seq_relationship` (NSP, reads the pooled [CLS])."""

    def __init__(self, config: BertConfig, word_embeddings: nn.Embedding):
        super().__init__()
        self.predictions = BertLMPredictionHead(config, word_embeddings)
        self.seq_relationship = nn.Linear(config.hidden_size, 2)

    def forward(self, sequence_output: torch.Tensor, pooled_output: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """Vocabulary logits of the states given ((B, T, V), or (N, V) for the targets' states) and the NSP logits
        of the pooled [CLS] (B, 2): `next_sentence_logits` with the pooling done by `BertModel`'s pooler."""
        return self.predictions(sequence_output), self.seq_relationship(pooled_output)


class BertOnlyMLMHead(nn.Module):
    def __init__(self, config: BertConfig, word_embeddings: nn.Embedding):
        super().__init__()
        self.predictions = BertLMPredictionHead(config, word_embeddings)

    def forward(self, sequence_output: torch.Tensor) -> torch.Tensor:
        return self.predictions(sequence_output)


def untie_decoder(head: BertLMPredictionHead) -> None:
    """Give the decoder its own weight and bias (config.tie_word_embeddings=False), as transformers does: then a
    checkpoint stores both matrices and both are loaded, each into its own tensor."""
    head.decoder.weight = nn.Parameter(head.decoder.weight.detach().clone())
    head.decoder.bias = nn.Parameter(head.decoder.bias.detach().clone())


def _mlm_inputs(sequence_output: torch.Tensor, labels: torch.Tensor | None, targets_only: bool):
    """The states the MLM head reads, with their labels: every position's (B, T, H), or the targets' only (N, H)
    with their labels (N,), for vocabulary logits at the targets only."""
    if not targets_only:
        return sequence_output, labels
    if labels is None:
        raise ValueError("targets_only=True needs labels: they say which positions are targets")
    targets = labels != IGNORE_INDEX  # (B, T)
    return sequence_output[targets], labels[targets]  # (N, H), (N,)


class BertForPreTraining(PreTrainedMixin, nn.Module):
    """BERT with the MLM and NSP heads; loss L = L_MLM + L_NSP when both kinds of labels are given."""

    _tied_weights_keys = {"cls.predictions.decoder.weight": "bert.embeddings.word_embeddings.weight",
                    "cls.predictions.decoder.bias": "cls.predictions.bias"}

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.bert = BertModel(config)
        self.cls = BertPreTrainingHeads(config, self.bert.embeddings.word_embeddings)
        if not config.tie_word_embeddings:
            untie_decoder(self.cls.predictions)
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None, labels=None,
                next_sentence_label=None, targets_only: bool = False, output_attentions: bool = False,
                output_hidden_states: bool = False) -> BertForPreTrainingOutput:
        """labels: (B, T) original ids at targets, -100 elsewhere; next_sentence_label: (B,) 0 IsNext, 1 NotNext.
        targets_only=True computes the vocabulary logits at the targets only (training)."""
        out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                        position_ids=position_ids, output_attentions=output_attentions,
                        output_hidden_states=output_hidden_states)
        states, mlm_labels = _mlm_inputs(out.last_hidden_state, labels, targets_only)
        logits, nsp_logits = self.cls(states, out.pooler_output)  # (B, T, V) or (N, V); (B, 2)
        loss = mlm_loss = nsp_loss = None
        if labels is not None and next_sentence_label is not None:
            loss, mlm_loss, nsp_loss = pretraining_loss(logits, mlm_labels, nsp_logits, next_sentence_label)
        return BertForPreTrainingOutput(loss, logits, nsp_logits, mlm_loss, nsp_loss, out.hidden_states,
                                        out.attentions)


class BertForMaskedLM(PreTrainedMixin, nn.Module):
    """BERT with the MLM head only (no pooler, no NSP), as RoBERTa-style pretraining uses."""

    _tied_weights_keys = {"cls.predictions.decoder.weight": "bert.embeddings.word_embeddings.weight",
                    "cls.predictions.decoder.bias": "cls.predictions.bias"}

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.bert = BertModel(config, add_pooling_layer=False)
        self.cls = BertOnlyMLMHead(config, self.bert.embeddings.word_embeddings)
        if not config.tie_word_embeddings:
            untie_decoder(self.cls.predictions)
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None, labels=None,
                targets_only: bool = False, output_attentions: bool = False,
                output_hidden_states: bool = False) -> MaskedLMOutput:
        out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                        position_ids=position_ids, output_attentions=output_attentions,
                        output_hidden_states=output_hidden_states)
        states, mlm_labels = _mlm_inputs(out.last_hidden_state, labels, targets_only)
        logits = self.cls(states)  # (B, T, V), or (N, V) at the targets
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), mlm_labels.reshape(-1),
                                   ignore_index=IGNORE_INDEX)
        return MaskedLMOutput(loss, logits, out.hidden_states, out.attentions)


def masked_token_accuracy(prediction_logits: torch.Tensor, labels: torch.Tensor) -> float:
    """Share of MLM targets (labels != -100) whose highest-scoring piece is the original one."""
    targets = labels != IGNORE_INDEX
    if not targets.any():
        return 0.0
    return (prediction_logits.argmax(-1)[targets] == labels[targets]).float().mean().item()
