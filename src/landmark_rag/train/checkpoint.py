"""Saving a training run: the model directory it writes, and checkpoints to resume from.

Why its own module: what a run leaves behind has rules of its own. A LoRA run writes a
small adapter that names its base model portably, a full fine-tune the whole model, and
neither may leave the other kind's files behind (:func:`save_model`); a checkpoint adds
what resuming needs to continue exactly where the run stopped (:func:`save_checkpoint`,
:func:`load_checkpoint`), and says which options a resumed run changed
(:func:`warn_if_changed`). The loop only calls them.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from tqdm.auto import tqdm

from landmark_rag.train.config import TrainConfig, TrainingInputError
from landmark_rag.train.models import load_adapter_weights

if TYPE_CHECKING:
    from landmark_rag.train.trainer import Trainer

#: File in a checkpoint directory holding what a resumed run needs beyond the weights.
TRAINER_STATE = "trainer_state.pt"

#: options a resumed run may change without changing what it computes (or only its precision)
RESUME_FREE = frozenset({
    "output_dir", "threads", "save_every", "eval_every", "eval_max_questions", "device", "mixed_precision",
    "gradient_checkpointing", "prefetch",
})


def comparable(value: Any) -> Any:
    """A config value as JSON gives it back (tuples as lists; target lists in any order)."""
    value = json.loads(json.dumps(value))
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return sorted(value)
    return value


#: a full fine-tune's weight files, and a LoRA run's adapter files (``Trainer.save`` writes one kind)
FULL_WEIGHTS = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json")
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors", "adapter_model.bin")


def save_model(trainer: Trainer, directory: str | Path) -> Path:
    """Write the directory ``Trainer.save`` documents; returns it."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    trainer.accelerator.wait_for_everyone()
    if not trainer.accelerator.is_main_process:
        return directory
    cfg = trainer.config
    # A trained model must never share the base model's vector-store identity.
    config = replace(trainer.encoder.config, model_name=cfg.model_name or f"{cfg.base_model}+{directory.name}")
    if cfg.expansion:
        config = replace(config, expansion=cfg.expansion, expansion_params=dict(cfg.expansion_params))
    if trainer.peft_model is not None:
        # a new [LMK] resizes the vocabulary, which makes peft save the whole embedding
        # matrix; the trained row is in the adapter's trainable-token weights
        trainer.accelerator.unwrap_model(trainer.model).save_pretrained(
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
            trainer.encoder.tokenizer.save_pretrained(directory)
    else:
        model = trainer.accelerator.unwrap_model(trainer.model)
        model.save_pretrained(directory, safe_serialization=True)
        trainer.encoder.tokenizer.save_pretrained(directory)
        replace(config, base_model=None).save(directory)
    # weights of the other kind left by an earlier run in this folder would load with these
    # (transformers applies an adapter_config.json it finds beside full weights)
    stale = FULL_WEIGHTS if trainer.peft_model is not None else ADAPTER_FILES
    for name in stale:
        (directory / name).unlink(missing_ok=True)
    cfg.save(directory / "train_config.json")
    (directory / "train_history.json").write_text(json.dumps(trainer.history, indent=1) + "\n")
    return directory


def save_checkpoint(trainer: Trainer, directory: str | Path, schedule: Any) -> Path:
    """A model directory (``Trainer.save``) plus :data:`TRAINER_STATE`, as ``Trainer.save_checkpoint`` documents."""
    directory = trainer.save(directory)
    if trainer.accelerator.is_main_process:
        state = {
            "step": trainer.step, "optimizer": trainer.optimizer.state_dict(), "scheduler": schedule.state_dict(),
            # the stream as of the last batch trained on: the prefetch thread may have drawn further
            "rng": trainer._rng_state if trainer._rng_state is not None else trainer.rng.getstate(),
            "torch_rng": torch.get_rng_state(), "history": trainer.history,
        }
        if trainer.device.type == "cuda":  # dropout masks on a GPU come from its own generators
            state["cuda_rng"] = torch.cuda.get_rng_state_all()
        torch.save(state, directory / TRAINER_STATE)
    return directory


def load_checkpoint(trainer: Trainer, checkpoint: Path) -> dict[str, Any]:
    """Load a checkpoint's weights, optimiser state, random states, step and history into
    ``trainer``; returns its state (the schedule and data stream are restored by the loop,
    at the stage the checkpoint is in)."""
    state_file = checkpoint / TRAINER_STATE
    if not state_file.is_file():
        raise TrainingInputError(f"{checkpoint} is not a training checkpoint (no {TRAINER_STATE})")
    state = torch.load(state_file, map_location="cpu", weights_only=False)
    warn_if_changed(trainer.config, checkpoint)
    if trainer.peft_model is not None:
        load_adapter_weights(trainer.peft_model, str(checkpoint), trainer.config)
    else:
        from safetensors.torch import load_file

        trainer.accelerator.unwrap_model(trainer.model).load_state_dict(load_file(str(checkpoint / "model.safetensors")))
    trainer.optimizer.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["torch_rng"])
    if "cuda_rng" in state and trainer.device.type == "cuda":
        torch.cuda.set_rng_state_all(state["cuda_rng"])
    trainer.step, trainer.history = int(state["step"]), list(state["history"])
    trainer.history.append({"step": trainer.step, "resumed_from": str(checkpoint)})
    return state


def warn_if_changed(config: TrainConfig, checkpoint: Path) -> None:
    """Warn when this run's options differ from the checkpoint's in what it trains on or how:
    it then continues, but not as the interrupted run would have (where it runs, how often it
    saves or validates, and its precision may change freely)."""
    saved_file = checkpoint / "train_config.json"
    if not saved_file.is_file():
        return
    saved = json.loads(saved_file.read_text())
    now = config.to_dict()
    changed = sorted(
        k for k in now
        if k not in RESUME_FREE and k in saved and comparable(saved[k]) != comparable(now[k])
    )
    if changed:
        message = (f"resuming {checkpoint} with other {', '.join(changed)} than it was trained with: "
                   "the run goes on with the new values")
        warnings.warn(message, UserWarning, stacklevel=4)
        tqdm.write(f"warning: {message}")
