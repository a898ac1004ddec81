"""The one trainer all stages feed: accelerate for devices, precision and accumulation.

Per step it lays out the batch's documents exactly as inference does, pools one vector per
unit with gradients, and minimises ``contrastive_weight * position-aware InfoNCE +
distill_weight * (1 - cos(in-context vector, base model's standalone vector))``.
"""

from __future__ import annotations

import copy
import functools
import json
import logging
import random
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import torch
from tqdm.auto import tqdm

from landmark_rag.encode.config import Pooling
from landmark_rag.encode.encoder import LandmarkEncoder
from landmark_rag.encode.layout import Layout
from landmark_rag.encode.runtime.malloc import keep_freed_memory
from landmark_rag.encode.untrained import UntrainedLandmarkWarning
from landmark_rag.retrieve.fusion import FusionConfig
from landmark_rag.store.analyzer import make_analyzer
from landmark_rag.train.config import (
    StageConfig,
    TrainConfig,
    TrainingInputError,
    default_stages,
)
from landmark_rag.train.data_longdoc import LongDocBuilder
from landmark_rag.train.data_pairwise import PairwiseBuilder
from landmark_rag.train.data_pseudo import PseudoDocBuilder
from landmark_rag.train.documents import SegmentedArticle, segment_articles, select_documents
from landmark_rag.train.examples import Batch
from landmark_rag.train.forward import (
    PreparedJobs,
    TokenCache,
    document_jobs,
    document_vectors,
    hf_forward,
    pool_prepared,
    pool_standalone,
    prepare_jobs,
)
from landmark_rag.train.lexical import lexical_prior
from landmark_rag.train.loss import distillation_loss, position_aware_contrastive_loss
from landmark_rag.train.prefetch import PreparedStep, prefetch_steps
from landmark_rag.train.validation import validate

logger = logging.getLogger(__name__)

#: File in a checkpoint directory holding what a resumed run needs beyond the weights.
TRAINER_STATE = "trainer_state.pt"


