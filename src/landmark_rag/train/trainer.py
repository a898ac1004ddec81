"""The one trainer all stages feed: accelerate for devices, precision and accumulation.

Per step it lays out the batch's documents exactly as inference does, pools one vector per
unit with gradients, and minimises ``contrastive_weight * position-aware InfoNCE +
distill_weight * (1 - cos(in-context vector, base model's standalone vector))``.

This module is the loop: stages run in turn, each with its schedule and its prefetched
batches, validated and checkpointed as configured. Its parts live beside it and are
importable from here as before: ``stages.py`` (which stages, their batch builders and
schedules), ``models.py`` (the base encoder, LoRA or a frozen copy, the teachers),
``devices.py`` (the device check, accelerate), ``objective.py`` (a step's inputs and loss
terms) and ``checkpoint.py`` (the saved model directory, checkpoints and resuming).
"""

from __future__ import annotations

import copy
import functools
import logging
import random
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from landmark_rag.encode.encoder import LandmarkEncoder
from landmark_rag.encode.layout import Layout
from landmark_rag.encode.runtime.malloc import keep_freed_memory
from landmark_rag.retrieve.fusion import FusionConfig
from landmark_rag.store.analyzer import make_analyzer
from landmark_rag.train.checkpoint import TRAINER_STATE, load_checkpoint, save_checkpoint, save_model
from landmark_rag.train.config import StageConfig, TrainConfig
from landmark_rag.train.devices import check_device, make_accelerator
from landmark_rag.train.documents import SegmentedArticle, segment_articles, select_documents
from landmark_rag.train.examples import Batch
from landmark_rag.train.forward import TokenCache, hf_forward
from landmark_rag.train.models import (
    base_encoder,
    context_teacher,
    load_adapter_weights,
    set_dropout,
    trainable_model,
)
from landmark_rag.train.objective import StepInputs, prepare_step, step_loss
from landmark_rag.train.prefetch import PreparedStep, prefetch_steps
from landmark_rag.train.stages import STAGE_KINDS, StageKind, plan_stages, stage_scheduler
from landmark_rag.train.validation import validate

logger = logging.getLogger(__name__)

# the trainer's parts, importable from here as they were before they had modules of their own
__all__ = [
    "STAGE_KINDS",
    "TRAINER_STATE",
    "StageKind",
    "StepInputs",
    "Trainer",
    "check_device",
    "load_adapter_weights",
    "load_articles",
    "plan_stages",
    "set_dropout",
    "stage_scheduler",
    "train",
]


