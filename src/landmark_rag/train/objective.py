"""A training step's objective: the batch's inputs made on the host, and its loss terms.

Why its own module: the loss a step minimises, ``contrastive_weight * position-aware
InfoNCE + distill_weight * (1 - cos(in-context vector, target))``, is assembled from the
batch's examples (which sentences answer each query, which precede the answer, which
Front-k hits still reach it), the pooled vectors and the distillation target (the base
model's standalone vector of each unit, cached, or ``distill_model``'s in-context one).
That assembly is what a training run is about; the loop around it (stages, schedules,
checkpoints) is not, and lives in ``trainer.py``. Both halves of a step read the trainer's
current parts (its layout, token cache, models), so they take the trainer itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from landmark_rag.encode.config import Pooling
from landmark_rag.train.config import StageConfig
from landmark_rag.train.examples import Batch
from landmark_rag.train.forward import (
    PreparedJobs,
    document_jobs,
    document_vectors,
    hf_forward,
    pool_prepared,
    pool_standalone,
    prepare_jobs,
)
from landmark_rag.train.lexical import lexical_prior
from landmark_rag.train.loss import distillation_loss, position_aware_contrastive_loss

if TYPE_CHECKING:
    from landmark_rag.train.trainer import Trainer

#: per query: the batch positions of its answer span's units, of the units just before the
#: span (same window), and of the units whose Front-k passage still reaches the answer
Targets = tuple[list[list[int]], list[list[int]], list[list[int]]]


@dataclass
class StepInputs:
    """A step's device inputs, made on the host ahead of the step (:meth:`Trainer.prepare_batch`)."""

    units: PreparedJobs
    queries: PreparedJobs | None
    #: ``lexical_prior`` of the batch (``[queries, units]``), when the config sets one
    lexical: torch.Tensor | None = None


def prepare_step(trainer: Trainer, batch: Batch, stage: StageConfig) -> StepInputs:
    """The host side of a step, as :meth:`Trainer.prepare_batch` documents it."""
    layout = trainer.layout
    jobs, counts = document_jobs(layout, batch, trainer.tokens.units)
    units = prepare_jobs(jobs, counts, layout.pad_id, mean=layout.pooling.reduction == Pooling.MEAN)
    queries = None
    if stage.contrastive_weight:
        texts = [q for ex in batch for q in ex.queries]
        mean = layout.query_pooling.reduction == Pooling.MEAN
        queries = prepare_jobs(trainer.tokens.query_jobs(texts), [len(texts)], layout.pad_id, mean=mean)
    if stage.distill_weight and trainer.context_teacher is None:
        trainer.tokens.standalone([u for ex in batch for u in ex.units if u not in trainer._teacher_cache])
    lexical = None
    if stage.contrastive_weight and trainer._analyze is not None:
        k1, b = trainer.config.lexical_prior_bm25
        lexical = lexical_prior(batch, trainer._analyze, k1=k1, b=b, weight=trainer.config.lexical_prior)
    return StepInputs(units, queries, lexical)


def contrastive_targets(
    batch: Batch, counts: Sequence[int], *, boundary_window: int, front_k: int, span_cap: int = 0
) -> Targets:
    """Each query's answer span, the units just before it and the Front-k hits that keep it,
    as positions among all the batch's units (its examples' units one after another).

    ``span_cap``: only the last so many sentences of a span count, 0 all of them (the end of
    the span is where position-aware training puts the hit)."""
    spans: list[list[int]] = []
    preceding: list[list[int]] = []
    kept: list[list[int]] = []
    offset = 0
    reach, k = boundary_window, front_k
    for ex, n in zip(batch, counts, strict=True):
        spans.extend([[offset + i for i in (s[-span_cap:] if span_cap else s)] for s in ex.spans])
        # the sentences a Front-k hit must not land on: just before the span, same window
        preceding.extend([[offset + i for i in range(max(s[0] - reach, 0), s[0])] for s in ex.spans])
        # the hits whose Front-k passage still ends at or after the answer: z .. z+k-1
        kept.extend([[offset + i for i in range(s[-1], min(s[-1] + k, n))] for s in ex.spans])
        offset += n
    return spans, preceding, kept


def step_loss(trainer: Trainer, batch: Batch, stage: StageConfig, inputs: StepInputs) -> dict[str, torch.Tensor]:
    """The step's loss terms (``contrastive``, ``distill``) and their weighted sum (``loss``)."""
    layout, config = trainer.layout, trainer.config
    per_doc = pool_prepared(trainer._forward, inputs.units, layout.pooling.reduction, trainer.device)
    counts = [len(ex.units) for ex in batch]
    units = torch.cat(per_doc)
    out: dict[str, torch.Tensor] = {}
    total = units.sum() * 0.0
    if stage.contrastive_weight:
        assert inputs.queries is not None
        spans, preceding, kept = contrastive_targets(
            batch, counts, boundary_window=config.boundary_window, front_k=config.front_k, span_cap=config.span_cap
        )
        (qvecs,) = pool_prepared(trainer._forward, inputs.queries, layout.query_pooling.reduction, trainer.device)
        c = position_aware_contrastive_loss(
            qvecs, units, spans, temperature=config.temperature, alpha=config.alpha,
            preceding=preceding, margin=config.boundary_margin,
            kept=kept, kept_weight=config.front_set_weight, prior=inputs.lexical,
            normalize=config.span_weights == "mean",
        )
        out["contrastive"] = c
        total = total + stage.contrastive_weight * c
    if stage.distill_weight:
        if trainer.context_teacher is not None:
            teacher = context_teacher_vectors(trainer, batch)
        else:
            teacher = standalone_teacher_vectors(trainer, [u for ex in batch for u in ex.units])
        dl = distillation_loss(units, teacher)
        out["distill"] = dl
        total = total + stage.distill_weight * dl
    out["loss"] = total
    return out


def standalone_teacher_vectors(trainer: Trainer, units: list[str]) -> torch.Tensor:
    """The base model's standalone (per-sentence) embedding of each unit, cached."""
    cache = trainer._teacher_cache
    missing = list(dict.fromkeys(u for u in units if u not in cache))
    if missing:
        # tokenised as standalone sentences (capped at a whole window, no landmark)
        jobs = trainer.layout.standalone_jobs(trainer.tokens.standalone(missing))
        args = (jobs, Pooling.MEAN, trainer.layout.pad_id, trainer.device)
        with torch.no_grad():
            if trainer.peft_model is not None:
                with trainer.peft_model.disable_adapter():
                    was = trainer.model.training
                    trainer.model.eval()
                    vecs = pool_standalone(trainer._forward, *args)
                    trainer.model.train(was)
            elif trainer.teacher is not None:
                vecs = pool_standalone(hf_forward(trainer.teacher), *args)
            else:  # trainable_model sets one of the two
                raise RuntimeError("no distillation target: neither a LoRA model nor a frozen copy")
        for u, v in zip(missing, vecs, strict=True):
            cache[u] = v.detach()
    return torch.stack([cache[u] for u in units])


def context_teacher_vectors(trainer: Trainer, batch: Batch) -> torch.Tensor:
    """``distill_model``'s in-context vectors of every unit of the batch, each example
    laid out as one document the way that model lays documents out at inference."""
    t = trainer.context_teacher
    assert t is not None
    with torch.no_grad():
        return torch.cat(document_vectors(t.layout, hf_forward(t.model, t.layout), batch, trainer.device))