@dataclass
class StepInputs:
    """A step's device inputs, made on the host ahead of the step (:meth:`Trainer.prepare_batch`)."""

    units: PreparedJobs
    queries: PreparedJobs | None
    #: ``lexical_prior`` of the batch (``[queries, units]``), when the config sets one
    lexical: torch.Tensor | None = None


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
        self.accelerator = _accelerator(config)
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
        self.context_teacher = _context_teacher(config, self.device, encoder.max_length)
        self.history: list[dict[str, Any]] = []
        self.step = 0

    @property
    def layout(self) -> Layout:
        """The encoder's input layout (training lays out and pools exactly as inference)."""
        return self.encoder.layout

    def _trainable_model(self) -> torch.nn.Module:
        """What the optimizer trains: LoRA layers injected into the encoder's model, or the
        whole model next to a frozen copy of it (the distillation target)."""
        config, encoder = self.config, self.encoder
        if config.model_dropout is not None:  # before LoRA's layers exist: they keep lora_dropout
            set_dropout(encoder.model, float(config.model_dropout))
        self.teacher = None
        if not config.lora:
            self.peft_model = None
            # The distillation target must stay the BASE model: a frozen copy.
            self.teacher = copy.deepcopy(encoder.model).eval().requires_grad_(False)
            return encoder.model
        from peft import LoraConfig, get_peft_model

        lora = LoraConfig(
            r=config.lora_r,
            lora_alpha=config.lora_alpha,
            lora_dropout=config.lora_dropout,
            # None: every linear layer, whatever the architecture calls them (peft resolves it)
            target_modules=list(config.lora_targets) if config.lora_targets is not None else "all-linear",
            bias="none",
            # a new [LMK] is one new embedding row: train and save just that row
            trainable_token_indices=[encoder.lmk_id] if config.new_lmk_token else None,
        )
        # get_peft_model injects the LoRA layers into encoder.model in place, so the
        # encoder (validation, encode_*) runs the adapted model without a copy.
        self.peft_model = get_peft_model(encoder.model, lora)
        if config.lora_targets is None:
            # record what "all-linear" resolved to as module-name suffixes (peft's matching
            # rule: the same modules), so train_config.json and adapter_config.json name
            # e.g. q/k/v/o/dense rather than every layer's path, and the run reproduces
            # peft types its configs as the PeftConfig base; the adapter made above is a LoraConfig
            peft_cfg = cast(LoraConfig, self.peft_model.peft_config["default"])
            resolved = peft_cfg.target_modules
            if resolved is None or isinstance(resolved, str):  # a str would be read letter by letter
                raise RuntimeError(f"peft left the LoRA target modules unresolved: {resolved!r}")
            names = sorted({str(n).rsplit(".", 1)[-1] for n in resolved})
            # peft holds target_modules as a set (LoraConfig.__post_init__ makes one), though its
            # annotation says list[str] | str
            peft_cfg.target_modules = set(names)  # type: ignore[assignment]
            config = self.config = replace(config, lora_targets=names)
        if config.init_adapter:
            load_adapter_weights(self.peft_model, config.init_adapter, config)
        return self.peft_model

    # ------------------------------------------------------------------ data
    def builder(self, stage: StageConfig) -> Iterator[Batch]:
        """The endless batch stream of ``stage`` (its kind looked up in :data:`STAGE_KINDS`)."""
        kind = STAGE_KINDS[stage.kind]
        kwargs = {name: getattr(stage, name) for name in kind.stage_fields}
        if kind.context is not None:
            kwargs.update(kind.context(self))
        return kind.builder(self.train_articles, **kwargs).batches(self.rng)

    # ------------------------------------------------------------------ loss
    def _teacher_vectors(self, units: list[str]) -> torch.Tensor:
        """The base model's standalone (per-sentence) embedding of each unit, cached."""
        missing = list(dict.fromkeys(u for u in units if u not in self._teacher_cache))
        if missing:
            # tokenised as standalone sentences (capped at a whole window, no landmark)
            jobs = self.layout.standalone_jobs(self.tokens.standalone(missing))
            args = (jobs, Pooling.MEAN, self.layout.pad_id, self.device)
            with torch.no_grad():
                if self.peft_model is not None:
                    with self.peft_model.disable_adapter():
                        was = self.model.training
                        self.model.eval()
                        vecs = pool_standalone(self._forward, *args)
                        self.model.train(was)
                elif self.teacher is not None:
                    vecs = pool_standalone(hf_forward(self.teacher), *args)
                else:  # _trainable_model sets one of the two
                    raise RuntimeError("no distillation target: neither a LoRA model nor a frozen copy")
            for u, v in zip(missing, vecs, strict=True):
                self._teacher_cache[u] = v.detach()
        return torch.stack([self._teacher_cache[u] for u in units])

    def _context_teacher_vectors(self, batch: Batch) -> torch.Tensor:
        """``distill_model``'s in-context vectors of every unit of the batch, each example
        laid out as one document the way that model lays documents out at inference."""
        t = self.context_teacher
        assert t is not None
        with torch.no_grad():
            return torch.cat(document_vectors(t.layout, hf_forward(t.model, t.layout), batch, self.device))

    def prepare_batch(self, batch: Batch, stage: StageConfig) -> StepInputs:
        """The host side of a step: ``batch`` laid out, padded and indexed for pooling, its
        queries too, and the standalone ids of the units the distillation target has not
        embedded yet. Runs on the prefetch thread (on the training thread with ``prefetch`` 0)."""
        layout = self.layout
        jobs, counts = document_jobs(layout, batch, self.tokens.units)
        units = prepare_jobs(jobs, counts, layout.pad_id, mean=layout.pooling.reduction == Pooling.MEAN)
        queries = None
        if stage.contrastive_weight:
            texts = [q for ex in batch for q in ex.queries]
            mean = layout.query_pooling.reduction == Pooling.MEAN
            queries = prepare_jobs(self.tokens.query_jobs(texts), [len(texts)], layout.pad_id, mean=mean)
        if stage.distill_weight and self.context_teacher is None:
            self.tokens.standalone([u for ex in batch for u in ex.units if u not in self._teacher_cache])
        lexical = None
        if stage.contrastive_weight and self._analyze is not None:
            k1, b = self.config.lexical_prior_bm25
            lexical = lexical_prior(batch, self._analyze, k1=k1, b=b, weight=self.config.lexical_prior)
        return StepInputs(units, queries, lexical)

    def batch_loss(
        self, batch: Batch, stage: StageConfig, inputs: StepInputs | None = None
    ) -> dict[str, torch.Tensor]:
        """The step's loss terms; ``inputs``: :meth:`prepare_batch` of ``batch``, made here when not given."""
        layout = self.layout
        if inputs is None:
            inputs = self.prepare_batch(batch, stage)
        per_doc = pool_prepared(self._forward, inputs.units, layout.pooling.reduction, self.device)
        counts = [len(ex.units) for ex in batch]
        units = torch.cat(per_doc)
        out: dict[str, torch.Tensor] = {}
        total = units.sum() * 0.0
        if stage.contrastive_weight:
            assert inputs.queries is not None
            spans, preceding, kept, offset = [], [], [], 0
            reach, k = self.config.boundary_window, self.config.front_k
            for ex, n in zip(batch, counts, strict=True):
                cap = self.config.span_cap or None
                spans.extend([[offset + i for i in s[-cap:]] if cap else [offset + i for i in s] for s in ex.spans])
                # the sentences a Front-k hit must not land on: just before the span, same window
                preceding.extend([[offset + i for i in range(max(s[0] - reach, 0), s[0])] for s in ex.spans])
                # the hits whose Front-k passage still ends at or after the answer: z .. z+k-1
                kept.extend([[offset + i for i in range(s[-1], min(s[-1] + k, n))] for s in ex.spans])
                offset += n
            (qvecs,) = pool_prepared(self._forward, inputs.queries, layout.query_pooling.reduction, self.device)
            c = position_aware_contrastive_loss(
                qvecs, units, spans, temperature=self.config.temperature, alpha=self.config.alpha,
                preceding=preceding, margin=self.config.boundary_margin,
                kept=kept, kept_weight=self.config.front_set_weight, prior=inputs.lexical,
                normalize=self.config.span_weights == "mean",
            )
            out["contrastive"] = c
            total = total + stage.contrastive_weight * c
        if stage.distill_weight:
            if self.context_teacher is not None:
                teacher = self._context_teacher_vectors(batch)
            else:
                teacher = self._teacher_vectors([u for ex in batch for u in ex.units])
            dl = distillation_loss(units, teacher)
            out["distill"] = dl
            total = total + stage.distill_weight * dl
        out["loss"] = total
        return out

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
        directory = self.save(directory)
        if self.accelerator.is_main_process:
            state = {
                "step": self.step, "optimizer": self.optimizer.state_dict(), "scheduler": schedule.state_dict(),
                # the stream as of the last batch trained on: the prefetch thread may have drawn further
                "rng": self._rng_state if self._rng_state is not None else self.rng.getstate(),
                "torch_rng": torch.get_rng_state(), "history": self.history,
            }
            if self.device.type == "cuda":  # dropout masks on a GPU come from its own generators
                state["cuda_rng"] = torch.cuda.get_rng_state_all()
            torch.save(state, directory / TRAINER_STATE)
        return directory

    def _resume(self, checkpoint: Path) -> dict[str, Any]:
        """Load a checkpoint's weights and optimiser state; returns its state for :meth:`train`."""
        state_file = checkpoint / TRAINER_STATE
        if not state_file.is_file():
            raise TrainingInputError(f"{checkpoint} is not a training checkpoint (no {TRAINER_STATE})")
        state = torch.load(state_file, map_location="cpu", weights_only=False)
        self._warn_if_changed(checkpoint)
        if self.peft_model is not None:
            load_adapter_weights(self.peft_model, str(checkpoint), self.config)
        else:
            from safetensors.torch import load_file

            self.accelerator.unwrap_model(self.model).load_state_dict(load_file(str(checkpoint / "model.safetensors")))
        self.optimizer.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["torch_rng"])
        if "cuda_rng" in state and self.device.type == "cuda":
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        self.step, self.history = int(state["step"]), list(state["history"])
        self.history.append({"step": self.step, "resumed_from": str(checkpoint)})
        return state

    def _warn_if_changed(self, checkpoint: Path) -> None:
        """Warn when this run's options differ from the checkpoint's in what it trains on or how:
        it then continues, but not as the interrupted run would have (where it runs, how often it
        saves or validates, and its precision may change freely)."""
        saved_file = checkpoint / "train_config.json"
        if not saved_file.is_file():
            return
        saved = json.loads(saved_file.read_text())
        now = self.config.to_dict()
        changed = sorted(
            k for k in now
            if k not in _RESUME_FREE and k in saved and _comparable(saved[k]) != _comparable(now[k])
        )
        if changed:
            message = (f"resuming {checkpoint} with other {', '.join(changed)} than it was trained with: "
                       "the run goes on with the new values")
            warnings.warn(message, UserWarning, stacklevel=3)
            tqdm.write(f"warning: {message}")

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
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.accelerator.wait_for_everyone()
        if not self.accelerator.is_main_process:
            return directory
        cfg = self.config
        # A trained model must never share the base model's vector-store identity.
        config = replace(self.encoder.config, model_name=cfg.model_name or f"{cfg.base_model}+{directory.name}")
        if cfg.expansion:
            config = replace(config, expansion=cfg.expansion, expansion_params=dict(cfg.expansion_params))
        if self.peft_model is not None:
            # a new [LMK] resizes the vocabulary, which makes peft save the whole embedding
            # matrix; the trained row is in the adapter's trainable-token weights
            self.accelerator.unwrap_model(self.model).save_pretrained(
                directory, safe_serialization=True, **({"save_embedding_layers": False} if cfg.new_lmk_token else {})
            )
            replace(config, base_model=cfg.base_model).save(directory)
            # peft records the local path of the base weights; the portable name is base_model
            ac = directory / "adapter_config.json"
            data = json.loads(ac.read_text())
            data["base_model_name_or_path"] = cfg.base_model
            # peft keeps the targets as a set: its order varies between processes
            if isinstance(data.get("target_modules"), list):
                data["target_modules"] = sorted(data["target_modules"])
            ac.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
            (directory / "README.md").unlink(missing_ok=True)  # peft's empty model-card template
            if cfg.new_lmk_token:
                # the loader sizes the embeddings from this tokenizer before the adapter
                # (which holds the trained [LMK] row) is applied
                self.encoder.tokenizer.save_pretrained(directory)
        else:
            model = self.accelerator.unwrap_model(self.model)
            model.save_pretrained(directory, safe_serialization=True)
            self.encoder.tokenizer.save_pretrained(directory)
            replace(config, base_model=None).save(directory)
        # weights of the other kind left by an earlier run in this folder would load with these
        # (transformers applies an adapter_config.json it finds beside full weights)
        stale = _FULL_WEIGHTS if self.peft_model is not None else _ADAPTER_FILES
        for name in stale:
            (directory / name).unlink(missing_ok=True)
        cfg.save(directory / "train_config.json")
        (directory / "train_history.json").write_text(json.dumps(self.history, indent=1) + "\n")
        return directory


