"""``import landmark_rag`` asks OpenMP to wait passively unless the user chose (encode/runtime/omp.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.child_env import pythonpath

CODE = "import os, landmark_rag, torch; print(os.environ.get('OMP_WAIT_POLICY'))"


@pytest.mark.parametrize(("env", "code", "expected"), [
    ({}, CODE, "PASSIVE"),
    ({"OMP_WAIT_POLICY": "ACTIVE"}, CODE, "ACTIVE"),  # the user's choice is kept
    ({}, "import torch, os, landmark_rag; print(os.environ.get('OMP_WAIT_POLICY'))", "None"),  # too late: unchanged
])
def test_passive_wait_before_torch_only(env: dict[str, str], code: str, expected: str) -> None:
    base = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**base, **env, "PYTHONPATH": pythonpath()})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == expected
