"""Boundary expansion (step 5 of the pipeline): sentence hits -> exact passages."""

from landmark_rag.expand.expand import (
    BatchSentenceSource,
    InMemorySource,
    SentenceSource,
    expand_hits,
    read_sentences,
)
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
    "BatchSentenceSource",
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
    "read_sentences",
]
