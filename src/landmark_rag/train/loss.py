"""Training objectives: the position-aware contrastive loss and base-model distillation."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F


def position_weights(span_length: int, alpha: float = 0.08) -> torch.Tensor:
    """Weights ``w_i = exp(-alpha * i)`` for the sentences of an answer span, ``i`` being the
    distance from the span's LAST sentence (index 0 = the last sentence, weight 1).

    Why: retrieval returns the landmark at the END of the useful span and expands backwards
    (Front-k), so the last sentence must score highest and earlier ones progressively less.
    """
    if span_length < 1:
        raise ValueError("an answer span has at least one sentence")
    return torch.exp(-alpha * torch.arange(span_length, dtype=torch.float32))


def position_aware_contrastive_loss(
    queries: torch.Tensor,
    units: torch.Tensor,
    spans: Sequence[Sequence[int]],
    *,
    temperature: float = 0.05,
    alpha: float = 0.08,
    preceding: Sequence[Sequence[int]] | None = None,
    margin: float = 0.0,
    kept: Sequence[Sequence[int]] | None = None,
    kept_weight: float = 0.0,
    prior: torch.Tensor | None = None,
    normalize: bool = False,
) -> torch.Tensor:
    """Mean over queries of ``-sum_i w_i * log_softmax(s / tau)[z - i]``.

    ``normalize`` divides each query's weights by their sum. Why: the paper's weights sum to
    about the span's length, so a question whose evidence runs over eight sentences weighs six
    times a one-sentence question and a batch mixing both is steered by the long spans alone;
    normalised, every question weighs the same and the span only shares its weight out.

    ``preceding[j]`` (optional) lists the units just BEFORE query ``j``'s span, and
    ``margin`` is added to their cosine scores inside the softmax (training only): the loss
    then stays high until each of them scores at least ``margin`` below the span. Why: the
    hit is expanded backwards (Front-k), so a hit on a sentence before the answer loses it,
    while a hit on the answer (or after it) keeps it; the margin makes exactly those
    mistakes dearer than others.

    ``kept[j]`` (optional) lists the units whose expansion still holds query ``j``'s answer
    (for Front-k: ``z .. z+k-1`` of the same document), and ``kept_weight`` adds
    ``-kept_weight * log sum_{i in kept[j]} softmax(s / tau)[i]`` per query. Why: the first
    term treats a hit one sentence before the answer and one after it alike, but Front-k keeps
    the answer only in the second case; this term is indifferent to where inside ``kept`` the
    hit lands and charges only for the mass outside it, so the mistakes a model still makes
    move to where the expansion recovers them.

    ``prior`` (optional, ``[m, n]``) is added to the logits ``s / tau`` before the softmax
    (training only): a fixed score the search adds at inference, e.g. the batch's BM25 for a
    model that searches in hybrid mode (``train.lexical``). The vectors then learn what
    the prior does not already rank first.

    queries: ``[m, d]`` and units: ``[n, d]``, both L2-normalised (cosine scores); ``spans[j]``
    lists the unit indices of query ``j``'s answer span in document order, so
    ``spans[j][-1]`` is ``z``. Every other unit in ``units`` - the rest of the document and
    the units of the other documents in the batch - is a negative.
    """
    if queries.shape[0] != len(spans):
        raise ValueError("one answer span per query")
    if queries.shape[0] == 0:
        return queries.sum() * 0.0
    scores = queries @ units.T
    if margin and preceding is not None:
        if len(preceding) != len(spans):
            raise ValueError("one list of preceding units per query")
        rows = [j for j, before in enumerate(preceding) for _ in before]
        cols = [i for before in preceding for i in before]
        if rows:
            bump = torch.zeros_like(scores)
            bump[rows, cols] = margin
            scores = scores + bump
    logits = scores / temperature
    if prior is not None:
        if prior.shape != scores.shape:
            raise ValueError(f"prior of shape {tuple(prior.shape)} for scores of shape {tuple(scores.shape)}")
        logits = logits + prior.to(logits.device, logits.dtype)
    logp = F.log_softmax(logits, dim=-1)
    if kept_weight and (kept is None or len(kept) != len(spans)):
        raise ValueError("kept_weight needs one list of kept units per query")
    losses = []
    for j, span in enumerate(spans):
        idx = torch.as_tensor(list(span)[::-1], dtype=torch.long, device=logp.device)  # z, z-1, ...
        w = position_weights(len(idx), alpha).to(logp.device, logp.dtype)
        if normalize:
            w = w / w.sum()
        loss = -(w * logp[j, idx]).sum()
        if kept_weight and kept is not None and len(kept[j]):
            ids = torch.as_tensor(list(kept[j]), dtype=torch.long, device=logp.device)
            loss = loss - kept_weight * torch.logsumexp(logp[j, ids], dim=0)
        losses.append(loss)
    return torch.stack(losses).mean()


def distillation_loss(student: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
    """Mean ``1 - cos(student, teacher)``.

    Why: pulling each in-context sentence vector towards the frozen base model's own
    embedding of that sentence keeps the trained model anchored to what the base model
    already does well (so it does not fall below per-sentence embedding) while the
    contrastive term adds what context contributes.
    """
    if student.shape[0] == 0:
        return student.sum() * 0.0
    return (1.0 - F.cosine_similarity(student, teacher.to(student.dtype), dim=-1)).mean()
