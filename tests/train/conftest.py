"""Fixtures shared by the training tests."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture
def one_thread():
    """One torch thread for tests on tiny (32-wide) models: they gain nothing from threads, and
    on a busy machine the extra threads spin-wait. Modules opt in with
    ``pytestmark = pytest.mark.usefixtures("one_thread")``; real-model tests keep all threads."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
