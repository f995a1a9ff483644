"""Helpers of the package tests (the tests that need only `minibert`): the student kit ships them with those tests,
so that `make test` in a kit checks the student's own package. No paths of this repository here."""

from __future__ import annotations

import pytest


def hf_config(cfg, **extra):
    """The transformers.BertConfig with the same fields as a minibert BertConfig."""
    import dataclasses

    import transformers

    return transformers.BertConfig(**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}, **extra)


def max_diff(a, b) -> float:
    return (a - b).abs().max().item()


@pytest.fixture(scope="module")
def offline():
    """No network: the Hugging Face hub is switched to offline mode while a module's models load."""
    import huggingface_hub.constants

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # read once at import time
        yield


def padded_pair_batch(vocab_size: int, seed: int, low: int) -> tuple:
    """The (3, 9) pair batch of the model tests: ids drawn from [low, vocab_size) with `seed`, row 0 full, row 1
    padded from position 6, row 2 from 4, segment 1 from position 4. The ids under padding are left as drawn: set
    them (to [PAD]) after any other edit of the ids."""
    import torch

    ids = torch.randint(low, vocab_size, (3, 9), generator=torch.Generator().manual_seed(seed))
    mask = torch.ones(3, 9, dtype=torch.long)
    mask[1, 6:] = 0
    mask[2, 4:] = 0
    segments = torch.zeros(3, 9, dtype=torch.long)
    segments[:, 4:] = 1
    return ids, mask, segments
