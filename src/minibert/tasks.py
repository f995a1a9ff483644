# Generated from notebook 07_task_heads.ipynb by minibert_course.export: edit the notebook, not this file.
"""Task heads on a pretrained BERT: sequence classification, token classification, extractive QA (chapter 07).

Why heads this small: the encoder already describes each piece in context, so a task needs one linear layer (and
the pooler for a whole sequence). Why the same keys and outputs as transformers: a fine-tuned checkpoint moves both
ways, and chapter 08 can start from our pretrained body, from real weights, or from nothing, with the same code.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from minibert.checkpoint import PreTrainedMixin
from minibert.config import BertConfig
from minibert.masking import IGNORE_INDEX
from minibert.model import BertModel
from minibert.tokenization import CLS, SEP, SPECIAL_TOKENS, BertTokenizer, WordPieceTokenizer, _is_punctuation

__all__ = ["BertForSequenceClassification", "BertForTokenClassification", "BertForQuestionAnswering",
           "SequenceClassifierOutput", "TokenClassifierOutput", "QuestionAnsweringModelOutput", "align_labels",
           "encode_with_offsets", "encode_words", "prepare_qa_features", "best_span"]


@dataclass
class SequenceClassifierOutput:
    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None  # (B, num_labels)
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


@dataclass
class TokenClassifierOutput:
    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None  # (B, T, num_labels)
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


@dataclass
class QuestionAnsweringModelOutput:
    loss: torch.Tensor | None = None
    start_logits: torch.Tensor | None = None  # (B, T)
    end_logits: torch.Tensor | None = None  # (B, T)
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


class BertForSequenceClassification(PreTrainedMixin, nn.Module):
    """[CLS] classification: pooled state -> dropout -> linear (B, num_labels); keys as transformers."""

    _new_head_keys = ("classifier.", "bert.pooler.")  # a body saved without a pooler gets a new one, as transformers

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.num_labels = config.num_labels
        self.bert = BertModel(config)
        p = config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
        self.dropout = nn.Dropout(p)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None, labels=None,
                output_attentions: bool = False, output_hidden_states: bool = False) -> SequenceClassifierOutput:
        """labels: (B,) class ids (or (B,) floats when num_labels == 1, (B, num_labels) floats for multi-label)."""
        out = self.bert(input_ids, attention_mask, token_type_ids, position_ids, output_attentions,
                        output_hidden_states)
        logits = self.classifier(self.dropout(out.pooler_output))  # (B, num_labels)
        loss = None
        if labels is not None:
            problem = self.config.problem_type or (
                "regression" if self.num_labels == 1
                else "single_label_classification" if not labels.is_floating_point()
                else "multi_label_classification")
            if problem == "regression":
                loss = F.mse_loss(logits.squeeze(-1), labels.squeeze(-1).to(logits.dtype)) if self.num_labels == 1 \
                    else F.mse_loss(logits, labels.to(logits.dtype))
            elif problem == "single_label_classification":
                loss = F.cross_entropy(logits.view(-1, self.num_labels), labels.view(-1))
            else:
                loss = F.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))
        return SequenceClassifierOutput(loss, logits, out.hidden_states, out.attentions)


class BertForTokenClassification(PreTrainedMixin, nn.Module):
    """A label per piece: last_hidden_state -> dropout -> linear (B, T, num_labels); no pooler, as transformers."""

    _new_head_keys = ("classifier.",)

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.num_labels = config.num_labels
        self.bert = BertModel(config, add_pooling_layer=False)
        p = config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
        self.dropout = nn.Dropout(p)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None, labels=None,
                output_attentions: bool = False, output_hidden_states: bool = False) -> TokenClassifierOutput:
        """labels: (B, T) class ids, -100 where no label belongs (special tokens, padding, later pieces)."""
        out = self.bert(input_ids, attention_mask, token_type_ids, position_ids, output_attentions,
                        output_hidden_states)
        logits = self.classifier(self.dropout(out.last_hidden_state))  # (B, T, num_labels)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.view(-1, self.num_labels), labels.view(-1), ignore_index=IGNORE_INDEX)
        return TokenClassifierOutput(loss, logits, out.hidden_states, out.attentions)


def align_labels(word_ids: Sequence[int | None], word_labels: Sequence[int],
                 label_all_pieces: bool = False) -> list[int]:
    """Word labels -> piece labels: the first piece of a word gets its label, the other pieces -100 (or the label too
    with label_all_pieces), positions of no word (None: [CLS], [SEP], padding) -100."""
    labels, previous = [], None
    for word in word_ids:
        if word is None:
            labels.append(IGNORE_INDEX)
        elif word != previous or label_all_pieces:
            labels.append(word_labels[word])
        else:
            labels.append(IGNORE_INDEX)
        previous = word
    return labels


# Same pattern (and so the same matches) as BertTokenizer.tokenize uses to keep "[MASK]" etc. whole.
_SPECIALS = re.compile("|".join(re.escape(t) for t in SPECIAL_TOKENS))


def _words(tokenizer: BertTokenizer, text: str, offset: int) -> Iterator[tuple[str, list[int]]]:
    """The words of `text` as `tokenizer.basic.tokenize` gives them, each with the original index of each of its
    characters (`offset` = where `text` starts). A character dropped by normalisation (a control character, a
    combining accent) points nowhere, so it lies in no piece's span, as in Hugging Face."""
    chars: list[str] = []
    origins: list[int] = []
    for i, ch in enumerate(text, offset):
        for c in tokenizer.basic.normalize(ch):
            if c.isspace() or _is_punctuation(c):  # the split rules of BasicTokenizer.tokenize
                if chars:
                    yield "".join(chars), origins
                    chars, origins = [], []
                if not c.isspace():
                    yield c, [i]  # a punctuation character is a word of its own
            else:
                chars.append(c)
                origins.append(i)
    if chars:
        yield "".join(chars), origins


