"""Tests of `minibert.masking`, the MLM sampler of chapter 04.

Expected values come from the course specification and BERT's recipe, never from running the sampler:
15% of the candidate pieces are targets, split 80% [MASK] / 10% random id / 10% unchanged; labels hold the
original id at every target and -100 elsewhere; [CLS], [SEP] and padding are never targets; the fixed-count
mode picks min(max_predictions, max(1, round(n * p))) targets among the n candidates of a row (as Google's
create_pretraining_data.py), the Bernoulli mode picks each candidate independently (as Hugging Face's
DataCollatorForLanguageModeling); whole-word masking targets all pieces of a word together.

Statistical checks draw many rows and accept a count within SDS standard deviations of its binomial
expectation, so that a correct sampler fails one of them with a probability far below 1e-5.
"""

from __future__ import annotations

import math

import pytest
import torch

from minibert.masking import (
    IGNORE_INDEX,
    bernoulli_targets,
    corrupt,
    expected_counts,
    mask_tokens,
    num_targets,
    word_ids_from_tokens,
)
from minibert.tokenization import BertTokenizer, pretrained_dir

SDS = 5.0  # tolerance of the statistical checks, in binomial standard deviations
PAD_ID, CLS_ID, SEP_ID, MASK_ID = 0, 101, 102, 103  # bert-base-uncased
VOCAB = 30522
FIRST_WORD_ID = 1000  # synthetic pieces are drawn from [1000, VOCAB): never a special id
# BERT's split of the targets
P, MASK_P, RANDOM_P = 0.15, 0.8, 0.1
UNCHANGED_P = 1.0 - MASK_P - RANDOM_P


# ---------------------------------------------------------------------------------------------------- helpers


def assert_binomial(count: int, trials: int, p: float, what: str) -> None:
    """`count` successes out of `trials` is within SDS standard deviations of Binomial(trials, p)."""
    mean = trials * p
    sd = math.sqrt(trials * p * (1.0 - p))
    assert abs(count - mean) <= SDS * sd + 1e-9, (
        f"{what}: {count} of {trials} ({count / max(trials, 1):.4f}), expected {p:.4f} "
        f"(mean {mean:.1f} +- {SDS:g} sd = {SDS * sd:.1f})"
    )


def make_batch(rows: int, lengths, pad_to: int | None = None, seed: int = 0, mark_padding: bool = True):
    """Synthetic `[CLS] pieces [SEP] [PAD]...` rows, with `lengths[i]` pieces in row i (cycled).

    Returns input_ids, special_tokens_mask (1 at [CLS]/[SEP], and at padding if mark_padding), attention_mask.
    """
    lengths = [lengths[i % len(lengths)] for i in range(rows)]
    width = pad_to if pad_to is not None else max(lengths) + 2
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(FIRST_WORD_ID, VOCAB, (rows, width), generator=g)
    special = torch.zeros(rows, width, dtype=torch.long)
    attention = torch.zeros(rows, width, dtype=torch.long)
    for r, n in enumerate(lengths):
        ids[r, 0], ids[r, n + 1] = CLS_ID, SEP_ID
        ids[r, n + 2 :] = PAD_ID
        special[r, 0] = special[r, n + 1] = 1
        if mark_padding:
            special[r, n + 2 :] = 1
        attention[r, : n + 2] = 1
    return ids, special, attention


def candidates_of(special: torch.Tensor, attention: torch.Tensor) -> torch.Tensor:
    return ~special.bool() & attention.bool()


def split(original: torch.Tensor, inputs: torch.Tensor, labels: torch.Tensor):
    """Targets and their observed split: [MASK], changed to another id, unchanged."""
    targets = labels != IGNORE_INDEX
    masked = targets & (inputs == MASK_ID)
    unchanged = targets & (inputs == original)
    replaced = targets & ~masked & ~unchanged
    return targets, masked, replaced, unchanged


def observed_rates(vocab_size: int, mask_p: float = MASK_P, random_p: float = RANDOM_P):
    """Probabilities, for one target, of observing [MASK] / another id / the original id.

    A random replacement is uniform on [0, vocab_size): it hits the [MASK] id or the original id with probability
    1 / vocab_size each (the original is never the [MASK] id here).
    """
    hit = random_p / vocab_size
    return mask_p + hit, random_p - 2 * hit, (1.0 - mask_p - random_p) + hit


