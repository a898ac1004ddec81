"""Pin glibc's mmap threshold so encoding a very long document does not creep in memory.

Why: glibc raises its mmap threshold *dynamically* each time a large block (the first
activations of a forward pass) is freed; later large activations are then carved out of
the heap, which fragments and is never returned to the system, so encoding a very long
document keeps growing in memory. Pinned at glibc's initial threshold, the growth stays flat
in the document's length (docs/benchmarks.md, "Memory of a long document").
``mallopt(M_MMAP_THRESHOLD, n)`` pins it exactly as the ``MALLOC_MMAP_THRESHOLD_``
environment variable does, but without asking the user to set anything.

Training wants the opposite (:func:`keep_freed_memory`): a step allocates and frees the same
few GB of activations and gradients every time, and with each large block a mapping of its own,
the kernel zero-fills every page of them again at every step.

Both are process-wide, so each is done once, only on glibc, and never over a choice the user
made: an explicit ``MALLOC_MMAP_THRESHOLD_`` (or, for training, ``MALLOC_MMAP_MAX_`` or
``MALLOC_TRIM_THRESHOLD_``) wins, and ``LANDMARK_RAG_MALLOPT=0`` turns both off.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
from collections.abc import Callable
from typing import cast

#: glibc's ``M_TRIM_THRESHOLD``, ``M_MMAP_THRESHOLD`` and ``M_MMAP_MAX`` parameter numbers (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_MMAP_MAX = -4
#: free memory at the top of the heap that training keeps rather than hands back (1 GiB)
KEEP_FREE = 1 << 30
#: glibc's initial (pre-dynamic) threshold: blocks at least this big get their own mmap.
DEFAULT_THRESHOLD = 128 * 1024

_LOCK = threading.Lock()
_DONE: bool | None = None
_KEPT: bool | None = None


def pin_mmap_threshold(threshold: int = DEFAULT_THRESHOLD) -> bool:
    """Pin the mmap threshold once per process; returns whether it is pinned (by us or the user)."""
    global _DONE
    with _LOCK:
        if _DONE is not None:
            return _DONE
        _DONE = _pin(threshold)
        return _DONE


def keep_freed_memory() -> bool:
    """For training on a CPU: every block from the heap, and freed memory kept there for the
    next step; returns whether that holds (set here or by the user).

    Why: a training step allocates and frees the same activations and gradients every step.
    Where each large block is a mapping of its own (as :func:`pin_mmap_threshold` makes every
    block of 128 KiB or more), the kernel zero-fills each of its pages again at every step: a
    landmark-mpnet step on this project's 2-core CPU made about two million page faults, and a
    quarter to a third of the run's CPU time went to the kernel. With no mappings (``M_MMAP_MAX``
    0) and the heap's top kept up to :data:`KEEP_FREE`, the next step reuses the same memory
    (1.3x the steps per second for about 1.2 GB more peak memory: docs/training.md). Once set it
    holds for the rest of the process, encoding included (long documents then take more memory)."""
    global _KEPT
    with _LOCK:
        if _KEPT is None:
            _KEPT = _keep()
        return _KEPT


def _keep() -> bool:
    if "MALLOC_MMAP_MAX_" in os.environ or "MALLOC_TRIM_THRESHOLD_" in os.environ:
        return True  # the user's own setting is already in force
    mallopt = _mallopt()
    if mallopt is None:
        return False
    return bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, KEEP_FREE))


def _pin(threshold: int) -> bool:
    if "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return True  # the user's own setting is already in force
    mallopt = _mallopt()
    return mallopt is not None and bool(mallopt(M_MMAP_THRESHOLD, int(threshold)))


def _mallopt() -> Callable[[int, int], int] | None:
    """glibc's ``mallopt``, or ``None``: not glibc, or ``LANDMARK_RAG_MALLOPT=0``."""
    if os.environ.get("LANDMARK_RAG_MALLOPT", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl and other libcs have no mallopt
        return None
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return cast("Callable[[int, int], int]", mallopt)