#: options a resumed run may change without changing what it computes (or only its precision)
_RESUME_FREE = frozenset({
    "output_dir", "threads", "save_every", "eval_every", "eval_max_questions", "device", "mixed_precision",
    "gradient_checkpointing", "prefetch",
})


def _comparable(value: Any) -> Any:
    """A config value as JSON gives it back (tuples as lists; target lists in any order)."""
    value = json.loads(json.dumps(value))
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return sorted(value)
    return value


#: a full fine-tune's weight files, and a LoRA run's adapter files (``Trainer.save`` writes one kind)
_FULL_WEIGHTS = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json")
_ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors", "adapter_model.bin")


def load_adapter_weights(peft_model: Any, adapter: str, config: TrainConfig) -> None:
    """Start ``peft_model``'s LoRA weights from a saved adapter (directory or packaged name).

    Why: a landmark can be taught on top of an adapter that already makes in-context
    vectors retrieve well (e.g. landmark-minilm's), instead of from zero. The shapes must
    match (same rank and target modules); rows of a new [LMK] token are not in it and keep
    their initialisation.
    """
    from peft import get_peft_model_state_dict, set_peft_model_state_dict
    from safetensors.torch import load_file

    from landmark_rag.encode.models.registry import resolve

    path = Path(resolve(adapter).path)
    cfg = json.loads((path / "adapter_config.json").read_text())
    if config.lora_targets is None:  # the trainer records what "all-linear" resolved to first
        raise ValueError("loading adapter weights needs the run's LoRA target modules resolved")
    if (cfg.get("r"), cfg.get("lora_alpha"), sorted(cfg.get("target_modules") or [])) != (
        config.lora_r,
        config.lora_alpha,
        sorted(config.lora_targets),
    ):
        raise TrainingInputError(f"init_adapter {adapter!r} has a different rank, alpha or targets than this run's LoRA")
    loaded = load_file(str(path / "adapter_model.safetensors"))
    # weights the saved adapter lacks (a new [LMK] row) keep their values
    state = get_peft_model_state_dict(peft_model, save_embedding_layers=False)
    unknown = sorted(set(loaded) - set(state))
    if unknown:
        raise TrainingInputError(f"init_adapter {adapter!r} has weights this model lacks: {unknown[:3]}")
    state.update(loaded)
    set_peft_model_state_dict(peft_model, state)