def run(ids, special=None, attention=None, seed=0, **kwargs):
    kwargs.setdefault("vocab_size", VOCAB)
    kwargs.setdefault("mask_token_id", MASK_ID)
    return mask_tokens(ids, special, generator=torch.Generator().manual_seed(seed), attention_mask=attention, **kwargs)


def assert_label_convention(original, inputs, labels):
    """Labels: the original id at every target, -100 elsewhere; inputs equal the originals at non-targets."""
    targets = labels != IGNORE_INDEX
    assert torch.equal(labels[targets], original[targets]), "a label differs from the original id at its target"
    assert bool((labels[~targets] == IGNORE_INDEX).all())
    assert torch.equal(inputs[~targets], original[~targets]), "an input changed at a position that is no target"


# ---------------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def bert() -> BertTokenizer:
    return BertTokenizer.from_pretrained()


SENTENCES = [
    ("the unhappiness of electroencephalography technicians is legendary", None),
    ("electroencephalography measures electrical activity", "unhappiness breeds unhappiness"),
    ("a cat sat on the mat", "electroencephalography"),
]


@pytest.fixture(scope="module")
def real_batch(bert):
    """Real bert-base-uncased pieces of SENTENCES, padded: ids, special (no padding marked), attention,
    word_ids (padding -1), and the per-row list of words (lists of positions)."""
    encodings = [bert(a, b) for a, b in SENTENCES]
    width = max(len(e.tokens) for e in encodings) + 3  # some padding in every row
    ids, special, attention, words = [], [], [], []
    word_ids = []
    for e in encodings:
        pad = width - len(e.tokens)
        ids.append(e.input_ids + [PAD_ID] * pad)
        special.append([int(t in ("[CLS]", "[SEP]")) for t in e.tokens] + [0] * pad)
        attention.append([1] * len(e.tokens) + [0] * pad)
        w = word_ids_from_tokens(e.tokens + ["[PAD]"] * pad)
        word_ids.append(w)
        row_words: dict[int, list[int]] = {}
        for pos, wid in enumerate(w):
            if wid >= 0:
                row_words.setdefault(wid, []).append(pos)
        words.append(list(row_words.values()))
    return (
        torch.tensor(ids),
        torch.tensor(special),
        torch.tensor(attention),
        torch.tensor(word_ids),
        words,
        encodings,
    )


def repeat_rows(t: torch.Tensor, times: int) -> torch.Tensor:
    return t.repeat(times, 1)


# ---------------------------------------------------------------------------------------------------- counts


def test_ignore_index_is_pytorch_and_hugging_face_convention():
    assert IGNORE_INDEX == -100
    assert torch.nn.CrossEntropyLoss().ignore_index == IGNORE_INDEX


def test_expected_counts_for_100_pieces():
    counts = expected_counts(100, 0.15, 0.8, 0.1)
    assert counts["targets"] == pytest.approx(15.0)
    assert counts["mask"] == pytest.approx(12.0)
    assert counts["random"] == pytest.approx(1.5)
    assert counts["unchanged"] == pytest.approx(1.5)
    other = expected_counts(200, 0.2, 0.5, 0.25)
    assert (other["targets"], other["mask"], other["random"], other["unchanged"]) == pytest.approx((40, 20, 10, 10))


@pytest.mark.parametrize(
    ("n", "p", "cap", "expected"),
    [
        (100, 0.15, None, 15),
        (3, 0.15, None, 1),  # round(0.45) = 0 -> at least one
        (1, 0.15, None, 1),
        (0, 0.15, None, 0),
        (0, 0.15, 20, 0),
        (20, 0.15, None, 3),
        (33, 0.15, None, 5),
        (200, 0.15, 20, 20),  # 30 capped by max_predictions
        (512, 0.15, 76, 76),
        (100, 0.15, 20, 15),  # the cap does not bind
    ],
)
def test_num_targets_is_bert_script_count(n, p, cap, expected):
    assert num_targets(n, p, cap) == expected


def test_fixed_mode_100_pieces_gives_exactly_15_targets():
    ids, special, attention = make_batch(50, [100])
    inputs, labels = run(ids, special, attention, mode="fixed")
    per_row = (labels != IGNORE_INDEX).sum(dim=1)
    assert per_row.tolist() == [15] * 50
    assert_label_convention(ids, inputs, labels)


