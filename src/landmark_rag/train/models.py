"""The models of a training run: the base encoder, what the optimizer trains, the teachers.

Why its own module: before the first step a run decides what it trains and against what.
The base model is loaded with the run's pooling and window settings in float32
(:func:`base_encoder`); LoRA layers are injected into it in place, or the whole model is
trained next to a frozen copy of itself as the distillation target (:func:`trainable_model`);
an adapter can start from a saved one (:func:`load_adapter_weights`, also how a resumed
run gets its adapter back); and ``distill_model`` adds a frozen in-context teacher
(:func:`context_teacher`). The loop only uses what these give it.
"""

from __future__ import annotations

import copy
import json
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import torch

from landmark_rag.encode.encoder import LandmarkEncoder
from landmark_rag.encode.untrained import UntrainedLandmarkWarning
from landmark_rag.train.config import TrainConfig, TrainingInputError


@dataclass(frozen=True)
class Trainable:
    """What :func:`trainable_model` made: the module the optimizer trains, the peft model
    (LoRA) or the frozen copy of the base (full fine-tuning) that is the distillation
    target, and the run's config with LoRA's resolved target modules recorded."""

    model: torch.nn.Module
    peft_model: Any
    teacher: torch.nn.Module | None
    config: TrainConfig


def trainable_model(encoder: LandmarkEncoder, config: TrainConfig) -> Trainable:
    """What the optimizer trains: LoRA layers injected into the encoder's model, or the
    whole model next to a frozen copy of it (the distillation target)."""
    if config.model_dropout is not None:  # before LoRA's layers exist: they keep lora_dropout
        set_dropout(encoder.model, float(config.model_dropout))
    if not config.lora:
        # The distillation target must stay the BASE model: a frozen copy.
        teacher = copy.deepcopy(encoder.model).eval().requires_grad_(False)
        return Trainable(encoder.model, None, teacher, config)
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
    peft_model = get_peft_model(encoder.model, lora)
    if config.lora_targets is None:
        # record what "all-linear" resolved to as module-name suffixes (peft's matching
        # rule: the same modules), so train_config.json and adapter_config.json name
        # e.g. q/k/v/o/dense rather than every layer's path, and the run reproduces
        # peft types its configs as the PeftConfig base; the adapter made above is a LoraConfig
        peft_cfg = cast(LoraConfig, peft_model.peft_config["default"])
        resolved = peft_cfg.target_modules
        if resolved is None or isinstance(resolved, str):  # a str would be read letter by letter
            raise RuntimeError(f"peft left the LoRA target modules unresolved: {resolved!r}")
        names = sorted({str(n).rsplit(".", 1)[-1] for n in resolved})
        # peft holds target_modules as a set (LoraConfig.__post_init__ makes one), though its
        # annotation says list[str] | str
        peft_cfg.target_modules = set(names)  # type: ignore[assignment]
        config = replace(config, lora_targets=names)
    if config.init_adapter:
        load_adapter_weights(peft_model, config.init_adapter, config)
    return Trainable(peft_model, peft_model, None, config)


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


def context_teacher(config: TrainConfig, device: torch.device, max_length: int) -> LandmarkEncoder | None:
    """``config.distill_model`` loaded frozen with the student's window, or ``None``."""
    if not config.distill_model:
        return None
    teacher = LandmarkEncoder.from_pretrained(config.distill_model, device=device, max_length=max_length)
    teacher.model.eval().requires_grad_(False)
    return teacher


def base_encoder(config: TrainConfig) -> LandmarkEncoder:
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


def set_dropout(model: torch.nn.Module, p: float) -> None:
    """Every dropout of ``model`` to ``p``: its ``nn.Dropout`` layers (BERT's and MPNet's
    attention dropout is one, read as ``.p`` by SDPA too) and the attention modules that keep
    a plain ``attention_dropout`` number (Llama, Mistral)."""
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = p
        elif isinstance(getattr(module, "attention_dropout", None), float):
            setattr(module, "attention_dropout", p)  # noqa: B010 - a plain float attribute, not a submodule