def _accelerator(config: TrainConfig) -> Any:
    """accelerate's handle on devices, mixed precision and gradient accumulation for ``config``."""
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    cpu = config.device == "cpu" or (config.device is None and not torch.cuda.is_available())
    kind, _, index = (config.device or "").partition(":")
    if kind == "cuda" and index:
        # accelerate places a single process on the current CUDA device: make it the one named
        torch.cuda.set_device(int(index))
    # accelerate keeps one precision per process and refuses another: a second run in the same
    # process (a notebook, a sweep) may choose its own. Only the precision state is dropped; the
    # process-group state of `accelerate launch` (PartialState) stays.
    if AcceleratorState._shared_state and AcceleratorState._shared_state.get("_mixed_precision") not in (
        None, config.mixed_precision
    ):
        AcceleratorState._reset_state()
    return Accelerator(
        mixed_precision=config.mixed_precision,
        gradient_accumulation_steps=config.gradient_accumulation_steps,
        cpu=cpu,
    )


def _context_teacher(config: TrainConfig, device: torch.device, max_length: int) -> LandmarkEncoder | None:
    """``config.distill_model`` loaded frozen with the student's window, or ``None``."""
    if not config.distill_model:
        return None
    teacher = LandmarkEncoder.from_pretrained(config.distill_model, device=device, max_length=max_length)
    teacher.model.eval().requires_grad_(False)
    return teacher


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