def test_fixed_mode_exact_count_per_row_for_different_candidate_counts():
    lengths = [0, 1, 2, 3, 7, 20, 33, 100]
    expected = {0: 0, 1: 1, 2: 1, 3: 1, 7: 1, 20: 3, 33: 5, 100: 15}
    # special_tokens_mask does not mark padding: only attention_mask keeps padding out
    ids, special, attention = make_batch(len(lengths) * 5, lengths, mark_padding=False)
    for seed in range(3):
        inputs, labels = run(ids, special, attention, seed=seed, mode="fixed")
        targets = labels != IGNORE_INDEX
        got = targets.sum(dim=1).tolist()
        want = [expected[lengths[r % len(lengths)]] for r in range(ids.shape[0])]
        assert got == want, f"targets per row {got}, expected {want} (candidates {lengths})"
        assert not bool((targets & ~candidates_of(special, attention)).any()), "a special or padding target"


def test_fixed_mode_n_counts_only_candidates():
    # 10 candidates in a row of 130 positions (padding): round(10 * 0.3) = 3, not round(130 * 0.3) = 39
    ids, special, attention = make_batch(4, [10], pad_to=130, mark_padding=False)
    _, labels = run(ids, special, attention, mode="fixed", mlm_probability=0.3)
    assert (labels != IGNORE_INDEX).sum(dim=1).tolist() == [3] * 4


def test_fixed_mode_max_predictions_cap():
    ids, special, attention = make_batch(6, [200, 100, 50])
    _, labels = run(ids, special, attention, mode="fixed", max_predictions=12)
    # min(12, 30) = 12, min(12, 15) = 12, min(12, round(7.5) = 8) = 8
    assert (labels != IGNORE_INDEX).sum(dim=1).tolist() == [12, 12, 8, 12, 12, 8]


def test_fixed_mode_rows_without_candidates_get_no_targets():
    ids, special, attention = make_batch(3, [0])
    inputs, labels = run(ids, special, attention, mode="fixed")
    assert bool((labels == IGNORE_INDEX).all())
    assert torch.equal(inputs, ids)
    # every position special: no candidate either
    ids, _, _ = make_batch(3, [4])
    _, labels = run(ids, torch.ones_like(ids), mode="fixed")
    assert bool((labels == IGNORE_INDEX).all())


def test_fixed_mode_picks_candidates_uniformly():
    rows, n = 2000, 20
    ids, special, attention = make_batch(rows, [n])
    _, labels = run(ids, special, attention, mode="fixed")  # 3 targets among 20 per row
    per_position = (labels != IGNORE_INDEX)[:, 1 : n + 1].sum(dim=0)
    for pos, count in enumerate(per_position.tolist()):
        assert_binomial(count, rows, 3 / n, f"fixed mode: position {pos} chosen")


# ---------------------------------------------------------------------------------------------------- statistics


@pytest.fixture(scope="module")
def big_batch():
    """2000 rows of [CLS] + 100 pieces + [SEP] + 4 padding positions."""
    return make_batch(2000, [100], pad_to=106)


def test_bernoulli_statistics_15_percent_split_80_10_10(big_batch):
    ids, special, attention = big_batch
    inputs, labels = run(ids, special, attention, seed=1)
    assert_label_convention(ids, inputs, labels)
    targets, masked, replaced, unchanged = split(ids, inputs, labels)
    n_candidates = int(candidates_of(special, attention).sum())
    assert n_candidates == 200_000
    assert not bool((targets & ~candidates_of(special, attention)).any())
    n_targets = int(targets.sum())
    assert_binomial(n_targets, n_candidates, P, "target rate")
    mask_rate, random_rate, unchanged_rate = observed_rates(VOCAB)
    assert_binomial(int(masked.sum()), n_targets, mask_rate, "[MASK] share of targets")
    assert_binomial(int(replaced.sum()), n_targets, random_rate, "random share of targets")
    assert_binomial(int(unchanged.sum()), n_targets, unchanged_rate, "unchanged share of targets")
    # the same as shares of all input pieces: 12% / 1.5% / 1.5%
    assert_binomial(int(masked.sum()), n_candidates, P * mask_rate, "[MASK] share of inputs (12%)")
    assert_binomial(int(replaced.sum()), n_candidates, P * random_rate, "random share of inputs (1.5%)")
    assert_binomial(int(unchanged.sum()), n_candidates, P * unchanged_rate, "unchanged share of inputs (1.5%)")


