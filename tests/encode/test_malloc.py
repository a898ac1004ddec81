"""The encoder pins glibc's mmap threshold once per process, unless the user decided."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
@pytest.mark.parametrize(
    ("env", "expected"),
    [({}, "True"), ({"LANDMARK_RAG_MALLOPT": "0"}, "False"), ({"MALLOC_MMAP_THRESHOLD_": "65536"}, "True")],
)
def test_mmap_threshold_is_pinned_once_unless_the_user_decides(env: dict[str, str], expected: str) -> None:
    code = (
        "from landmark_rag.encode.runtime.malloc import pin_mmap_threshold\n"
        "print(pin_mmap_threshold(), pin_mmap_threshold())\n"
    )
    base = {k: v for k, v in os.environ.items() if k not in ("LANDMARK_RAG_MALLOPT", "MALLOC_MMAP_THRESHOLD_")}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
        env={**base, **env, "PYTHONPATH": str(SRC)},
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
for _ in range(2):  # the first steps lay the heap out (an aligned block is a little larger)
    block = torch.ones(size // 4)  # torch, not numpy: numpy asks for huge pages itself
    del block
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
block = torch.ones(size // 4)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_training_memory_is_reused_instead_of_faulted_in_again() -> None:
    """Kept: a 64 MiB block allocated again, as every training step does, reuses the pages of
    the last one (next to no page faults); with each large block its own mapping (the encoder's
    pin alone) every page of it faults in again."""
    pages = (64 << 20) // 4096
    base = {k: v for k, v in os.environ.items() if k != "LANDMARK_RAG_MALLOPT" and not k.startswith("MALLOC_")}
    faults = {}
    for policy in ("pinned", "kept"):
        out = subprocess.run(
            [sys.executable, "-c", FAULTS, policy], capture_output=True, text=True, timeout=120,
            env={**base, "PYTHONPATH": str(SRC)},
        )
        assert out.returncode == 0, out.stderr
        faults[policy] = int(out.stdout.split()[-1])
    assert faults["pinned"] > pages // 2
    assert faults["kept"] < pages // 20


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
@pytest.mark.parametrize(
    ("env", "expected"),
    [({}, "True"), ({"LANDMARK_RAG_MALLOPT": "0"}, "False"), ({"MALLOC_MMAP_MAX_": "0"}, "True")],
)
def test_keeping_memory_is_set_once_unless_the_user_decides(env: dict[str, str], expected: str) -> None:
    code = (
        "from landmark_rag.encode.runtime.malloc import keep_freed_memory\n"
        "print(keep_freed_memory(), keep_freed_memory())\n"
    )
    base = {k: v for k, v in os.environ.items() if k != "LANDMARK_RAG_MALLOPT" and not k.startswith("MALLOC_")}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
        env={**base, **env, "PYTHONPATH": str(SRC)},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [expected, expected]