def _longdoc_context(trainer: Trainer) -> dict[str, Any]:
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
        LongDocBuilder, ("examples_per_batch", "queries_per_example", "contrastive_weight"), _longdoc_context
    ),
}


def load_articles(
    config: TrainConfig, encoder: LandmarkEncoder
) -> tuple[list[SegmentedArticle], list[SegmentedArticle]]:
    """Train and validation documents, split by document, segmented the encoder's way
    (:func:`~landmark_rag.train.documents.select_documents`)."""
    train, val = select_documents(config)
    docs = [*train, *val]
    segmented = segment_articles(tqdm(docs, desc="segmenting", unit="doc", disable=len(docs) < 100), encoder.segment)
    return segmented[: len(train)], segmented[len(train) :]


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
        encoder = _base_encoder(config)
    train_articles, val_articles = load_articles(config, encoder)
    trainer = Trainer(encoder, config, train_articles, val_articles)
    history = trainer.train(resume=resume)
    trainer.save(trainer.config.output_dir)
    encoder.model.eval()
    return encoder, history


def _base_encoder(config: TrainConfig) -> LandmarkEncoder:
    """The base model, set up with the run's pooling, landmark and window settings."""
    overrides: dict[str, Any] = {"pooling": config.pooling, "query_pooling": config.query_pooling}
    if config.lmk_token:
        overrides["lmk_token"] = config.lmk_token
    if config.max_length:
        overrides["max_length"] = config.max_length
    if config.window_overlap is not None:
        overrides["window_overlap"] = config.window_overlap
    if config.landmark_attention != "full":
        overrides["landmark_attention"] = config.landmark_attention
    if config.landmark_span != 1:
        overrides["landmark_span"] = config.landmark_span
    with warnings.catch_warnings():
        # a base model is untrained by definition: training is what the warning asks for
        warnings.simplefilter("ignore", UntrainedLandmarkWarning)
        # fp32 weights on every device: on a GPU the loader's default would be bf16 weights, and
        # LoRA then trains against a rounded base; `mixed_precision` runs the maths in bf16/fp16
        # under autocast while the weights and the optimiser stay fp32
        return LandmarkEncoder.from_pretrained(
            config.base_model, device=config.device or None, dtype="float32", **overrides
        )


def check_device(config: TrainConfig) -> None:
    """A clear error, before anything loads, when ``device`` names an accelerator this torch cannot use."""
    device, _, index = (config.device or "").partition(":")
    if index and (device != "cuda" or not index.isdigit()):
        raise TrainingInputError(f"--device {config.device}: name cpu, cuda, mps or cuda:N (N a GPU's number)")
    if device == "cuda" and not torch.cuda.is_available():
        raise TrainingInputError(
            f"--device cuda: no CUDA device is visible to torch {torch.__version__}"
            + (" (a CPU-only build)" if torch.version.cuda is None else "")
            + "; leave --device out to train on the CPU"
        )
    if index and int(index) >= torch.cuda.device_count():
        raise TrainingInputError(f"--device {config.device}: this machine has {torch.cuda.device_count()} GPU(s)")
    if device == "mps" and not torch.backends.mps.is_available():
        raise TrainingInputError("--device mps: the MPS backend is not available on this machine")
    if config.mixed_precision == "fp16" and device in ("", "cpu") and not torch.cuda.is_available():
        raise TrainingInputError("--mixed-precision fp16 needs a GPU; on a CPU use bf16 (or no)")


def set_dropout(model: torch.nn.Module, p: float) -> None:
    """Every dropout of ``model`` to ``p``: its ``nn.Dropout`` layers (BERT's and MPNet's
    attention dropout is one, read as ``.p`` by SDPA too) and the attention modules that keep
    a plain ``attention_dropout`` number (Llama, Mistral)."""
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = p
        elif isinstance(getattr(module, "attention_dropout", None), float):
            setattr(module, "attention_dropout", p)  # noqa: B010 - a plain float attribute, not a submodule
