"""glibc memory policies: the encoder pins the mmap threshold, training keeps freed memory;
each once per process, unless the user decided."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.child_env import pythonpath


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
@pytest.mark.parametrize(
    ("policy", "env", "expected"),
    [
        ("pin_mmap_threshold", {}, "True"),
        ("pin_mmap_threshold", {"LANDMARK_RAG_MALLOPT": "0"}, "False"),
        ("pin_mmap_threshold", {"MALLOC_MMAP_THRESHOLD_": "65536"}, "True"),
        ("keep_freed_memory", {}, "True"),
        ("keep_freed_memory", {"LANDMARK_RAG_MALLOPT": "0"}, "False"),
        ("keep_freed_memory", {"MALLOC_MMAP_MAX_": "0"}, "True"),
    ],
)
def test_each_policy_is_set_once_unless_the_user_decides(policy: str, env: dict[str, str], expected: str) -> None:
    """The encoder's pin and training's kept memory: set once per process, never over the
    user's own glibc setting, and not at all with ``LANDMARK_RAG_MALLOPT=0``."""
    code = f"from landmark_rag.encode.runtime.malloc import {policy} as set_it\nprint(set_it(), set_it())\n"
    base = {k: v for k, v in os.environ.items() if k != "LANDMARK_RAG_MALLOPT" and not k.startswith("MALLOC_")}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
        env={**base, **env, "PYTHONPATH": pythonpath()},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [expected, expected]


FAULTS = r"""
import resource, sys
import torch
from landmark_rag.encode.runtime import malloc

if sys.argv[1] == "pinned":
    malloc.pin_mmap_threshold()
else:
    malloc.pin_mmap_threshold()  # what an encoder does first; training then keeps memory
    print("kept" if malloc.keep_freed_memory() else "not kept", file=sys.stderr)
size = 64 << 20  # one step's large activation: allocated, written and freed at every step
faults = []
for _ in range(12):  # the first steps lay the heap out (thread pools start, aligned blocks)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    block = torch.ones(size // 4)  # torch, not numpy: numpy asks for huge pages itself
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    del block
print(*faults[-5:])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_training_memory_is_reused_instead_of_faulted_in_again() -> None:
    """Kept: a 64 MiB block allocated again and again, as every training step does, reuses the
    pages of the last one once the heap is laid out (next to no page faults); with each large
    block its own mapping (the encoder's pin alone) every page of it faults in every time.
    Judged on most of the last five steps, not each: on a busy machine the kernel may take
    back the kept pages once in a while (one step faults them in again, the next reuse them)."""
    pages = (64 << 20) // 4096
    base = {k: v for k, v in os.environ.items() if k != "LANDMARK_RAG_MALLOPT" and not k.startswith("MALLOC_")}
    faults: dict[str, list[int]] = {}
    for policy in ("pinned", "kept"):
        out = subprocess.run(
            [sys.executable, "-c", FAULTS, policy], capture_output=True, text=True, timeout=120,
            env={**base, "PYTHONPATH": pythonpath()},
        )
        assert out.returncode == 0, out.stderr
        faults[policy] = [int(x) for x in out.stdout.split()]
    assert all(f > pages // 2 for f in faults["pinned"]), faults
    assert sum(f < pages // 20 for f in faults["kept"]) >= 4, faults