def _pieces(wordpiece: WordPieceTokenizer, word: str, origins: list[int]) -> Iterator[tuple[str, tuple[int, int]]]:
    """WordPiece pieces of one word with their spans: each piece covers the next len(piece) characters of the word
    ("##" not counted); an unknown word is one [UNK] covering the whole word."""
    start = 0
    for piece in wordpiece.tokenize_word(word):
        if piece == wordpiece.unk_token:
            yield piece, (origins[0], origins[-1] + 1)
            return
        end = start + len(piece) - (2 if start else 0)  # pieces after the first carry the "##" prefix
        yield piece, (origins[start], origins[end - 1] + 1)
        start = end


def encode_with_offsets(tokenizer: BertTokenizer, text: str) -> tuple[list[str], list[tuple[int, int]]]:
    """The pieces of `text` (as `tokenizer.tokenize`) and each piece's (start, end) character span in `text`, as
    `BertTokenizerFast(text, add_special_tokens=False, return_offsets_mapping=True)`."""
    tokens: list[str] = []
    offsets: list[tuple[int, int]] = []
    start = 0
    for match in [*_SPECIALS.finditer(text), None]:  # the text before each special token, then the token itself
        end = match.start() if match else len(text)
        for word, origins in _words(tokenizer, text[start:end], start):
            for piece, span in _pieces(tokenizer.wordpiece, word, origins):
                tokens.append(piece)
                offsets.append(span)
        if match:
            tokens.append(match.group())
            offsets.append(match.span())
            start = match.end()
    return tokens, offsets


def encode_words(tokenizer: BertTokenizer, words: Sequence[str]) -> tuple[list[str], list[int]]:
    """Pieces of pre-split words (one per token of a NER data set) and each piece's word index, as
    `BertTokenizerFast(words, is_split_into_words=True)` and its `word_ids()`. A word that normalises to nothing (a
    control character) gives no piece."""
    tokens: list[str] = []
    word_ids: list[int] = []
    for i, word in enumerate(words):
        pieces = tokenizer.tokenize(word)
        tokens.extend(pieces)
        word_ids.extend([i] * len(pieces))
    return tokens, word_ids