def test_fixed_statistics_split_80_10_10(big_batch):
    ids, special, attention = big_batch
    inputs, labels = run(ids, special, attention, seed=2, mode="fixed")
    assert_label_convention(ids, inputs, labels)
    targets, masked, replaced, unchanged = split(ids, inputs, labels)
    assert targets.sum(dim=1).tolist() == [15] * ids.shape[0]
    n_targets = int(targets.sum())
    mask_rate, random_rate, unchanged_rate = observed_rates(VOCAB)
    assert_binomial(int(masked.sum()), n_targets, mask_rate, "[MASK] share of targets")
    assert_binomial(int(replaced.sum()), n_targets, random_rate, "random share of targets")
    assert_binomial(int(unchanged.sum()), n_targets, unchanged_rate, "unchanged share of targets")


def test_other_rates_are_honoured(big_batch):
    ids, special, attention = big_batch
    inputs, labels = run(
        ids, special, attention, seed=3, mlm_probability=0.4, mask_replace_prob=0.5, random_replace_prob=0.3
    )
    targets, masked, replaced, unchanged = split(ids, inputs, labels)
    n_targets = int(targets.sum())
    assert_binomial(n_targets, 200_000, 0.4, "target rate")
    mask_rate, random_rate, unchanged_rate = observed_rates(VOCAB, 0.5, 0.3)
    assert_binomial(int(masked.sum()), n_targets, mask_rate, "[MASK] share")
    assert_binomial(int(replaced.sum()), n_targets, random_rate, "random share")
    assert_binomial(int(unchanged.sum()), n_targets, unchanged_rate, "unchanged share")


def test_small_vocab_random_ids_account_for_coincidences():
    # vocab of 8: a random replacement equals the original id (or [MASK]) 1 time in 8
    rows, n, vocab, mask_id = 4000, 50, 8, 7
    g = torch.Generator().manual_seed(5)
    ids = torch.randint(0, 7, (rows, n), generator=g)  # never the [MASK] id
    inputs, labels = mask_tokens(
        ids,
        vocab_size=vocab,
        mask_token_id=mask_id,
        mask_replace_prob=0.0,
        random_replace_prob=1.0,
        generator=torch.Generator().manual_seed(6),
    )
    targets = labels != IGNORE_INDEX
    n_targets = int(targets.sum())
    assert_binomial(n_targets, rows * n, P, "target rate")
    assert bool(((inputs[targets] >= 0) & (inputs[targets] < vocab)).all())
    same = int((inputs[targets] == ids[targets]).sum())
    assert_binomial(same, n_targets, 1 / vocab, "random id equal to the original")
    for value in range(vocab):
        assert_binomial(int((inputs[targets] == value).sum()), n_targets, 1 / vocab, f"random id {value}")


def test_random_ids_are_uniform_in_vocab_range(big_batch):
    ids, special, attention = big_batch
    vocab = 50  # below FIRST_WORD_ID: a replacement never equals the original
    inputs, labels = run(
        ids, special, attention, seed=4, vocab_size=vocab, mask_replace_prob=0.0, random_replace_prob=1.0
    )
    targets = labels != IGNORE_INDEX
    values = inputs[targets]
    assert bool(((values >= 0) & (values < vocab)).all()), "a random id outside [0, vocab_size)"
    counts = torch.bincount(values, minlength=vocab)
    for value, count in enumerate(counts.tolist()):
        assert_binomial(count, values.numel(), 1 / vocab, f"random id {value}")


def test_mask_only_scoring_drops_about_a_fifth_of_targets(big_batch):
    """Scoring only the positions that show [MASK] is a smaller target set than the labels: the random and
    unchanged targets (about 20%) would be dropped, and those are what keep the model honest on real tokens."""
    ids, special, attention = big_batch
    inputs, labels = run(ids, special, attention, seed=7)
    label_targets = labels != IGNORE_INDEX
    mask_only = inputs == MASK_ID
    assert bool((mask_only <= label_targets).all()), "a [MASK] position without a label"
    dropped = int((label_targets & ~mask_only).sum())
    n_targets = int(label_targets.sum())
    mask_rate, _, _ = observed_rates(VOCAB)
    assert_binomial(dropped, n_targets, 1.0 - mask_rate, "targets that [MASK]-only scoring drops")
    assert int(mask_only.sum()) < n_targets


