"""Training's forward: the encoder's own layout and pooling, with gradients.

Training must produce exactly the vectors inference produces, so documents, queries and
standalone units are laid out by ``encode.layout`` and pooled by ``encode.pooling`` - the
functions ``LandmarkEncoder`` itself runs - and only the forward keeps gradients.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from landmark_rag.encode.encoder import LandmarkEncoder
from landmark_rag.encode.layout import Job, document_jobs, query_jobs, standalone_jobs, tokenize_sentences
from landmark_rag.encode.pooling import last_hidden, pad_batch, pool
from landmark_rag.train.examples import TrainExample

Forward = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

__all__ = [
    "Forward",
    "Job",
    "document_jobs",
    "document_vectors",
    "hf_forward",
    "pool_jobs",
    "query_jobs",
    "standalone_jobs",
    "tokenize_units",
]


def tokenize_units(
    encoder: LandmarkEncoder, units: Sequence[str], spaces: Sequence[str] | None = None
) -> list[np.ndarray]:
    """Token ids per unit, as inference tokenises sentences (``encode.layout``).

    ``spaces``: the whitespace before each unit in its document (``Sentence.space_before``);
    ``None`` joins units with one space (documents assembled from separate passages).
    """
    return tokenize_sentences(encoder, units, spaces)


def pool_jobs(
    forward: Forward, jobs: Sequence[Job], n_out: Sequence[int], mode: str, pad_id: int, device: torch.device
) -> list[torch.Tensor]:
    """Run ``jobs`` in one padded batch and return, per output group, ``[n_out[g], dim]``
    L2-normalised vectors. ``job.doc`` names the output group; ``mode`` is ``landmark`` or
    ``mean`` (``encode.pooling.pool``)."""
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
    encoder: LandmarkEncoder, forward: Forward, examples: Sequence[TrainExample], device: torch.device
) -> list[torch.Tensor]:
    """One L2-normalised vector per unit of each example (``[len(units), dim]`` each), laid
    out and pooled as ``encoder.encode_documents`` does, through ``forward`` (with gradients)."""
    jobs, counts = [], []
    for d, ex in enumerate(examples):
        jobs.extend(document_jobs(encoder, tokenize_units(encoder, ex.units, ex.spaces), d))
        counts.append(len(ex.units))
    mode = "landmark" if encoder.config.pooling == "landmark" else "mean"
    return pool_jobs(forward, jobs, counts, mode, encoder.pad_id, device)


def hf_forward(model: torch.nn.Module, layout: tuple[int, str, int] | None = None) -> Forward:
    """The last hidden state of a Hugging Face encoder (or of a peft/accelerate wrapper);
    ``layout`` as in ``encode.pooling.last_hidden`` (the encoder's ``landmark_layout``)."""

    def run(ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return last_hidden(model, ids, mask, layout)

    return run
