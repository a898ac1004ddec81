"""How a loaded encoder will run here: what the defaults chose on this machine, in one record.

Why: most of the encoder's speed settings are decided at load or call time from the machine
(bf16 document windows only where a timed bf16 product beats fp32, SDPA where the model class
has it, preparation workers on an accelerator's many-core host, batches sized from free GPU
memory, flash-tokenizer where installed and agreeing with the backend). When indexing is slower
than expected, the first question is which of those applied; :func:`describe` answers it
without encoding anything. ``LandmarkEncoder.runtime()`` and ``landmark-rag info --runtime``
show it.
"""

from __future__ import annotations

import importlib.metadata
import inspect
from dataclasses import asdict, dataclass
from typing import Any

import torch

from landmark_rag.encode.runtime import process as prepare_process
from landmark_rag.encode.runtime.parallel import auto_workers
from landmark_rag.segment.tokens import text_tokenizer

__all__ = ["RuntimeInfo", "describe", "flash_tokenizer"]


@dataclass(frozen=True)
class RuntimeInfo:
    """What an encoder's defaults chose on this machine (plain values, JSON-ready).

    ``weights``: the parameters' dtype (``int8 dynamic`` for an int8-quantised model);
    ``documents`` / ``queries``: the precision each runs in (documents may run under bf16
    autocast over fp32 weights on a CPU where that pays); ``attention``: transformers'
    attention implementation (``sdpa``, ``eager``, ...); ``compiled``: whether document windows
    go through ``torch.compile``; ``tokenizer``: what tokenises text (flash-tokenizer takes
    ASCII sentences where installed and agreeing); ``preparation_workers``: worker processes
    a large ``encode_documents`` call is prepared in (0: the calling process);
    ``concurrent_batches``: batches run at once on a CPU; ``batching``: how a call's windows
    are batched when it gives no ``batch_tokens``; ``torch_threads``: torch's intra-op threads;
    ``window_tokens`` / ``window_overlap``: tokens per window and tokens consecutive windows share.
    """

    model: str
    device: str
    weights: str
    documents: str
    queries: str
    attention: str | None
    compiled: bool
    tokenizer: str
    preparation_workers: int
    concurrent_batches: int
    batching: str
    torch_threads: int
    window_tokens: int
    window_overlap: int

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (for ``json.dumps``)."""
        return asdict(self)


def describe(encoder: Any) -> RuntimeInfo:
    """The :class:`RuntimeInfo` of a loaded ``LandmarkEncoder`` (reads settings; encodes nothing).

    On CUDA the batch size shown is what :meth:`LandmarkEncoder.auto_batch_tokens` gives now:
    it follows the device's free memory, so a later call may differ."""
    device = encoder.device
    weights = _weights(encoder.model)
    autocast = encoder.document_autocast
    documents = _dtype_name(autocast) + f" autocast over {weights} weights" if autocast is not None else weights
    if device.type == "cuda":
        batching = f"{encoder.auto_batch_tokens():,} padded tokens a batch (from free device memory)"
    else:
        size = inspect.signature(type(encoder).encode_documents).parameters["batch_size"].default
        batching = f"{size} windows a batch (encode_documents' batch_size)"
    return RuntimeInfo(
        model=str(encoder.model_name),
        device=str(device),
        weights=weights,
        documents=documents,
        queries=weights,
        attention=getattr(getattr(encoder.model, "config", None), "_attn_implementation", None),
        compiled=encoder.document_model is not None,
        tokenizer=_tokenizer(encoder.tokenizer),
        preparation_workers=prepare_process.pool_size(
            encoder.prepare_process, encoder.prepare_workers, device.type != "cpu"
        ),
        concurrent_batches=encoder.workers if encoder.workers is not None else auto_workers(device),
        batching=batching,
        torch_threads=torch.get_num_threads(),
        window_tokens=int(encoder.max_length),
        window_overlap=int(encoder.overlap),
    )


def _weights(model: Any) -> str:
    """The parameters' dtype, or ``int8 dynamic`` where linear layers were quantised."""
    if any(type(m).__module__.startswith("torch.ao.nn.quantized") for m in model.modules()):
        return "int8 dynamic"
    for p in model.parameters():
        if p.is_floating_point():
            return _dtype_name(p.dtype)
    return "unknown"


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def flash_tokenizer(tokenizer: Any) -> str | None:
    """``flash-tokenizer VERSION`` where it takes this tokenizer's ASCII sentences (probed
    against the backend the first time, as encoding does), else ``None``."""
    twin = text_tokenizer(tokenizer).twin
    if twin is None or twin.flash() is None:
        return None
    return f"flash-tokenizer {_version('flash-tokenizer')}"


def _tokenizer(tokenizer: Any) -> str:
    """Which code tokenises: transformers' own call, the tokenizers backend, or flash-tokenizer
    for ASCII text."""
    if not text_tokenizer(tokenizer).fast:
        return f"transformers ({type(tokenizer).__name__})"
    backend = f"tokenizers {_version('tokenizers')}"
    flash = flash_tokenizer(tokenizer)
    return f"{flash} for ASCII text, {backend} otherwise" if flash else backend


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"
