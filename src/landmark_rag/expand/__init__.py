"""Boundary expansion (step 5 of the pipeline): sentence hits -> exact passages."""

from landmark_rag.expand.expand import InMemorySource, SentenceSource, expand_hits
from landmark_rag.expand.strategies import (
    Adaptive,
    Front,
    Strategy,
    Surround,
    approx_tokens,
    choose_strategy,
    make_strategy,
    model_strategy,
)

__all__ = [
    "Adaptive",
    "Front",
    "InMemorySource",
    "SentenceSource",
    "Strategy",
    "Surround",
    "approx_tokens",
    "choose_strategy",
    "expand_hits",
    "make_strategy",
    "model_strategy",
]