class BertForQuestionAnswering(PreTrainedMixin, nn.Module):
    """Extractive QA: a start and an end score per position (B, T) each; no pooler, keys as transformers."""

    _new_head_keys = ("qa_outputs.",)

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.bert = BertModel(config, add_pooling_layer=False)
        self.qa_outputs = nn.Linear(config.hidden_size, 2)
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None, start_positions=None,
                end_positions=None, output_attentions: bool = False,
                output_hidden_states: bool = False) -> QuestionAnsweringModelOutput:
        """start_positions, end_positions: (B,) positions of the answer's first and last piece."""
        out = self.bert(input_ids, attention_mask, token_type_ids, position_ids, output_attentions,
                        output_hidden_states)
        start_logits, end_logits = self.qa_outputs(out.last_hidden_state).unbind(-1)  # (B, T) each
        loss = None
        if start_positions is not None and end_positions is not None:
            ignored = start_logits.shape[1]  # positions outside the input are clamped here and ignored
            start = start_positions.view(-1).clamp(0, ignored)
            end = end_positions.view(-1).clamp(0, ignored)
            loss = (F.cross_entropy(start_logits, start, ignore_index=ignored)
                    + F.cross_entropy(end_logits, end, ignore_index=ignored)) / 2
        return QuestionAnsweringModelOutput(loss, start_logits.contiguous(), end_logits.contiguous(),
                                            out.hidden_states, out.attentions)


def prepare_qa_features(tokenizer: BertTokenizer, question: str, context: str, max_length: int = 384,
                        stride: int = 128, answer_text: str | None = None,
                        answer_start: int | None = None) -> list[dict]:
    """Windows of `[CLS] question [SEP] context-window [SEP]`, overlapping by `stride` context pieces.

    Each feature: input_ids, token_type_ids, attention_mask (lists), offsets (per position: the (start, end) span
    in `context`, None outside the context), context_mask (1 at context pieces), and with an answer, start_position
    and end_position (0, 0 when this window does not hold the whole answer).
    """
    question_tokens = tokenizer.tokenize(question)
    context_tokens, context_offsets = encode_with_offsets(tokenizer, context)
    room = max_length - len(question_tokens) - 3  # [CLS] question [SEP] ... [SEP]
    if room <= stride:
        raise ValueError(f"the question {question[:50]!r} takes {len(question_tokens)} pieces: with "
                         f"max_length={max_length} only "
                         f"{room} are left for the context, not more than stride={stride}; shorten the question")
    features, begin = [], 0
    while True:
        end = min(begin + room, len(context_tokens))
        tokens = [CLS, *question_tokens, SEP, *context_tokens[begin:end], SEP]
        first = len(question_tokens) + 2  # position of the window's first context piece
        offsets = [None] * first + context_offsets[begin:end] + [None]
        feature = {"input_ids": tokenizer.convert_tokens_to_ids(tokens),
                   "token_type_ids": [0] * first + [1] * (end - begin + 1), "attention_mask": [1] * len(tokens),
                   "offsets": offsets, "context_mask": [int(o is not None) for o in offsets]}
        if answer_text is not None and answer_start is not None:
            answer_end = answer_start + len(answer_text)  # character span of the answer in the context
            inside = [i for i, o in enumerate(offsets) if o is not None and o[0] < answer_end and o[1] > answer_start]
            whole = inside and offsets[inside[0]][0] <= answer_start and offsets[inside[-1]][1] >= answer_end
            feature["start_position"], feature["end_position"] = (inside[0], inside[-1]) if whole else (0, 0)
        features.append(feature)
        if end == len(context_tokens):
            return features
        begin = end - stride


def best_span(start_logits: torch.Tensor, end_logits: torch.Tensor, context_mask: torch.Tensor,
              max_answer_length: int = 30, n_best: int = 20) -> list[tuple[int, int, float]]:
    """The n_best spans (start, end, start_logit + end_logit), best first, with start <= end, both in the context
    and end - start + 1 <= max_answer_length. Inputs are 1-D (T,); every valid pair is scored."""
    T = start_logits.shape[0]
    scores = start_logits[:, None] + end_logits[None, :]  # (T, T): row = start, column = end
    i = torch.arange(T)
    valid = (i[:, None] <= i[None, :]) & (i[None, :] - i[:, None] < max_answer_length)
    inside = context_mask.bool()
    valid &= inside[:, None] & inside[None, :]
    flat = scores.masked_fill(~valid, float("-inf")).flatten()
    k = min(n_best, int(valid.sum()))
    top = flat.topk(k)
    return [(int(p) // T, int(p) % T, float(s)) for s, p in zip(top.values, top.indices, strict=True)]
