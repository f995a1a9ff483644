"""streams: which random states drawing can reach (the checker takes only those from student code)."""

from __future__ import annotations

import random
import struct

import numpy as np
import torch

from minibert_course import streams


def _words(g: torch.Generator) -> np.ndarray:
    return np.frombuffer(g.get_state().numpy().tobytes()[24:24 + 8 * 624], dtype="<u8").astype(np.uint32)


def test_the_search_finds_torchs_and_pythons_regenerations_at_their_exact_count():
    g = torch.Generator().manual_seed(2024)
    seeded = _words(g)
    torch.rand(1 + 624 * 40, generator=g)  # the first draw regenerates the array, then 40 more times
    assert streams._reaches(seeded, _words(g), 41) and not streams._reaches(seeded, _words(g), 40)
    r = random.Random(7)
    before = np.array(r.getstate()[1][:624], dtype=np.uint32)
    for _ in range(624 - r.getstate()[1][624] + 1 + 624 * 9):
        r.getrandbits(32)
    after = np.array(r.getstate()[1][:624], dtype=np.uint32)
    assert streams._reaches(before, after, 10) and not streams._reaches(before, after, 9)


def test_states_that_drawing_reaches_follow():
    g = torch.Generator().manual_seed(7)
    before = g.get_state()
    assert streams.torch_state_follows(before, before)
    torch.rand(30_000, generator=g)
    torch.randn(5, generator=g)  # leaves a cached normal sample
    torch.randperm(1000, generator=g)
    assert streams.torch_state_follows(before, g.get_state())
    other = torch.Generator().manual_seed(99)  # a manual_seed inside the student's code, then draws
    torch.rand(10, generator=other)
    assert streams.torch_state_follows(before, other.get_state())
    assert streams.torch_state_follows(g.get_state(), before)  # a state saved earlier and put back
    r = random.Random(3)
    start = r.getstate()
    [r.random() for _ in range(5000)]
    r.gauss(0, 1)
    assert streams.python_state_follows(start, r.getstate())


def test_states_built_by_hand_do_not_follow():
    g = torch.Generator().manual_seed(7)
    before = g.get_state()
    raw = bytearray(before.numpy().tobytes())
    words = np.random.default_rng(0).integers(0, 2**32, 624, dtype=np.uint64)
    struct.pack_into("<624Q", raw, 24, *words.tolist())
    built = torch.frombuffer(raw, dtype=torch.uint8).clone()
    assert not streams.torch_state_follows(before, built, max_twists=64)
    beyond = torch.Generator().manual_seed(7)
    torch.rand(624 * 70, generator=beyond)  # reachable, but past the search's bound: not taken
    assert not streams.torch_state_follows(before, beyond.get_state(), max_twists=64)
    cached = bytearray(g.get_state().numpy().tobytes())
    struct.pack_into("<d", cached, 24 + 8 * 624 + 8, 1e6)  # a cached normal no Box-Muller draw gives
    struct.pack_into("<i", cached, 24 + 8 * 624 + 24, 1)
    assert not streams.torch_state_follows(before, torch.frombuffer(cached, dtype=torch.uint8).clone())
    assert not streams.torch_state_follows(before, torch.zeros(100, dtype=torch.uint8))
    r = random.Random(3)
    assert not streams.python_state_follows(r.getstate(), (3, tuple([12345] * 624 + [1]), None))
    assert not streams.python_state_follows(r.getstate(), random.Random(4).getstate())  # seed() is not kept
    assert not streams.python_state_follows(r.getstate(), (3, r.getstate()[1], float("nan")))
