"""bf16 document windows on CPUs that multiply bf16 in hardware.

Why: on a CPU with AVX512-BF16 or AMX (AMD Zen 4 and later, Intel Cooper Lake / Sapphire
Rapids and later) oneDNN runs bf16 matrix products at about twice the fp32 rate, and a
small encoder spends nearly all its time in them. Running the document windows under
``torch.autocast("cpu", dtype=torch.bfloat16)`` makes indexing markedly faster with the
same retrieval quality (held-out figures within noise of fp32: docs/benchmarks.md, "bf16
document windows").

Why autocast and not bf16 weights: the weights stay fp32 in memory, so queries (short,
latency-bound) run in fp32 exactly like the ONNX export the CLI's cold query uses
(``encode.export.onnx_query``), training and ``quantize="int8"`` start from the true weights,
and autocast keeps layer norms and softmax in fp32. A store built either way is searched
the same way: bf16 documents with fp32 queries rank as fp32 documents do.

Where the CPU has no native bf16 (older x86, most ARM) bf16 is emulated and slower than
fp32, so nothing changes there. ``LandmarkEncoder.from_pretrained(..., dtype="float32")``
or ``LANDMARK_RAG_CPU_BF16=0`` keeps fp32 documents everywhere.
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager, nullcontext
from functools import lru_cache
from typing import Any

#: Environment variable that switches bf16 document windows off (``0``, ``false``, ``no``, ``off``).
ENV_SWITCH = "LANDMARK_RAG_CPU_BF16"


@lru_cache(maxsize=1)
def native_cpu_bf16() -> bool:
    """Whether this CPU has bf16 dot-product instructions (AVX512-BF16 or AMX tiles)."""
    import torch

    for probe in ("_is_avx512_bf16_supported", "_is_amx_tile_supported"):
        fn = getattr(torch.cpu, probe, None)
        try:
            if fn is not None and fn():
                return True
        except Exception:  # noqa: BLE001, S112 - a probe missing from this torch build means "no"
            continue
    return False


def cpu_bf16_enabled() -> bool:
    """Whether the environment leaves bf16 document windows on (``LANDMARK_RAG_CPU_BF16``)."""
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "false", "no", "off")


def default_document_autocast(device: Any, dtype: Any, quantize: str | None) -> Any:
    """The autocast dtype for document windows when the caller chose no ``dtype``: bf16 on a
    CPU with native bf16 (unless switched off or int8-quantised), else ``None`` (run as loaded)."""
    if dtype is not None or quantize is not None or getattr(device, "type", None) != "cpu":
        return None
    if not cpu_bf16_enabled() or not native_cpu_bf16():
        return None
    import torch

    return torch.bfloat16


def autocast(device: Any, dtype: Any) -> AbstractContextManager[Any]:
    """``torch.autocast`` for ``dtype`` on a CPU ``device``; a no-op otherwise.

    Autocast state is per thread, so this is entered inside each worker's forward pass
    (``encode.runtime.parallel`` runs batches on a thread pool), never around the pool.
    """
    if dtype is None or getattr(device, "type", None) != "cpu":
        return nullcontext()
    import torch

    # no weight cache: one region is one forward pass, which uses each weight once, so the
    # cache would only hold a bf16 copy of the model per worker thread until the pass ends
    return torch.autocast("cpu", dtype=dtype, cache_enabled=False)
