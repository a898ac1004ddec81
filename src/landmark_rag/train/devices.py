"""Where a training run computes: the device checked up front, and accelerate's handle on it.

Why its own module: a wrong ``--device`` or precision should fail with a clear message
before anything loads (:func:`check_device`), and accelerate needs its per-process state
set up for this run's device and precision (:func:`make_accelerator`); neither is part of
what a step computes.
"""

from __future__ import annotations

from typing import Any

import torch

from landmark_rag.train.config import TrainConfig, TrainingInputError


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


def make_accelerator(config: TrainConfig) -> Any:
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
