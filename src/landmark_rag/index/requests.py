"""The arguments of a search, checked before anything is read.

Why its own module: ``LandmarkIndex.search``, ``search_many``, ``hits`` and ``expand`` take
the same few arguments (``k``, ``max_tokens``, ``order``, the query) and refuse the same
mistakes with the same words; the rules live here once, so the index keeps only the wiring.
A bad argument fails here, before a model is loaded or a store is read, since a blank query
or ``k = 0`` would otherwise come back as a plausible-looking but meaningless answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from landmark_rag.expand import Strategy, check_max_tokens
from landmark_rag.retrieve.fusion import Mode

Order = Literal["score", "document"]
#: the orders passages come in: best first, or reading order
ORDERS: tuple[str, ...] = ("score", "document")
#: a query as text, or a query vector already computed
Query = str | np.ndarray
#: passages a search returns when it is given neither ``k`` nor ``max_tokens``
DEFAULT_K = 4


def search_limits(k: int | None, max_tokens: int | None) -> tuple[int | None, int | None]:
    """``(k, max_tokens)`` of a search: ``k`` defaults to :data:`DEFAULT_K` passages without a
    budget and to no cap with one; ``max_tokens`` is checked here (``check_max_tokens``)."""
    if max_tokens is None:
        return (DEFAULT_K if k is None else k), None
    return k, check_max_tokens(max_tokens)


def check_order(order: str) -> None:
    """Refuse an order that is not one of :data:`ORDERS` (a typo would otherwise silently
    mean best first)."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")


def check_passage_cap(k: int | None) -> None:
    """``expand``'s ``k``: ``None`` (every passage) or a whole number of at least 1."""
    if k is not None and (isinstance(k, bool) or int(k) != k or k < 1):
        raise ValueError(f"k must be a whole number of at least 1 (or None: every passage), got {k!r}")


def check_request(
    k: int, order: str, queries: Sequence[str], what: str = "k", *, vector_given: bool = False
) -> None:
    """Bad search arguments refused before anything is read: a blank query with no vector
    given has nothing to match (every sentence would rank by chance), ``k < 1`` asks for nothing."""
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise ValueError(f"{what} must be a whole number of at least 1, got {k!r}")
    check_order(order)
    for i, q in enumerate(queries):
        if not isinstance(q, str):
            raise TypeError(f"a query is a string, got {type(q).__name__}" + (f" (query {i})" if len(queries) > 1 else ""))
        if not q.strip() and not vector_given:
            raise ValueError("the query is blank" + (f" (query {i})" if len(queries) > 1 else "") + ": ask something")


def needs_vector(mode: Mode, strategy: Strategy) -> bool:
    """Whether a search must encode its query: every mode but ``lexical`` ranks by vectors,
    and an expansion that reads neighbours' vectors (``Adaptive``) compares them with it."""
    return mode != "lexical" or strategy.needs_vectors