# ---------------------------------------------------------------------------------------------------- labels


def test_labels_at_every_target_even_when_nothing_is_corrupted(big_batch):
    ids, special, attention = big_batch
    inputs, labels = run(ids, special, attention, seed=8, mask_replace_prob=0.0, random_replace_prob=0.0)
    assert torch.equal(inputs, ids), "with mask and random rates 0 every target is left unchanged"
    targets = labels != IGNORE_INDEX
    assert_binomial(int(targets.sum()), 200_000, P, "unchanged targets still labelled")
    assert torch.equal(labels[targets], ids[targets])


def test_all_targets_masked_when_mask_rate_is_one(big_batch):
    ids, special, attention = big_batch
    inputs, labels = run(ids, special, attention, seed=9, mask_replace_prob=1.0, random_replace_prob=0.0)
    targets = labels != IGNORE_INDEX
    assert bool((inputs[targets] == MASK_ID).all())
    assert torch.equal(inputs[~targets], ids[~targets])
    assert torch.equal(labels[targets], ids[targets])


def test_labels_at_random_and_unchanged_targets_are_originals(big_batch):
    ids, special, attention = big_batch
    for mode in ("bernoulli", "fixed"):
        inputs, labels = run(ids, special, attention, seed=10, mode=mode)
        targets, masked, replaced, unchanged = split(ids, inputs, labels)
        assert int(replaced.sum()) > 0 and int(unchanged.sum()) > 0
        assert torch.equal(labels[replaced], ids[replaced]), f"{mode}: label at a random target"
        assert torch.equal(labels[unchanged], ids[unchanged]), f"{mode}: label at an unchanged target"
        assert torch.equal(labels[masked], ids[masked]), f"{mode}: label at a [MASK] target"
        assert bool((labels[~targets] == IGNORE_INDEX).all())
        assert torch.equal(inputs[~targets], ids[~targets])


def test_probability_one_targets_exactly_the_candidates():
    ids, special, attention = make_batch(40, [0, 5, 17, 30], mark_padding=False)
    _, labels = run(ids, special, attention, mlm_probability=1.0)
    assert torch.equal(labels != IGNORE_INDEX, candidates_of(special, attention))
    _, labels = run(ids, special, attention, mlm_probability=0.0)
    assert bool((labels == IGNORE_INDEX).all())


# ---------------------------------------------------------------------------------------------------- specials


@pytest.mark.parametrize("mode", ["bernoulli", "fixed"])
@pytest.mark.parametrize("mark_padding", [True, False])
def test_specials_and_padding_never_targets(mode, mark_padding):
    ids, special, attention = make_batch(600, [0, 1, 3, 12, 40], pad_to=50, mark_padding=mark_padding)
    not_candidates = ~candidates_of(special, attention)
    for seed in range(3):
        inputs, labels = run(ids, special, attention, seed=seed, mode=mode, mlm_probability=0.5)
        targets = labels != IGNORE_INDEX
        assert not bool((targets & not_candidates).any()), "[CLS], [SEP] or padding became a target"
        assert torch.equal(inputs[not_candidates], ids[not_candidates]), "[CLS], [SEP] or padding was corrupted"
        assert int(targets.sum()) > 0


def test_padding_excluded_by_attention_mask_alone():
    """Padding that the special-tokens mask does not mark is kept out by the attention mask; without the
    attention mask it is a candidate like any other piece."""
    ids, special, attention = make_batch(20, [4], pad_to=30, mark_padding=False)
    _, labels = run(ids, special, attention, mlm_probability=1.0, mode="fixed")
    assert int((labels[:, 6:] != IGNORE_INDEX).sum()) == 0
    assert (labels != IGNORE_INDEX).sum(dim=1).tolist() == [4] * 20
    _, labels = run(ids, special, None, mlm_probability=1.0)
    assert bool((labels[:, 6:] != IGNORE_INDEX).all()), "without attention_mask unmarked padding is a candidate"


# ---------------------------------------------------------------------------------------------------- whole words


def test_word_ids_from_real_tokens(bert):
    tokens = ["[CLS]", *bert.tokenize("unhappiness electroencephalography"), "[SEP]", "[PAD]"]
    # un ##ha ##pp ##iness / electro ##ence ##pha ##log ##raphy in bert-base-uncased
    pieces_per_word = [len(bert.tokenize("unhappiness")), len(bert.tokenize("electroencephalography"))]
    assert min(pieces_per_word) > 1
    expected = [-1] + [0] * pieces_per_word[0] + [1] * pieces_per_word[1] + [-1, -1]
    assert word_ids_from_tokens(tokens) == expected


