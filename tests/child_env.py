"""The path a test's child interpreter imports from: this checkout's sources first, then the
caller's own ``PYTHONPATH``, so packages installed on it (a test machine's carried wheels) stay
importable in the child."""

from __future__ import annotations

import os
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def pythonpath() -> str:
    """``PYTHONPATH`` for a child process: ``src`` of this checkout, then the caller's entries."""
    return os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH")) if p)