class Trainer:
    """Trains a :class:`LandmarkEncoder` in place; ``save`` writes a loadable model directory."""

    def __init__(
        self,
        encoder: LandmarkEncoder,
        config: TrainConfig,
        train_articles: Sequence[SegmentedArticle],
        val_articles: Sequence[SegmentedArticle] = (),
    ) -> None:
        from accelerate.utils import set_seed

        config, message = plan_stages(config, train_articles)
        if message:
            tqdm.write(message)
        self.config = config
        self.encoder = encoder
        set_seed(config.seed)  # before the LoRA layers are drawn
        self.rng = random.Random(config.seed)
        self.accelerator = make_accelerator(config)
        self.device = self.accelerator.device
        if self.device.type == "cpu":
            # each step frees and allocates the same memory again: keep it instead of having
            # the kernel zero-fill fresh pages every step (runtime/malloc.py)
            keep_freed_memory()
        encoder.to(self.device)
        self.train_articles = list(train_articles)
        # validation ranks each question's answer sentence: documents without questions give nothing
        self.val_articles = [a for a in val_articles if a.article.questions]
        if val_articles and not self.val_articles:
            tqdm.write("validation skipped: the validation documents have no questions")
        if config.new_lmk_token:
            encoder.add_landmark_token("[LMK]", init_from=config.lmk_init)
        trainable = self._trainable_model()
        if config.gradient_checkpointing:
            encoder.model.gradient_checkpointing_enable()
            if config.lora:
                encoder.model.enable_input_require_grads()
        params = [p for p in trainable.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)
        self.model, self.optimizer = self.accelerator.prepare(trainable, self.optimizer)
        self._forward = hf_forward(self.model, encoder.layout)
        self._teacher_cache: dict[str, torch.Tensor] = {}
        # the lexical index's analyser (its default language), for the batch's BM25 prior
        self._analyze = make_analyzer(FusionConfig().language) if config.lexical_prior else None
        #: every unit and query tokenised once per run (built after a new [LMK] changed the layout);
        #: its own copy of the tokenizer, since validation tokenises on the step thread while
        #: the prefetch thread lays out the next batch
        self.tokens = TokenCache(replace(encoder.layout, tokenizer=copy.deepcopy(encoder.tokenizer)))
        #: the data stream's random state after the last batch trained on (what a checkpoint saves)
        self._rng_state: Any = None
        # in-context distillation target (config.distill_model): a frozen second encoder
        self.context_teacher = context_teacher(config, self.device, encoder.max_length)
        self.history: list[dict[str, Any]] = []
        self.step = 0

    @property
    def layout(self) -> Layout:
        """The encoder's input layout (training lays out and pools exactly as inference)."""
        return self.encoder.layout

    def _trainable_model(self) -> torch.nn.Module:
        """What the optimizer trains: LoRA layers injected into the encoder's model, or the
        whole model next to a frozen copy of it (the distillation target)."""
        made = trainable_model(self.encoder, self.config)
        self.peft_model, self.teacher, self.config = made.peft_model, made.teacher, made.config
        return made.model

    # ------------------------------------------------------------------ data
    def builder(self, stage: StageConfig) -> Iterator[Batch]:
        """The endless batch stream of ``stage`` (its kind looked up in :data:`STAGE_KINDS`)."""
        kind = STAGE_KINDS[stage.kind]
        kwargs = {name: getattr(stage, name) for name in kind.stage_fields}
        if kind.context is not None:
            kwargs.update(kind.context(self))
        return kind.builder(self.train_articles, **kwargs).batches(self.rng)

    # ------------------------------------------------------------------ loss
    def prepare_batch(self, batch: Batch, stage: StageConfig) -> StepInputs:
        """The host side of a step: ``batch`` laid out, padded and indexed for pooling, its
        queries too, and the standalone ids of the units the distillation target has not
        embedded yet. Runs on the prefetch thread (on the training thread with ``prefetch`` 0)."""
        return prepare_step(self, batch, stage)

    def batch_loss(
        self, batch: Batch, stage: StageConfig, inputs: StepInputs | None = None
    ) -> dict[str, torch.Tensor]:
        """The step's loss terms; ``inputs``: :meth:`prepare_batch` of ``batch``, made here when not given."""
        if inputs is None:
            inputs = self.prepare_batch(batch, stage)
        return step_loss(self, batch, stage, inputs)

    # ------------------------------------------------------------------ loop
    def scheduler(self, stage: StageConfig) -> torch.optim.lr_scheduler.LRScheduler:
        """The learning-rate schedule of ``stage`` (:func:`stage_scheduler`)."""
        base = stage.lr if stage.lr is not None else self.config.lr
        return stage_scheduler(self.optimizer, base, stage.steps, self.config.warmup_ratio)

    def train(self, resume: str | Path | None = None) -> list[dict[str, Any]]:
        """Run every stage; returns the history (losses and validation figures).

        ``resume``: a checkpoint directory ``save_checkpoint`` wrote (``save_every``); the run
        continues from its step with the same weights, optimiser moments, schedule and data
        stream, so it ends where an uninterrupted run of the same config would have.
        """
        cfg = self.config
        if cfg.stages is None:  # plan_stages, in __init__, always decides them
            raise RuntimeError("the training stages were not planned")
        start = self._resume(Path(resume)) if resume is not None else None
        if self.val_articles and start is None:
            self._validate("start")
        bar = tqdm(total=cfg.total_steps, initial=self.step, desc="training", unit="step",
                   disable=not self.accelerator.is_main_process)
        t0 = time.perf_counter()
        done = 0
        for si, stage in enumerate(cfg.stages):
            if done + stage.steps <= self.step:
                done += stage.steps
                continue
            schedule = self.scheduler(stage)
            if start is not None:  # the first stage with steps left after the checkpoint
                self.rng.setstate(start["rng"])
                # a checkpoint inside this stage goes on with its schedule; one taken as the stage
                # before ended saved that stage's finished schedule, and this one starts afresh
                if self.step > done:
                    schedule.load_state_dict(start["scheduler"])
                    for group, lr in zip(self.optimizer.param_groups, schedule.get_last_lr(), strict=True):
                        group["lr"] = lr  # the rate the interrupted run's next step would have used
                start = None
            with prefetch_steps(
                self.builder(stage), done + stage.steps - self.step, self.rng,
                functools.partial(self.prepare_batch, stage=stage), depth=cfg.prefetch,
            ) as steps:
                self._run_stage(si, stage, schedule, steps, done + stage.steps, bar)
            done += stage.steps
            if self.val_articles and not (cfg.eval_every and self.step % cfg.eval_every == 0):
                self._validate(f"end of stage {si} ({stage.kind})")
        bar.close()
        self.history.append({"step": self.step, "train_seconds": round(time.perf_counter() - t0, 1)})
        return self.history

    def _run_stage(
        self, si: int, stage: StageConfig, schedule: Any, steps: Iterator[PreparedStep[StepInputs]], end: int,
        bar: Any,
    ) -> None:
        """Optimiser steps of one stage until the run's step count reaches ``end``."""
        cfg = self.config
        self.model.train()
        ema: float | None = None
        while self.step < end:
            lr = float(self.optimizer.param_groups[0]["lr"])
            prepared = next(steps)
            self._rng_state = prepared.rng_state
            with self.accelerator.accumulate(self.model):
                parts = self.batch_loss(prepared.batch, stage, prepared.inputs)
                self.accelerator.backward(parts["loss"])
                if self.accelerator.sync_gradients and cfg.max_grad_norm:
                    self.accelerator.clip_grad_norm_(self.model.parameters(), cfg.max_grad_norm)
                self.optimizer.step()
                self.optimizer.zero_grad()
            schedule.step()
            self.step += 1
            loss = float(parts["loss"].detach())
            ema = loss if ema is None else 0.95 * ema + 0.05 * loss
            rec = {"step": self.step, "stage": si, "kind": stage.kind, "lr": lr}
            rec.update({k2: round(float(v.detach()), 5) for k2, v in parts.items()})
            self.history.append(rec)
            bar.update(1)
            bar.set_postfix(stage=f"{si}:{stage.kind}", loss=f"{ema:.4f}")
            if cfg.eval_every and self.step % cfg.eval_every == 0 and self.val_articles:
                self._validate(f"step {self.step}")
            if cfg.save_every and self.step % cfg.save_every == 0:
                self.save_checkpoint(Path(cfg.output_dir) / "checkpoints" / f"step-{self.step}", schedule)

    def save_checkpoint(self, directory: str | Path, schedule: Any) -> Path:
        """A loadable model directory (:meth:`save`) plus ``trainer_state.pt``: what
        :meth:`train` needs to resume exactly here (step, optimiser and schedule state, the
        data stream's random state, the history so far)."""
        return save_checkpoint(self, directory, schedule)

    def _resume(self, checkpoint: Path) -> dict[str, Any]:
        """Load a checkpoint's weights and optimiser state; returns its state for :meth:`train`."""
        return load_checkpoint(self, checkpoint)

    def _validate(self, when: str) -> dict[str, float]:
        metrics = validate(self.encoder, self.val_articles, self.config.eval_max_questions)
        self.history.append({"step": self.step, "validation": metrics, "when": when})
        logger.info("validation (%s): %s", when, metrics)
        tqdm.write(f"[validation {when}] " + ", ".join(f"{k} {v:.4f}" for k, v in metrics.items() if k != "questions"))
        return metrics

    # ------------------------------------------------------------------ saving
    def save(self, directory: str | Path) -> Path:
        """Write a directory ``LandmarkEncoder.from_pretrained`` loads.

        With LoRA: the adapter (a few MB) plus ``landmark_config.json`` naming the base
        model, so the base weights stay where they are installed. Full fine-tuning: the
        whole model (``LandmarkEncoder.save_pretrained``).
        """
        return save_model(self, directory)