def assert_whole_words(targets: torch.Tensor, words) -> int:
    """Every word fully targeted or not at all; returns how many multi-piece words were targeted."""
    multi = 0
    for r in range(targets.shape[0]):
        row = targets[r].tolist()
        for positions in words[r % len(words)]:
            flags = {row[p] for p in positions}
            assert len(flags) == 1, f"row {r}: word at positions {positions} partly targeted: {row}"
            multi += int(row[positions[0]] and len(positions) > 1)
    return multi


@pytest.mark.parametrize("mode", ["bernoulli", "fixed"])
def test_whole_word_masking_on_real_tokens(real_batch, mode):
    ids, special, attention, word_ids, words, _ = real_batch
    times = 200
    ids, special, attention, word_ids = (repeat_rows(t, times) for t in (ids, special, attention, word_ids))
    original = ids.clone()
    inputs, labels = run(ids, special, attention, seed=11, mode=mode, word_ids=word_ids, mlm_probability=0.3)
    targets = labels != IGNORE_INDEX
    multi = assert_whole_words(targets, words)
    assert multi > 0, "no multi-piece word was ever targeted: the whole-word check is vacuous"
    assert not bool((targets & ~candidates_of(special, attention)).any()), "special or padding target (whole words)"
    assert_label_convention(original, inputs, labels)
    if mode == "fixed":
        n = candidates_of(special, attention).sum(dim=1)
        cap = torch.tensor([num_targets(int(k), 0.3) for k in n])
        assert bool((targets.sum(dim=1) <= cap).all()), "fixed whole-word mode exceeded the count"
        assert bool((targets.sum(dim=1) > 0).all())


def test_fixed_whole_words_skip_a_word_that_would_overshoot():
    """15 candidates (one 5-piece word, ten 1-piece words), p = 0.2 -> 3 targets: the long word never fits and is
    skipped, the count is still reached exactly with single-piece words."""
    rows = 300
    ids = torch.randint(FIRST_WORD_ID, VOCAB, (rows, 17), generator=torch.Generator().manual_seed(0))
    special = torch.zeros(rows, 17, dtype=torch.long)
    special[:, 0] = special[:, 16] = 1
    word_ids = torch.tensor([-1] + [0] * 5 + list(range(1, 11)) + [-1]).repeat(rows, 1)
    _, labels = run(ids, special, seed=12, mode="fixed", word_ids=word_ids, mlm_probability=0.2)
    targets = labels != IGNORE_INDEX
    assert targets.sum(dim=1).tolist() == [3] * rows
    assert not bool(targets[:, 1:6].any()), "a 5-piece word was targeted although only 3 targets are allowed"


def test_whole_word_bernoulli_rate_and_independence_between_rows(real_batch):
    """Each word is a target with probability p, independently in every row: identical rows must not share
    their draws."""
    ids, special, attention, word_ids, words, _ = real_batch
    times = 400
    ids, special, attention, word_ids = (repeat_rows(t, times) for t in (ids, special, attention, word_ids))
    _, labels = run(ids, special, attention, seed=13, word_ids=word_ids)
    targets = labels != IGNORE_INDEX
    assert_whole_words(targets, words)
    base_rows = len(words)
    patterns = {tuple(row.tolist()) for row in targets[0::base_rows]}
    # independent draws: P(all 400 copies of a ~10-word sentence alike) is astronomically small
    assert len(patterns) > 20, (
        f"BUG: the {times} identical copies of sentence 0 got only {len(patterns)} distinct whole-word target "
        "patterns: the Bernoulli whole-word draws are indexed by word id alone and shared by all rows of the batch"
    )
    for b in range(base_rows):
        rows = targets[b::base_rows]  # the `times` copies of sentence b
        for w, positions in enumerate(words[b]):
            count = int(rows[:, positions[0]].sum())
            assert_binomial(
                count,
                times,
                P,
                f"sentence {b}, word {w}: copies in which it is a target (draws must be independent per row)",
            )


# ---------------------------------------------------------------------------------------------------- randomness


