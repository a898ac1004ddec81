"""Pin glibc's mmap threshold so encoding a very long document does not creep in memory.

Why: glibc raises its mmap threshold *dynamically* each time a large block (the first
activations of a forward pass) is freed; later large activations are then carved out of
the heap, which fragments and is never returned to the system, so encoding a very long
document keeps growing in memory. Pinned at glibc's initial threshold, the growth stays flat
in the document's length (docs/benchmarks.md, "Memory of a long document").
``mallopt(M_MMAP_THRESHOLD, n)`` pins it exactly as the ``MALLOC_MMAP_THRESHOLD_``
environment variable does, but without asking the user to set anything.

It is process-wide, so it is done once, only on glibc, and never over a choice the user made:
an explicit ``MALLOC_MMAP_THRESHOLD_`` wins, and ``LANDMARK_RAG_MALLOPT=0`` turns it off.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading

#: glibc's ``M_MMAP_THRESHOLD`` parameter number (malloc.h).
M_MMAP_THRESHOLD = -3
#: glibc's initial (pre-dynamic) threshold: blocks at least this big get their own mmap.
DEFAULT_THRESHOLD = 128 * 1024

_LOCK = threading.Lock()
_DONE: bool | None = None


def pin_mmap_threshold(threshold: int = DEFAULT_THRESHOLD) -> bool:
    """Pin the mmap threshold once per process; returns whether it is pinned (by us or the user)."""
    global _DONE
    with _LOCK:
        if _DONE is not None:
            return _DONE
        _DONE = _pin(threshold)
        return _DONE


def _pin(threshold: int) -> bool:
    if "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return True  # the user's own setting is already in force
    if os.environ.get("LANDMARK_RAG_MALLOPT", "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl and other libcs have no mallopt
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, int(threshold)))
