"""``import landmark_rag`` asks OpenMP to wait passively unless the user chose (encode/runtime/omp.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
CODE = "import os, landmark_rag, torch; print(os.environ.get('OMP_WAIT_POLICY'))"


def _pythonpath() -> str:
    """This checkout's sources first, then the caller's own path: packages installed beside the
    interpreter's (a test machine's carried wheels on PYTHONPATH) stay importable in the child."""
    return os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH")) if p)


@pytest.mark.parametrize(("env", "code", "expected"), [
    ({}, CODE, "PASSIVE"),
    ({"OMP_WAIT_POLICY": "ACTIVE"}, CODE, "ACTIVE"),  # the user's choice is kept
    ({}, "import torch, os, landmark_rag; print(os.environ.get('OMP_WAIT_POLICY'))", "None"),  # too late: unchanged
])
def test_passive_wait_before_torch_only(env: dict[str, str], code: str, expected: str) -> None:
    base = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**base, **env, "PYTHONPATH": _pythonpath()})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == expected
