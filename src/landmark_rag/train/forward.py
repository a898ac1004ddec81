"""Differentiable versions of the encoder's document and query pooling.

Training must produce exactly the vectors inference produces, so documents are laid out
with the encoder's own window planner (``LandmarkEncoder._jobs_for_document``) and the
same special tokens, landmark id and pooling positions; only the forward keeps gradients.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from landmark_rag.encode.encoder import LandmarkEncoder, _Job

Forward = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def tokenize_units(encoder: LandmarkEncoder, units: Sequence[str]) -> list[np.ndarray]:
    """Token ids per unit, capped the way the encoder caps sentences."""
    if not units:
        return []
    pieces = [(" " + u if i and encoder.causal else u) for i, u in enumerate(units)]
    ids = encoder.tokenizer(pieces, add_special_tokens=False)["input_ids"]
    cap = encoder.budget if encoder.config.pooling == "sentence" else encoder.budget - 1
    fallback = encoder.tokenizer.unk_token_id or encoder.pad_id
    return [np.asarray(x[:cap] or [fallback], dtype=np.int64) for x in ids]


def document_jobs(encoder: LandmarkEncoder, toks: list[np.ndarray], doc: int = 0) -> list[_Job]:
    """The encoder inputs for one document, exactly as ``encode_document`` builds them."""
    return encoder._jobs_for_document(doc, toks)


def query_jobs(encoder: LandmarkEncoder, queries: Sequence[str]) -> list[_Job]:
    """Encoder inputs for queries, exactly as ``encode_queries`` builds them."""
    return encoder._query_jobs(queries)


def standalone_jobs(encoder: LandmarkEncoder, toks: list[np.ndarray]) -> list[_Job]:
    """Each unit alone, mean-pooled over ``[CLS] unit [SEP]`` (pooling="sentence")."""
    return encoder._standalone_jobs(toks)


def pool_jobs(
    forward: Forward, jobs: Sequence[_Job], n_out: Sequence[int], mode: str, pad_id: int, device: torch.device
) -> list[torch.Tensor]:
    """Run ``jobs`` in one padded batch and return, per output group, ``[n_out[g], dim]``
    L2-normalised vectors. ``job.doc`` names the output group; ``mode`` is ``landmark``
    (hidden state at ``end - 1``) or ``mean`` (average of ``[start, end)``)."""
    width = max(len(j.ids) for j in jobs)
    ids = torch.full((len(jobs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(jobs), width), dtype=torch.long)
    for r, job in enumerate(jobs):
        ids[r, : len(job.ids)] = torch.from_numpy(job.ids)
        mask[r, : len(job.ids)] = 1
    hidden = forward(ids.to(device), mask.to(device)).float()
    rows: list[list[tuple[int, torch.Tensor]]] = [[] for _ in n_out]
    if mode == "mean":
        csum = torch.cat([hidden.new_zeros(hidden.shape[0], 1, hidden.shape[2]), hidden.cumsum(1)], dim=1)
    for r, job in enumerate(jobs):
        e = torch.from_numpy(job.ends).to(device)
        if mode == "landmark":
            vec = hidden[r, e - 1]
        else:
            s = torch.from_numpy(job.starts).to(device)
            vec = (csum[r, e] - csum[r, s]) / (e - s).clamp(min=1).unsqueeze(1).float()
        for k, i in enumerate(job.sentences.tolist()):
            rows[job.doc].append((i, vec[k]))
    out = []
    for g, n in enumerate(n_out):
        got = dict(rows[g])
        if len(got) != n:
            raise RuntimeError(f"group {g}: pooled {len(got)} of {n} vectors")
        out.append(F.normalize(torch.stack([got[i] for i in range(n)]), dim=-1))
    return out


def hf_forward(model: torch.nn.Module) -> Forward:
    """The last hidden state of a Hugging Face encoder (or of a peft/accelerate wrapper)."""

    def run(ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        out = model(input_ids=ids, attention_mask=mask)
        return out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]

    return run
