"""Data-parallel CPU encoding: several batches at once, each on fewer intra-op threads.

Why: a small encoder's forward pass on a few CPU cores spends a share of every operator in
OpenMP fork/join and in the serial parts between parallel regions (layer norms, softmax on
short rows, Python). Running ``workers`` batches concurrently, each with
``cores // workers`` intra-op threads, keeps every core busy through those gaps. torch
releases the GIL inside its operators, so Python threads are enough; each worker sets its
own thread count, which in torch's OpenMP backend is per calling thread. Vectors are the
same as sequential encoding (every window runs the same kernels, only on other threads).

The measured effect is in docs/benchmarks.md ("Indexing throughput side by side").
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import torch

T = TypeVar("T")

__all__ = ["auto_workers", "run_batches"]


def auto_workers(device: torch.device) -> int:
    """Concurrent batches when the caller does not say: 2 on a CPU with at least 2 torch
    threads, else 1 (a GPU queues kernels on one stream; more threads would only contend)."""
    return 2 if device.type == "cpu" and torch.get_num_threads() >= 2 else 1


def run_batches(batches: Sequence[T], fn: Callable[[T], None], workers: int) -> None:
    """Call ``fn`` on every batch, ``workers`` at a time; the first exception propagates.

    The calling thread's torch thread count is restored afterwards, and so is the count
    that threads created later start with (torch keeps it process-wide as well).
    """
    if workers <= 1 or len(batches) <= 1:
        for b in batches:
            fn(b)
        return
    total = torch.get_num_threads()
    per_worker = max(1, total // workers)
    local = threading.local()

    def run(b: T) -> None:
        if getattr(local, "threads", None) != per_worker:
            torch.set_num_threads(per_worker)
            local.threads = per_worker
        fn(b)

    try:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="landmark-encode") as pool:
            for f in [pool.submit(run, b) for b in batches]:
                f.result()
    finally:
        torch.set_num_threads(total)
