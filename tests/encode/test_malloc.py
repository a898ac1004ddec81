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