@pytest.mark.parametrize("mode", ["bernoulli", "fixed"])
@pytest.mark.parametrize("whole_words", [False, True])
def test_seeded_generator_is_repeatable_and_seeds_differ(real_batch, mode, whole_words):
    ids, special, attention, word_ids, _, _ = real_batch
    ids, special, attention, word_ids = (repeat_rows(t, 50) for t in (ids, special, attention, word_ids))
    kwargs = {"mode": mode, "word_ids": word_ids if whole_words else None}
    a = run(ids, special, attention, seed=21, **kwargs)
    b = run(ids, special, attention, seed=21, **kwargs)
    c = run(ids, special, attention, seed=22, **kwargs)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]), "same seed, different result"
    assert not torch.equal(a[1], c[1]), "different seeds gave the same targets"


@pytest.mark.parametrize("mode", ["bernoulli", "fixed"])
def test_dynamic_masking_with_the_same_generator(mode):
    ids, special, attention = make_batch(50, [60])
    g = torch.Generator().manual_seed(0)
    first = mask_tokens(
        ids, special, vocab_size=VOCAB, mask_token_id=MASK_ID, generator=g, attention_mask=attention, mode=mode
    )
    second = mask_tokens(
        ids, special, vocab_size=VOCAB, mask_token_id=MASK_ID, generator=g, attention_mask=attention, mode=mode
    )
    assert not torch.equal(first[1], second[1]), "the same generator object gave the same mask twice"


@pytest.mark.parametrize("mode", ["bernoulli", "fixed"])
def test_inputs_are_not_modified(real_batch, mode):
    ids, special, attention, word_ids, _, _ = real_batch
    copies = [t.clone() for t in (ids, special, attention, word_ids)]
    for w in (None, word_ids):
        inputs, labels = run(ids, special, attention, mode=mode, word_ids=w, mlm_probability=0.5)
        assert inputs.data_ptr() != ids.data_ptr()
        for t, copy in zip((ids, special, attention, word_ids), copies, strict=True):
            assert torch.equal(t, copy), "mask_tokens modified an argument"
        assert int((labels != IGNORE_INDEX).sum()) > 0


# ---------------------------------------------------------------------------------------------------- helpers


def test_bernoulli_targets_and_corrupt_building_blocks(big_batch):
    ids, special, attention = big_batch
    cand = candidates_of(special, attention)
    targets = bernoulli_targets(cand, P, torch.Generator().manual_seed(0))
    assert targets.dtype == torch.bool
    assert not bool((targets & ~cand).any())
    assert_binomial(int(targets.sum()), int(cand.sum()), P, "bernoulli_targets rate")
    none = torch.zeros_like(cand)
    assert torch.equal(corrupt(ids, none, VOCAB, MASK_ID, generator=torch.Generator().manual_seed(0)), ids)
    out = corrupt(ids, targets, VOCAB, MASK_ID, generator=torch.Generator().manual_seed(1))
    assert torch.equal(out[~targets], ids[~targets])
    masked = int((out[targets] == MASK_ID).sum())
    assert_binomial(masked, int(targets.sum()), observed_rates(VOCAB)[0], "corrupt [MASK] share")


# ---------------------------------------------------------------------------------------------------- arguments


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"mlm_probability": -0.1}, "mlm_probability"),
        ({"mlm_probability": 1.5}, "mlm_probability"),
        ({"mask_replace_prob": 0.9, "random_replace_prob": 0.2}, "replace_prob"),
        ({"mask_replace_prob": 0.6, "random_replace_prob": 0.6}, "replace_prob"),
        ({"mode": "uniform"}, "mode"),
    ],
)
def test_invalid_arguments_raise_value_error_naming_the_argument(kwargs, name):
    ids, special, attention = make_batch(2, [10])
    with pytest.raises(ValueError, match=name):
        run(ids, special, attention, **kwargs)


def test_boundary_arguments_are_valid():
    ids, special, attention = make_batch(2, [10])
    for kwargs in (
        {"mlm_probability": 0.0},
        {"mlm_probability": 1.0},
        {"mask_replace_prob": 0.5, "random_replace_prob": 0.5},
    ):
        inputs, labels = run(ids, special, attention, **kwargs)
        assert inputs.shape == labels.shape == ids.shape


# ---------------------------------------------------------------------------------------------------- Hugging Face


@pytest.fixture(scope="module")
def hf_tokenizer():
    from transformers import BertTokenizer as HFBertTokenizer

    return HFBertTokenizer.from_pretrained(str(pretrained_dir()))


