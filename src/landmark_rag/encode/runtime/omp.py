"""Ask OpenMP (torch's CPU thread pool) to sleep, not spin, while it waits for work.

Why: by default libgomp's worker threads spin for a while at every barrier. On a machine
whose cores are shared with other processes (a laptop running an IDE, a CI runner, a
small server with other jobs), a spinning thread burns the time slice the thread it
waits for needs, and every parallel region of a forward pass stalls, so a query encoding
takes many times longer than with ``OMP_WAIT_POLICY=PASSIVE``. On an idle machine passive
waiting costs only a thread wake-up per parallel region, small against a forward pass.

OpenMP reads the variable once, when torch loads its runtime, so this must run before the
first ``import torch``: ``import landmark_rag`` does it (the package imports torch lazily).
A policy the user set is kept; once torch is loaded nothing is changed.
"""

from __future__ import annotations

import os
import sys


def prefer_passive_wait() -> bool:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` unless the user chose a policy or torch is already loaded.

    Returns whether the policy now in the environment is passive.
    """
    if "OMP_WAIT_POLICY" not in os.environ and "torch" not in sys.modules:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    return os.environ.get("OMP_WAIT_POLICY", "").upper() == "PASSIVE"