def load_articles(
    config: TrainConfig, encoder: LandmarkEncoder
) -> tuple[list[SegmentedArticle], list[SegmentedArticle]]:
    """Train and validation documents, split by document, segmented the encoder's way
    (:func:`~landmark_rag.train.documents.select_documents`)."""
    train, val = select_documents(config)
    docs = [*train, *val]
    segmented = segment_articles(tqdm(docs, desc="segmenting", unit="doc", disable=len(docs) < 100), encoder.segment)
    return segmented[: len(train)], segmented[len(train) :]


def train(
    config: TrainConfig, *, encoder: LandmarkEncoder | None = None, resume: str | Path | None = None
) -> tuple[LandmarkEncoder, list[dict[str, Any]]]:
    """Train per ``config`` and save the result to ``config.output_dir``.

    ``resume``: a checkpoint of an earlier run of this config (``output_dir/checkpoints/step-N``,
    written every ``save_every`` steps) to continue from. Returns the trained encoder (adapter
    applied, ready to use) and the history.
    """
    check_device(config)
    if config.threads:
        torch.set_num_threads(config.threads)
    if encoder is None:
        encoder = base_encoder(config)
    train_articles, val_articles = load_articles(config, encoder)
    trainer = Trainer(encoder, config, train_articles, val_articles)
    history = trainer.train(resume=resume)
    trainer.save(trainer.config.output_dir)
    encoder.model.eval()
    return encoder, history
