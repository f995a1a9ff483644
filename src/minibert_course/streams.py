"""Is a random state that came back from the student's process one that drawing numbers can reach?

The checker lets the torch random stream (and a `torch.Generator` or `random.Random` passed to student code) continue
where the student's code left it, so that a test that seeds, calls the student's encoder in training mode, then
draws the head's dropout gets the draws that follow, as in one kernel. But a state is only bytes: student code could
send back one it built (`torch.set_rng_state`), and the Mersenne Twister's next 624 outputs are whatever such a state
says, so every input a test draws after the call (ids, logits, weights) could be chosen by the submission, for
instance all equal, where a wrong answer and the right one agree.

Both torch's CPU generator and Python's `random` are MT19937: between two regenerations of its 624-word array
("twists") a draw only moves an index. So a state reached by drawing has the array of the state before, twisted
k times (k >= 0), or, after a `manual_seed(s)` inside the student's code, that of seed s twisted k times (torch
keeps s in the state). `follows` checks exactly that, for k up to `MAX_TWISTS` (10 million 32-bit draws, far more
than a test's call makes: a dropout mask costs one draw per 64 KiB chunk with MKL). A state that does not follow is
not taken: the checker keeps its own stream, so the submission cannot choose the test's inputs; it costs no points.
The one cached normal sample a state may hold is accepted only if a Box-Muller draw could be it (|x| < 9).
"""

from __future__ import annotations

import math
import random
import struct

import numpy as np

MAX_TWISTS = 16_384
N, M = 624, 397
TORCH_STATE_BYTES = 5056  # CPUGeneratorImplState: seed, left, seeded, next, state[624] (uint64), normal caches
_ARRAY = slice(24, 24 + 8 * N)


def temper(mt: np.ndarray) -> np.ndarray:
    """The outputs a 624-word array gives, in order (MT19937's tempering: a bijection of each word)."""
    y = mt.astype(np.uint32)
    y ^= y >> np.uint32(11)
    y ^= (y << np.uint32(7)) & np.uint32(0x9D2C5680)
    y ^= (y << np.uint32(15)) & np.uint32(0xEFC60000)
    y ^= y >> np.uint32(18)
    return y


def _reaches(start: np.ndarray, goal: np.ndarray, max_twists: int) -> bool:
    """Whether goal = twist^k(start) for some 0 <= k <= max_twists. Python's own MT19937 (C) draws the stream from
    `start`: block j of 624 outputs is the tempered twist^(j+1)(start), so the goal's tempered words are looked for
    at block boundaries (chunks that grow, so that the usual few twists cost microseconds)."""
    if np.array_equal(start, goal):
        return True
    rng = random.Random()
    rng.setstate((3, tuple(int(w) for w in start) + (N,), None))  # index N: the next draw twists first
    pattern = temper(goal).astype("<u4").tobytes()
    block, done, chunk = 4 * N, 0, 8
    while done < max_twists:
        n = min(chunk, max_twists - done)
        stream = rng.getrandbits(32 * N * n).to_bytes(block * n, "little")
        at = stream.find(pattern)
        while at != -1:
            if at % block == 0:
                return True
            at = stream.find(pattern, at + 1)
        done, chunk = done + n, chunk * 8
    return False


def _normal_cache_ok(value: float) -> bool:
    return math.isfinite(value) and abs(value) < 9.0  # sqrt(-2 ln u) < 8.6 for any double u > 0


def _torch_fields(state: bytes):
    if len(state) != TORCH_STATE_BYTES:
        return None
    seed, left, _seeded, nxt = struct.unpack_from("<QiiQ", state, 0)
    words = np.frombuffer(state[_ARRAY], dtype="<u8")
    if words.max() >= 2**32:
        return None
    cache_d, = struct.unpack_from("<d", state, 24 + 8 * N + 8)
    valid_d, = struct.unpack_from("<i", state, 24 + 8 * N + 24)
    cache_f, valid_f = struct.unpack_from("<f?", state, 24 + 8 * N + 32)
    if not ((left == 1 and nxt == 0) or (1 <= nxt <= N and left + nxt == N + 1)):
        return None
    if (valid_d and not _normal_cache_ok(cache_d)) or (valid_f and not _normal_cache_ok(cache_f)):
        return None
    return seed, words.astype(np.uint32)


def torch_state_follows(before, after, max_twists: int = MAX_TWISTS) -> bool:
    """Whether the torch CPU generator state `after` (a uint8 tensor, as get_state gives) can be reached from
    `before` by drawing, or by manual_seed(s) and drawing (s is the seed `after` records)."""
    import torch

    a = _torch_fields(after.numpy().tobytes())
    if a is None:
        return False
    if before is not None:
        b = _torch_fields(before.numpy().tobytes())
        if b is not None and _reaches(b[1], a[1], max_twists):
            return True
    seeded = torch.Generator().manual_seed(int(a[0])).get_state()
    return _reaches(_torch_fields(seeded.numpy().tobytes())[1], a[1], max_twists)


def python_state_follows(before: tuple, after: tuple, max_twists: int = MAX_TWISTS) -> bool:
    """The same for `random.Random.getstate()` tuples (version, 624 words + index, cached gauss). Python does not
    keep the seed, so only drawing from `before` counts (a `seed()` inside student code is not taken)."""
    try:
        version, words, gauss = after
        _, old_words, _ = before
    except (TypeError, ValueError):
        return False
    if version != 3 or len(words) != N + 1 or not 1 <= words[N] <= N or max(words[:N]) >= 2**32:
        return False
    if gauss is not None and not _normal_cache_ok(gauss):
        return False
    return _reaches(np.array(old_words[:N], dtype=np.uint32), np.array(words[:N], dtype=np.uint32), max_twists)
