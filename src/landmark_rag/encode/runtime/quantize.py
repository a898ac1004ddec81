"""Opt-in int8 dynamic quantisation of an encoder's linear layers for CPU inference.

Why: on CPU the encoder's time is almost all in ``nn.Linear`` (attention projections and the
feed-forward block). Dynamic quantisation stores those weights as int8 and quantises the
activations on the fly, which PyTorch's fbgemm/onednn kernels run faster than fp32 matmuls
(docs/benchmarks.md, "Indexing throughput"). Weights get one scale per output channel
(``per_channel_dynamic_qconfig``) rather than one per matrix: the same speed, and it keeps
more of the model's retrieval quality.
It changes the vectors slightly, so it is never a default:
``LandmarkEncoder.from_pretrained(..., quantize="int8")`` asks for it (the CLI has no flag for
it), and the quality it keeps is measured by ``benchmarks/quantize_quality.py``.
"""

from __future__ import annotations

import warnings
from typing import Any

QUANTIZE_MODES = ("int8",)


def quantize_model(model: Any, mode: str | None, device: Any) -> Any:
    """``model`` with its ``nn.Linear`` layers dynamically quantised (``mode="int8"``), or as is."""
    if mode is None:
        return model
    if mode not in QUANTIZE_MODES:
        raise ValueError(f"quantize must be one of {QUANTIZE_MODES} or None, not {mode!r}")
    if getattr(device, "type", str(device)) != "cpu":
        raise ValueError("int8 dynamic quantisation runs on CPU only; on a GPU use the default bf16")
    import torch

    with warnings.catch_warnings():  # torch.ao.quantization announces its move to torchao
        warnings.simplefilter("ignore")
        from torch.ao.quantization import per_channel_dynamic_qconfig

        return torch.ao.quantization.quantize_dynamic(
            model, {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8
        )
