"""`minibert.embeddings` against Hugging Face `transformers`' BertEmbeddings: outputs in eval and training mode
(where the order of LayerNorm and dropout shows), given segment and position ids, and the parameter count."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from helpers import hf_config, max_diff
from transformers.models.bert.modeling_bert import BertEmbeddings as HFBertEmbeddings

from minibert.config import BertConfig
from minibert.embeddings import BertEmbeddings, embedding_parameter_count

B, T = 3, 7
CONFIG = BertConfig(vocab_size=99, hidden_size=24, num_attention_heads=3, intermediate_size=37, num_hidden_layers=2,
                    max_position_embeddings=11, type_vocab_size=3, hidden_dropout_prob=0.25)


@pytest.fixture
def pair() -> tuple[BertEmbeddings, HFBertEmbeddings]:
    """The same random weights (LayerNorm's weight and bias included) in minibert's and transformers' module."""
    torch.manual_seed(0)
    ours = BertEmbeddings(CONFIG)
    with torch.no_grad():
        for p in ours.parameters():
            p.normal_()
    theirs = HFBertEmbeddings(hf_config(CONFIG))
    missing, unexpected = theirs.load_state_dict(ours.state_dict(), strict=False)
    assert not unexpected and all(k in ("position_ids", "token_type_ids") for k in missing), (missing, unexpected)
    return ours, theirs


@pytest.fixture
def ids() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return torch.randint(0, 99, (B, T), generator=g), torch.randint(0, 3, (B, T), generator=g)


def test_parameter_names_and_shapes_are_transformers(pair):
    ours, theirs = pair
    assert {k: v.shape for k, v in ours.named_parameters()} == {k: v.shape for k, v in theirs.named_parameters()}


def test_eval_output_equals_transformers(pair, ids):
    ours, theirs = (m.eval() for m in pair)
    input_ids, segments = ids
    assert max_diff(ours(input_ids, segments), theirs(input_ids, segments)) < 1e-5
    assert max_diff(ours(input_ids), theirs(input_ids)) < 1e-5  # missing segments: all zeros


def test_given_position_ids_are_used(pair, ids):
    ours, theirs = (m.eval() for m in pair)
    input_ids, segments = ids
    for positions in (torch.arange(2, 2 + T).unsqueeze(0), torch.randint(0, 11, (B, T))):
        out = ours(input_ids, segments, positions)
        assert max_diff(out, theirs(input_ids, segments, positions)) < 1e-5
        assert max_diff(out, ours(input_ids, segments)) > 1e-3


def test_training_mode_is_dropout_of_layernorm(pair, ids):
    """The same seed draws the same dropout mask: only dropout(LayerNorm(x)) gives transformers' output."""
    ours, theirs = (m.train() for m in pair)
    input_ids, segments = ids
    torch.manual_seed(7)
    got = ours(input_ids, segments)
    torch.manual_seed(7)
    want = theirs(input_ids, segments)
    assert max_diff(got, want) < 1e-5
    assert 0.1 < (got == 0).float().mean().item() < 0.4  # p = 0.25 of the outputs dropped
    torch.manual_seed(7)
    wrong_order = ours.LayerNorm(F.dropout(ours.word_embeddings(input_ids) + ours.token_type_embeddings(segments)
                                           + ours.position_embeddings(torch.arange(T)), 0.25, training=True))
    assert max_diff(got, wrong_order) > 0.1


def test_eval_mode_is_deterministic(pair, ids):
    ours = pair[0].eval()
    assert torch.equal(ours(*ids), ours(*ids))


def test_more_positions_than_the_table_raises(pair):
    with pytest.raises(ValueError, match="12 positions"):
        pair[0](torch.zeros(1, 12, dtype=torch.long))


@pytest.mark.parametrize("config", [BertConfig.base(), BertConfig.large(), CONFIG,
                                    BertConfig.tiny(max_position_embeddings=64, type_vocab_size=1)])
def test_parameter_count_equals_transformers(config):
    with torch.device("meta"):
        want = sum(p.numel() for p in HFBertEmbeddings(hf_config(config)).parameters())
    got = embedding_parameter_count(config)
    assert type(got) is int and got == want


def test_parameter_count_of_bert_base():
    assert embedding_parameter_count(BertConfig.base()) == 23_837_184
