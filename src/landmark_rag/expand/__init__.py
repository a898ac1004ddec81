"""Boundary expansion (step 5 of the pipeline): sentence hits -> exact passages."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from landmark_rag.expand.budget import budget_requests, check_max_tokens, fill_budget
from landmark_rag.expand.expand import (
    AnySentenceSource,
    BatchSentenceSource,
    InMemorySource,
    SentenceSource,
    expand_hits,
    read_sentences,
)
from landmark_rag.expand.strategies import (
    Adaptive,
    Evidence,
    Front,
    Strategy,
    Surround,
    approx_tokens,
    choose_strategy,
)

__all__ = [
    "Adaptive",
    "AnySentenceSource",
    "BatchSentenceSource",
    "Evidence",
    "Front",
    "InMemorySource",
    "SentenceSource",
    "Strategy",
    "Surround",
    "approx_tokens",
    "budget_requests",
    "check_max_tokens",
    "choose_strategy",
    "expand_hits",
    "fill_budget",
    "read_sentences",
]


# The two older names of the strategy rule were exported here; they keep working (with a
# DeprecationWarning) so code written against them does not break, and live only here.
def _make_strategy(name: Any = "front", **params: float) -> Strategy:
    if isinstance(name, Front | Surround | Adaptive | Evidence):
        return name  # the old name ignored parameters given with a ready strategy
    if name is None:
        raise ValueError("unknown expansion strategy None; choose one of ['adaptive', 'front', 'surround']")
    return choose_strategy(name, params)


def _model_strategy(config: object | None, params: dict[str, float] | None = None) -> Strategy:
    return choose_strategy(None, params, config)


_DEPRECATED: dict[str, Callable[..., Strategy]] = {"make_strategy": _make_strategy, "model_strategy": _model_strategy}


def __getattr__(name: str) -> Any:
    if name in _DEPRECATED:
        warnings.warn(f"landmark_rag.expand.{name} is deprecated; use choose_strategy", DeprecationWarning, stacklevel=2)
        return _DEPRECATED[name]
    raise AttributeError(f"module 'landmark_rag.expand' has no attribute {name!r}")
