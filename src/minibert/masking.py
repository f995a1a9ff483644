# Generated from notebook 04_masking.ipynb by minibert_course.export: edit the notebook, not this file.
"""The MLM sampler: target selection, 80/10/10 corruption, fixed-count / Bernoulli / whole-word modes (chapter 04).

Why a module of its own: what the model learns is decided here. Labels hold the original id at *every* target
(masked, random or unchanged) and -100 elsewhere, the convention of PyTorch's cross-entropy and Hugging Face.
"""

from __future__ import annotations

import torch

__all__ = ["mask_tokens", "corrupt", "num_targets", "bernoulli_targets", "word_ids_from_tokens", "expected_counts"]

IGNORE_INDEX = -100  # cross-entropy skips these labels


def expected_counts(
    num_tokens: int, mlm_probability: float = 0.15, mask_replace_prob: float = 0.8, random_replace_prob: float = 0.1
) -> dict[str, float]:
    """Expected targets and their split into [MASK] / random / unchanged, for `num_tokens` candidate pieces."""
    targets = num_tokens * mlm_probability
    mask, random = targets * mask_replace_prob, targets * random_replace_prob
    return {"targets": targets, "mask": mask, "random": random, "unchanged": targets - mask - random}


def corrupt(
    input_ids: torch.Tensor,
    targets: torch.Tensor,
    vocab_size: int,
    mask_token_id: int,
    mask_replace_prob: float = 0.8,
    random_replace_prob: float = 0.1,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """The corrupted input: at targets, [MASK] / a random id / unchanged with the given probabilities.

    Args:
        input_ids: (B, T) original ids.
        targets: (B, T) bool, the prediction targets.
    """
    u = torch.rand(input_ids.shape, generator=generator)  # (B, T)
    to_mask = targets & (u < mask_replace_prob)
    to_random = targets & (u >= mask_replace_prob) & (u < mask_replace_prob + random_replace_prob)
    random_ids = torch.randint(vocab_size, input_ids.shape, generator=generator, dtype=input_ids.dtype)
    inputs = input_ids.clone()
    inputs[to_mask] = mask_token_id
    inputs[to_random] = random_ids[to_random]
    return inputs


def num_targets(num_candidates: int, mlm_probability: float = 0.15, max_predictions: int | None = None) -> int:
    """The original BERT data script's count: min(max_predictions, max(1, round(n * p))); 0 when n == 0."""
    if num_candidates == 0:
        return 0
    k = max(1, round(num_candidates * mlm_probability))
    return min(k, max_predictions) if max_predictions is not None else k


def bernoulli_targets(candidates: torch.Tensor, mlm_probability: float, generator=None) -> torch.Tensor:
    """(B, T) bool: each candidate position is a target independently with probability mlm_probability."""
    return candidates & (torch.rand(candidates.shape, generator=generator) < mlm_probability)


def _fixed_count_targets(candidates, mlm_probability, max_predictions, word_ids, generator):
    """num_targets(n) targets per row, chosen uniformly among candidates; with word_ids, whole words and at most
    num_targets(n) of them (a word that would overshoot is skipped)."""
    targets = torch.zeros_like(candidates)
    for row in range(candidates.shape[0]):
        positions = candidates[row].nonzero().flatten().tolist()
        k = num_targets(len(positions), mlm_probability, max_predictions)
        if word_ids is None:
            groups = [[p] for p in positions]
        else:  # whole words: all pieces of a word are targets together
            by_word: dict[int, list[int]] = {}
            for p in positions:
                by_word.setdefault(int(word_ids[row, p]), []).append(p)
            groups = list(by_word.values())
        order = torch.randperm(len(groups), generator=generator).tolist()
        chosen = 0
        for i in order:  # add whole groups while they fit, skipping a word that would overshoot (as the script does)
            if chosen + len(groups[i]) > k:
                continue
            targets[row, groups[i]] = True
            chosen += len(groups[i])
            if chosen == k:
                break
    return targets


def mask_tokens(
    input_ids: torch.Tensor,
    special_tokens_mask: torch.Tensor | None = None,
    *,
    vocab_size: int,
    mask_token_id: int,
    mlm_probability: float = 0.15,
    mask_replace_prob: float = 0.8,
    random_replace_prob: float = 0.1,
    generator: torch.Generator | None = None,
    attention_mask: torch.Tensor | None = None,
    mode: str = "bernoulli",
    max_predictions: int | None = None,
    word_ids: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Choose MLM targets and corrupt them.

    Args:
        input_ids: (B, T) original ids.
        special_tokens_mask: (B, T), 1 at [CLS]/[SEP]/[PAD] and other pieces that must never be targets.
        vocab_size, mask_token_id: for the random and the [MASK] replacements.
        mlm_probability: share of candidate positions that become targets (BERT: 0.15).
        mask_replace_prob, random_replace_prob: split of the targets (BERT: 0.8 and 0.1; the rest unchanged).
        generator: a seeded torch.Generator makes the result repeatable.
        attention_mask: (B, T), 0 at padding; padding is never a target.
        mode: "bernoulli" (each candidate independently, as Hugging Face) or "fixed" (an exact count per row, at most
            that count with whole words, as
            the original BERT data script).
        max_predictions: cap on targets per row in "fixed" mode (the script's max_predictions_per_seq).
        word_ids: (B, T) word index of each piece (see word_ids_from_tokens): whole-word masking.

    Returns:
        inputs: (B, T) corrupted ids; labels: (B, T) original id at every target, -100 elsewhere.
    """
    if not 0.0 <= mlm_probability <= 1.0:
        raise ValueError(f"mlm_probability must be in [0, 1], got {mlm_probability}")
    if mask_replace_prob < 0 or random_replace_prob < 0 or mask_replace_prob + random_replace_prob > 1.0:
        raise ValueError(
            f"mask_replace_prob + random_replace_prob must be within [0, 1], got {mask_replace_prob} + "
            f"{random_replace_prob}"
        )
    if mode not in ("bernoulli", "fixed"):
        raise ValueError(f"mode must be 'bernoulli' or 'fixed', got {mode!r}")
    candidates = torch.ones_like(input_ids, dtype=torch.bool)
    if special_tokens_mask is not None:
        candidates &= ~special_tokens_mask.bool()
    if attention_mask is not None:
        candidates &= attention_mask.bool()
    if mode == "fixed":
        targets = _fixed_count_targets(candidates, mlm_probability, max_predictions, word_ids, generator)
    elif word_ids is not None:  # Bernoulli over words: a word's pieces share one draw (per row)
        draws = torch.rand(input_ids.shape[0], int(word_ids.max()) + 2, generator=generator) < mlm_probability
        targets = candidates & draws.gather(1, word_ids.long().clamp(min=-1) + 1)  # (B, T)
    else:
        targets = bernoulli_targets(candidates, mlm_probability, generator)
    labels = torch.where(targets, input_ids, torch.full_like(input_ids, IGNORE_INDEX))
    inputs = corrupt(input_ids, targets, vocab_size, mask_token_id, mask_replace_prob, random_replace_prob, generator)
    return inputs, labels


def word_ids_from_tokens(
    tokens: list[str], special_tokens: tuple[str, ...] = ("[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]")
) -> list[int]:
    """Word index of every piece: `##` pieces continue the previous word (a leading one starts word 0); special
    tokens get -1, except [UNK], which stands for a word."""
    word_ids, current = [], -1
    for token in tokens:
        if token in special_tokens and token != "[UNK]":
            word_ids.append(-1)
            continue
        if not token.startswith("##") or current < 0:
            current += 1
        word_ids.append(current)
    return word_ids
