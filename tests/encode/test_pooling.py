"""Mean pooling of a whole batch (``encode.pooling.pool_gathered``) against the per-window
cumulative-sum reference (``pool``): same vectors, whether the token index comes from the host
(``span_tokens``, as the encoder's batches carry it) or is built on the spot."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from landmark_rag.encode.config import Pooling
from landmark_rag.encode.encoder import _pack
from landmark_rag.encode.layout import Job
from landmark_rag.encode.pooling import pool, pool_gathered, span_tokens


def _jobs() -> list[Job]:
    # three windows of different widths; spans touch both ends, one is empty, one is a single token
    specs = [(9, [(1, 4), (4, 8)]), (12, [(0, 1), (1, 6), (6, 6), (6, 12)]), (5, [(1, 5)])]
    jobs = []
    for d, (width, spans) in enumerate(specs):
        starts = np.array([s for s, _ in spans], dtype=np.int64)
        ends = np.array([e for _, e in spans], dtype=np.int64)
        jobs.append(Job(ids=np.arange(10, 10 + width, dtype=np.int64), starts=starts, ends=ends,
                        doc=d, sentences=np.arange(len(spans), dtype=np.int64)))
    return jobs


def _index(jobs: list[Job]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    rows = torch.tensor([r for r, j in enumerate(jobs) for _ in j.starts])
    starts = torch.from_numpy(np.concatenate([j.starts for j in jobs]))
    ends = torch.from_numpy(np.concatenate([j.ends for j in jobs]))
    return rows, starts, ends


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gathered_mean_equals_the_cumulative_sum_reference(dtype: torch.dtype) -> None:
    jobs = _jobs()
    torch.manual_seed(0)
    hidden = (torch.randn(len(jobs), 12, 16) * 3).to(dtype)
    want = torch.cat(pool(hidden, jobs, Pooling.MEAN))
    rows, starts, ends = _index(jobs)
    built = pool_gathered(hidden, rows, starts, ends, Pooling.MEAN)
    given = pool_gathered(
        hidden, rows, starts, ends, Pooling.MEAN, torch.from_numpy(span_tokens(rows.numpy(), starts.numpy(), ends.numpy(), 12))
    )
    assert built.dtype == torch.float32
    torch.testing.assert_close(built, want, rtol=0, atol=1e-5)
    assert torch.equal(built, given)
    assert torch.equal(built[4], torch.zeros(16))  # the empty span pools to zeros, not NaN


def test_span_tokens_lists_each_span_in_order() -> None:
    got = span_tokens(np.array([0, 1, 1]), np.array([1, 0, 3]), np.array([3, 0, 5]), width=6)
    assert got.tolist() == [[0, 0, 2, 2], [1, 2, 6 + 3, 6 + 4]]


def test_pack_carries_the_index_only_for_mean() -> None:
    jobs = _jobs()
    mean, landmark = _pack(jobs, 0, False, mean=True), _pack(jobs, 0, False)
    assert landmark.spans is None
    rows, starts, ends = _index(jobs)
    assert np.array_equal(mean.spans.numpy(), span_tokens(rows.numpy(), starts.numpy(), ends.numpy(), 12))
    assert torch.equal(mean.gather, landmark.gather)


def test_a_batch_retried_in_halves_after_out_of_memory_keeps_mean_vectors(tiny_encoder, monkeypatch) -> None:
    from landmark_rag.encode.encoder import LandmarkEncoder

    enc = tiny_encoder(pooling="mean", max_length=32)
    docs = ["Alpha beta gamma. Delta epsilon. Zeta eta theta iota. Kappa lambda mu.", "Nu xi. Omicron pi rho sigma."] * 3
    want = [d.embeddings for d in enc.encode_documents(docs, batch_size=64)]
    real = LandmarkEncoder._forward_pool
    seen: list[int] = []

    def flaky(self, batch, *args, **kwargs):
        seen.append(len(batch.jobs))
        if len(seen) == 1:
            assert len(batch.jobs) > 1 and batch.spans is not None
            raise torch.OutOfMemoryError("a simulated out-of-memory")
        assert batch.spans is not None  # the halves are packed for mean pooling again
        return real(self, batch, *args, **kwargs)

    monkeypatch.setattr(LandmarkEncoder, "_forward_pool", flaky)
    got = [d.embeddings for d in enc.encode_documents(docs, batch_size=64)]
    assert seen[1] + seen[2] == seen[0]
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)
