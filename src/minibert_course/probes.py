"""Course-written stand-ins that tests build inside the student's process (`minibert_course.grading.new`).

They are the test's code, not the student's: a test reads back what they recorded as data and compares it with what
the checker computed itself.
"""

from __future__ import annotations

import torch


class StubSelfAttention(torch.nn.Module):
    """Stands in for multi-head attention (it has its own test): a fixed map of x, tanh(x @ weight), that records
    the arguments it was called with."""

    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.weight = torch.randn(hidden, hidden) / hidden**0.5
        self.heads, self.calls, self.probs = heads, [], None

    def forward(self, hidden_states, mask=None, output_attentions=False):
        self.calls.append((mask, output_attentions))
        B, T, _ = hidden_states.shape
        self.probs = torch.full((B, self.heads, T, T), 1.0 / T) if output_attentions else None
        return torch.tanh(hidden_states @ self.weight), self.probs
