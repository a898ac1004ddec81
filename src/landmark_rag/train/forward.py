"""Training's forward: the encoder's own layout and pooling, with gradients.

Training must produce exactly the vectors inference produces, so documents, queries and
standalone units are laid out by the encoder's :class:`~landmark_rag.encode.layout.Layout`
and pooled by ``encode.pooling`` - what ``LandmarkEncoder`` itself runs - and only the
forward keeps gradients.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F

from landmark_rag.encode.config import Pooling
from landmark_rag.encode.layout import Job, Layout
from landmark_rag.encode.pooling import last_hidden, pad_batch, pool
from landmark_rag.train.examples import TrainExample

Forward = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

__all__ = ["Forward", "document_vectors", "hf_forward", "pool_jobs"]


def pool_jobs(
    forward: Forward, jobs: Sequence[Job], n_out: Sequence[int], mode: Pooling, pad_id: int, device: torch.device
) -> list[torch.Tensor]:
    """Run ``jobs`` in one padded batch and return, per output group, ``[n_out[g], dim]``
    L2-normalised vectors. ``job.doc`` names the output group; ``mode`` is ``LANDMARK`` or
    ``MEAN`` (``encode.pooling.pool``)."""
    ids, mask = pad_batch(jobs, pad_id)
    hidden = forward(ids.to(device), mask.to(device)).float()
    rows: list[list[tuple[int, torch.Tensor]]] = [[] for _ in n_out]
    for job, vec in zip(jobs, pool(hidden, jobs, mode), strict=True):
        for k, i in enumerate(job.sentences.tolist()):
            rows[job.doc].append((i, vec[k]))
    out = []
    for g, n in enumerate(n_out):
        got = dict(rows[g])
        if len(got) != n:
            raise RuntimeError(f"group {g}: pooled {len(got)} of {n} vectors")
        out.append(F.normalize(torch.stack([got[i] for i in range(n)]), dim=-1))
    return out


def document_vectors(
    layout: Layout, forward: Forward, examples: Sequence[TrainExample], device: torch.device
) -> list[torch.Tensor]:
    """One L2-normalised vector per unit of each example (``[len(units), dim]`` each), laid
    out and pooled as ``encode_documents`` does with ``layout``, through ``forward`` (with gradients)."""
    jobs, counts = [], []
    for d, ex in enumerate(examples):
        jobs.extend(layout.document_jobs(layout.tokenize_sentences(ex.units, ex.spaces), d))
        counts.append(len(ex.units))
    return pool_jobs(forward, jobs, counts, layout.pooling.reduction, layout.pad_id, device)


def hf_forward(model: torch.nn.Module, layout: Layout | None = None) -> Forward:
    """The last hidden state of a Hugging Face encoder (or of a peft/accelerate wrapper);
    ``layout`` as in ``encode.pooling.last_hidden`` (isolated landmarks get their mask)."""

    def run(ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return last_hidden(model, ids, mask, layout)

    return run