def hf_collate(tokenizer, examples, seed, **kwargs):
    from transformers import DataCollatorForLanguageModeling

    collator = DataCollatorForLanguageModeling(tokenizer, mlm=True, seed=seed, **kwargs)
    return collator([dict(e) for e in examples])


@pytest.fixture(scope="module")
def hf_examples(bert):
    """Real encoded examples of different lengths, with Hugging Face's special_tokens_mask (1 at [CLS]/[SEP])."""
    texts = [
        ("the unhappiness of electroencephalography technicians", None),
        ("a cat", "sat on the mat"),
        ("unhappiness", None),
        ("electroencephalography measures electrical activity of the brain", "yes"),
    ]
    examples = []
    for a, b in texts:
        e = bert(a, b)
        examples.append(
            {"input_ids": e.input_ids, "special_tokens_mask": [int(t in ("[CLS]", "[SEP]")) for t in e.tokens]}
        )
    return examples


def test_same_vocab_and_mask_id_as_hugging_face(hf_tokenizer, bert):
    assert len(hf_tokenizer) == len(bert) == VOCAB
    assert hf_tokenizer.mask_token_id == MASK_ID == bert.vocab["[MASK]"]
    assert hf_tokenizer.pad_token_id == PAD_ID


def test_same_rules_as_hugging_face_collator(hf_tokenizer, hf_examples):
    """With p = 1 and only [MASK] (or nothing) replaced the outcome is deterministic: both samplers must target
    exactly the same positions, give the same labels (-100 elsewhere) and the same corrupted inputs."""
    padded = hf_tokenizer.pad([dict(e) for e in hf_examples], return_tensors="pt")
    ids, special, attention = padded["input_ids"], padded["special_tokens_mask"], padded["attention_mask"]
    for mask_p in (1.0, 0.0):
        hf = hf_collate(
            hf_tokenizer, hf_examples, seed=0, mlm_probability=1.0, mask_replace_prob=mask_p, random_replace_prob=0.0
        )
        inputs, labels = run(
            ids, special, attention, mlm_probability=1.0, mask_replace_prob=mask_p, random_replace_prob=0.0
        )
        assert torch.equal(labels, hf["labels"]), "labels differ from DataCollatorForLanguageModeling's"
        assert torch.equal(inputs, hf["input_ids"]), "inputs differ from DataCollatorForLanguageModeling's"
        assert int((labels == IGNORE_INDEX).sum()) == int(special.sum())  # specials and padding only
    # the same, in fixed mode: with p = 1 every candidate is a target
    _, labels = run(ids, special, attention, mode="fixed", mlm_probability=1.0)
    assert torch.equal(labels, hf["labels"])


def test_same_statistics_as_hugging_face_collator(hf_tokenizer):
    """Random draws cannot be compared one by one: compare the target rate and the 80/10/10 split of both
    samplers on the same 2000 x 100 batch and the same special_tokens_mask (a two-sample test)."""
    ids, special, attention = make_batch(2000, [100], mark_padding=True)
    examples = [{"input_ids": ids[r].tolist(), "special_tokens_mask": special[r].tolist()} for r in range(ids.shape[0])]
    hf = hf_collate(hf_tokenizer, examples, seed=0)
    ours = run(ids, special, attention, seed=0)
    stats = {}
    for name, (inputs, labels) in {"hf": (hf["input_ids"], hf["labels"]), "ours": ours}.items():
        targets, masked, replaced, unchanged = split(ids, inputs, labels)
        assert torch.equal(labels[targets], ids[targets]), f"{name}: a label is not the original id"
        assert not bool((targets & special.bool()).any()), f"{name}: a special token became a target"
        assert torch.equal(inputs[~targets], ids[~targets]), f"{name}: a non-target changed"
        stats[name] = [int(x.sum()) for x in (targets, masked, replaced, unchanged)]
    n = 200_000
    for i, what in enumerate(("targets", "[MASK]", "random", "unchanged")):
        a, b = stats["hf"][i], stats["ours"][i]
        pooled = (a + b) / (2 * n)
        sd = math.sqrt(pooled * (1 - pooled) * 2 / n)
        assert abs(a - b) / n <= SDS * sd, f"{what}: Hugging Face {a}, minibert {b} of {n} pieces"
    assert_binomial(stats["hf"][0], n, P, "Hugging Face target rate (sanity)")
