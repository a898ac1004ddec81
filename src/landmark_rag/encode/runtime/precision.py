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
fp32, so nothing changes there; nor where it has the instructions but they do not pay (timed
once per process, :func:`bf16_pays`). ``LandmarkEncoder.from_pretrained(..., dtype="float32")``
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
    """Whether this CPU has bf16 dot-product instructions (AVX512-BF16 or AMX tiles) and they
    pay here: a bf16 matrix product timed against fp32 once per process (:func:`bf16_pays`)."""
    import torch

    def has(probe: str) -> bool:
        fn = getattr(torch.cpu, probe, None)
        try:
            return bool(fn is not None and fn())
        except Exception:  # noqa: BLE001 - a probe missing from this torch build means "no"
            return False

    return any(has(p) for p in ("_is_avx512_bf16_supported", "_is_amx_tile_supported")) and bf16_pays()


#: bf16 must take at most this share of fp32's time on the probe to be used
BF16_MARGIN = 0.75


def bf16_pays(rows: int = 512, width: int = 384, reps: int = 3) -> bool:
    """Whether an encoder-sized matrix product (``rows x width`` by ``width x 4 width``, a
    MiniLM feed-forward layer) runs clearly faster under bf16 autocast than in fp32 here.

    Why measured and not read off the CPU flags: the flag is not the speed. On the AMD EPYC
    this project ran on, bf16 products took about half fp32's time; on an Intel Xeon that
    reports AVX512-BF16 too, twice fp32's time, and bf16 windows made indexing 1.5x slower.
    A few milliseconds, best of ``reps``; a margin (:data:`BF16_MARGIN`) keeps a noisy probe
    from choosing bf16 where it would not pay."""
    import time

    import torch

    x = torch.randn(rows, width)
    layer = torch.nn.Linear(width, 4 * width)

    def best(bf16: bool) -> float:
        out = float("inf")
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16, cache_enabled=False):
            layer(x)  # the first call sets up the kernel
            for _ in range(reps):
                t0 = time.perf_counter()
                layer(x)
                out = min(out, time.perf_counter() - t0)
        return out

    return best(True) <= BF16_MARGIN * best(False)


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
