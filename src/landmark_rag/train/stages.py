"""A run's stages: which stages the data allows, how each builds its batches, its schedule.

Why its own module: the trainer runs whatever stages it is given the same way; deciding
them for the data (:func:`plan_stages`: a distillation-only stage for text without
questions), mapping a stage kind to its batch builder (:data:`STAGE_KINDS`: a new kind is
one row) and each stage's learning-rate schedule (:func:`stage_scheduler`) are the
stages' own rules, kept apart from the training loop that follows them.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import torch

from landmark_rag.encode.config import Pooling
from landmark_rag.train.config import TrainConfig, TrainingInputError, default_stages
from landmark_rag.train.data_longdoc import LongDocBuilder
from landmark_rag.train.data_pairwise import PairwiseBuilder
from landmark_rag.train.data_pseudo import PseudoDocBuilder
from landmark_rag.train.documents import SegmentedArticle

if TYPE_CHECKING:
    from landmark_rag.train.trainer import Trainer


def stage_scheduler(
    optimizer: torch.optim.Optimizer, lr: float, steps: int, warmup_ratio: float
) -> torch.optim.lr_scheduler.LRScheduler:
    """Linear warmup over ``warmup_ratio`` of ``steps``, then linear decay to zero.

    transformers' warmup-stable-decay schedule, advanced by one step before the stage
    starts: step ``k`` then runs at ``lr * (k + 1) / warmup`` while warming up (the first
    step already learns), peaks for one step, and decays as ``lr * (steps - k) /
    (steps - warmup)`` - the schedule the shipped models were trained with, to the bit in
    float32 (tests/train/test_train_loss.py checks it step by step).
    """
    from transformers import get_wsd_schedule

    warm = max(1, int(warmup_ratio * steps))
    for group in optimizer.param_groups:
        group["lr"] = group["initial_lr"] = lr  # each stage starts from its own rate
    schedule = get_wsd_schedule(
        optimizer,
        num_warmup_steps=warm,
        num_stable_steps=1,
        num_decay_steps=max(0, steps - warm),
        warmup_type="linear",
        decay_type="linear",
    )
    with warnings.catch_warnings():  # the offset step precedes any optimizer.step() on purpose
        warnings.simplefilter("ignore", UserWarning)
        schedule.step()
    return schedule


def longdoc_context(trainer: Trainer) -> dict[str, Any]:
    """What windows of real articles need beyond the stage's own fields: token counts of
    every sentence (tokenised as inference does) and the window size."""
    layout = trainer.layout
    window = int(trainer.config.window_tokens or layout.budget)
    # through the run's token cache: every step's windows are these sentences again
    tokenized = (
        trainer.tokens.units([s.text for s in a.sentences], [s.space_before for s in a.sentences])
        for a in trainer.train_articles
    )
    return {
        "unit_tokens": [[len(t) for t in toks] for toks in tokenized],
        "window_tokens": min(window, layout.budget),
        "span_context": trainer.config.span_context,
        "landmark_tokens": 1 if layout.pooling is Pooling.LANDMARK else 0,
        "inference_overlap": trainer.config.window_overlap,
        "causal": layout.left_context_only,
    }


@dataclass(frozen=True)
class StageKind:
    """How a stage kind builds its batches: the builder class, the stage fields it takes,
    and (optionally) what it needs from the trainer."""

    builder: type
    stage_fields: tuple[str, ...]
    context: Callable[[Trainer], dict[str, Any]] | None = None


#: Stage kind -> its batch builder (pairwise passages, pseudo long documents of shuffled
#: passages, windows of real articles). A new kind is one row here (and a data module).
STAGE_KINDS: dict[str, StageKind] = {
    "pairwise": StageKind(PairwiseBuilder, ("examples_per_batch", "queries_per_example", "hard_negatives")),
    "pseudo": StageKind(PseudoDocBuilder, ("passages_per_document", "examples_per_batch", "queries_per_example")),
    "longdoc": StageKind(
        LongDocBuilder, ("examples_per_batch", "queries_per_example", "contrastive_weight"), longdoc_context
    ),
}



def plan_stages(
    config: TrainConfig, train_articles: Sequence[SegmentedArticle]
) -> tuple[TrainConfig, str | None]:
    """``config`` with its stages decided for the data, and a message when they were chosen.

    No stages given: :func:`~landmark_rag.train.config.default_stages` - a distillation-only
    stage when no training document has a question (plain text). Stages given for such data
    must be distillation-only long-document stages: a contrastive term needs queries and
    their answer sentences, and the pairwise/pseudo builders are built from questions.
    """
    if not train_articles:
        raise TrainingInputError("no training documents: check --data and --train-articles")
    labelled = any(a.article.questions for a in train_articles)
    if config.stages is None:
        stages = default_stages(labelled)
        message = None
        if not labelled:
            message = (
                f"the training data has no questions ({len(train_articles)} plain-text documents): "
                f"training a distillation-only stage (longdoc, {stages[0].steps} steps, contrastive_weight 0): "
                "each in-context sentence vector is pulled towards the base model's vector of the sentence alone"
            )
        return replace(config, stages=stages), message
    if not labelled:
        bad = [
            f"{s.kind}:{s.steps}:{s.contrastive_weight:g}"
            for s in config.stages
            if s.contrastive_weight or s.kind != "longdoc"
        ]
        if bad:
            raise TrainingInputError(
                f"the training data has no questions, so stage(s) {', '.join(bad)} cannot run: a contrastive "
                "term needs queries with answer sentences, and pairwise/pseudo stages are built from questions. "
                "Use distillation-only long-document stages (--stage longdoc:STEPS:0) or leave --stage out."
            )
    return config, None
