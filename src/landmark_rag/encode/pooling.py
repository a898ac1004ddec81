"""Pooling, shared by inference (``LandmarkEncoder``) and training (``train/forward.py``).

One padded batch of :class:`~landmark_rag.encode.layout.Job` in, one vector per pooled
sentence out: ``landmark`` takes the hidden state at ``end - 1`` (the landmark token),
``mean`` averages ``[start, end)``. Inference runs it under ``torch.inference_mode``;
training runs the very same code with gradients, so both produce the same vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from landmark_rag.encode.batching import span_tokens
from landmark_rag.encode.config import Pooling
from landmark_rag.encode.layout import Job, Layout

__all__ = ["last_hidden", "pad_batch", "pool", "pool_gathered", "span_tokens"]


def pad_batch(jobs: Sequence[Job], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids, attention_mask)``, right-padded to the longest job."""
    width = max(len(j.ids) for j in jobs)
    ids = torch.full((len(jobs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(jobs), width), dtype=torch.long)
    for r, job in enumerate(jobs):
        ids[r, : len(job.ids)] = torch.from_numpy(job.ids)
        mask[r, : len(job.ids)] = 1
    return ids, mask


def last_hidden(
    model: Any, ids: torch.Tensor, mask: torch.Tensor, layout: Layout | None = None, *,
    key_padding: torch.dtype | None = None, unpadded: bool = False,
) -> torch.Tensor:
    """The last hidden state of a Hugging Face encoder or decoder (or a peft/accelerate wrapper).

    ``layout``: the model's input layout, whose isolated landmarks (``encode.attention``) get
    their own mask; ``None`` (or full attention) runs the plain mask. ``key_padding``: hand the
    padding over as a broadcast additive ``[B, 1, 1, W]`` mask of that dtype instead, for a
    model ``encode.runtime.padding.broadcast_padding_dtype`` accepted (the same hidden states, less work).
    ``unpadded``: the caller knows (on the host) that no row is padded and the model reads a
    missing mask as no padding (``encode.runtime.padding.mask_optional``), so no mask is handed
    over at all. Why: a transformers encoder drops an all-ones mask, but only after reading it
    (``bool(mask.all())``), which on a GPU makes the launching thread wait until the device has
    run everything queued before it, every forward pass; without a mask it takes the same path
    (no mask: the same kernels and numbers) without that wait.
    """
    isolated = layout.isolated_landmarks if layout is not None else None
    inputs: dict[str, torch.Tensor | None] = {"input_ids": ids, "attention_mask": mask}
    if unpadded:
        inputs["attention_mask"] = None
    elif key_padding is not None and isolated is None:
        from landmark_rag.encode.runtime.padding import key_padding as broadcast_mask

        inputs["attention_mask"] = broadcast_mask(mask, key_padding)
    if isolated is not None:
        from landmark_rag.encode.attention import isolated_landmark_inputs

        lmk_id, mode, span = isolated
        dtype = next(model.parameters()).dtype
        inputs["attention_mask"], inputs["position_ids"] = isolated_landmark_inputs(
            ids, mask, lmk_id, dtype if dtype.is_floating_point else torch.float32,
            prefix=mode == "prefix", causal=mode == "causal", span=span,
        )
    out = model(**inputs)
    return out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]


def pool(hidden: torch.Tensor, jobs: Sequence[Job], mode: Pooling) -> list[torch.Tensor]:
    """Per job, ``[len(job.sentences), dim]`` float32 vectors (not normalised).

    ``hidden`` is the batch's ``[batch, width, dim]`` output for ``pad_batch(jobs)``; ``mode``
    is ``LANDMARK`` or ``MEAN`` (a config's pooling gives it as ``Pooling.reduction``).
    """
    if mode not in (Pooling.LANDMARK, Pooling.MEAN):
        raise ValueError(f"pooling mode must be 'landmark' or 'mean', not {mode!r}")
    hidden = hidden.float()
    out = []
    if mode == Pooling.LANDMARK:
        for r, job in enumerate(jobs):
            out.append(hidden[r, torch.from_numpy(job.ends).to(hidden.device) - 1])
        return out
    # mean over [start, end) via a cumulative sum: one pass however many sentences
    csum = torch.cat([hidden.new_zeros(hidden.shape[0], 1, hidden.shape[2]), hidden.cumsum(1)], dim=1)
    for r, job in enumerate(jobs):
        s = torch.from_numpy(job.starts).to(hidden.device)
        e = torch.from_numpy(job.ends).to(hidden.device)
        out.append((csum[r, e] - csum[r, s]) / (e - s).clamp(min=1).unsqueeze(1).float())
    return out


def pool_gathered(
    hidden: torch.Tensor, rows: torch.Tensor, starts: torch.Tensor, ends: torch.Tensor, mode: Pooling,
    tokens: torch.Tensor | None = None,
) -> torch.Tensor:
    """:func:`pool` for a whole batch at once: ``[len(rows), dim]`` float32 vectors (not normalised).

    Pooled sentence ``k`` is ``[starts[k], ends[k])`` of batch row ``rows[k]`` (index tensors on
    ``hidden``'s device): one gather for the batch instead of one per job. The mean adds each
    span's tokens with one ``index_add_`` (``tokens``: :func:`span_tokens` of these indices,
    built here when not given); a cumulative sum over the whole batch, as :func:`pool` takes,
    costs 3-4x as much on a CPU and is less exact for long windows (a difference of two large
    prefix sums)."""
    if mode == Pooling.LANDMARK:
        return hidden[rows, ends - 1].float()
    if mode != Pooling.MEAN:
        raise ValueError(f"pooling mode must be 'landmark' or 'mean', not {mode!r}")
    if tokens is None:  # a caller that packed no index: built from the indices, wherever they are
        host = span_tokens(rows.cpu().numpy(), starts.cpu().numpy(), ends.cpu().numpy(), hidden.shape[1])
        tokens = torch.from_numpy(host).to(hidden.device)
    flat = hidden.reshape(-1, hidden.shape[2])[tokens[1]].float()
    sums = flat.new_zeros(rows.shape[0], hidden.shape[2]).index_add_(0, tokens[0], flat)
    return sums / (ends - starts).clamp(min=1).unsqueeze(1).float()
