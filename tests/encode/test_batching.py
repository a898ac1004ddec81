"""Batching by a token budget (``encode_documents(batch_tokens=...)``): padded tokens per batch
stay under the budget, every window runs exactly once, and the vectors do not depend on it."""

from __future__ import annotations

import numpy as np
import pytest

from landmark_rag.encode.encoder import _batches
from landmark_rag.encode.layout import Job


def _job(n: int) -> Job:
    return Job(np.zeros(n, dtype=np.int64), 0, np.array([0]), np.array([0]), np.array([n]))


@pytest.mark.parametrize("budget", [1, 50, 64, 100, 1000])
def test_token_budget_batches(budget: int) -> None:
    widths = [5, 10, 10, 20, 30, 30, 64, 100]
    jobs = [_job(w) for w in widths]
    batches = _batches(list(range(len(jobs))), jobs, batch_size=2, batch_tokens=budget)
    assert [len(j.ids) for b in batches for j in b] == widths  # each once, in order
    for b in batches:
        padded = len(b) * max(len(j.ids) for j in b)
        assert padded <= budget or len(b) == 1  # a window wider than the budget runs alone
    if budget == 1000:
        assert len(batches) == 1  # batch_size does not cap a token-budget batch


def test_window_count_batches_unchanged() -> None:
    jobs = [_job(w) for w in (3, 4, 5, 6, 7)]
    assert [len(b) for b in _batches([0, 1, 2, 3, 4], jobs, batch_size=2, batch_tokens=None)] == [2, 2, 1]


def test_vectors_do_not_depend_on_batching(tiny_encoder) -> None:
    enc = tiny_encoder(pooling="landmark", max_length=48)
    texts = [" ".join(f"Line {i} of document {d} is here." for i in range(n)) for d, n in enumerate((3, 25, 60))]
    a = enc.encode_documents(texts, batch_size=16)
    b = enc.encode_documents(texts, batch_tokens=100)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x.embeddings, y.embeddings, atol=1e-5)
