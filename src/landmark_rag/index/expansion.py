"""Expanding sentence hits found elsewhere (a framework's retriever) into exact passages.

Why its own module: hits that ``LandmarkIndex.search`` reads are already visible and of one
version per document, but a framework's hits are read raw from the store, or come from a
source that keeps no manifest. Before they are expanded, versions a reader must not see
are dropped and each document is read at its hits' version, so a passage never joins the
sentences of two versions; that care is this module's, the expansion itself is ``expand``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from landmark_rag.expand import AnySentenceSource, Strategy, expand_hits
from landmark_rag.expand.strategies import approx_tokens
from landmark_rag.index.requests import Order
from landmark_rag.retrieve.search import budget_passages
from landmark_rag.store.protocols import SentenceStore
from landmark_rag.types import Hit, Passage


def expand_found(
    hits: Sequence[Hit],
    store: SentenceStore | AnySentenceSource,
    strategy: Strategy,
    *,
    query_vector: np.ndarray | None,
    count_tokens: Callable[[str], int] | None,
    k: int | None,
    order: Order,
    max_tokens: int | None,
) -> list[Passage]:
    """``hits`` -> merged, exact passages read from ``store``, as ``LandmarkIndex.expand``
    documents (arguments already checked): at most ``k`` passages, or those that fill
    ``max_tokens``."""
    visible = getattr(store, "visible_hits", None)
    if callable(visible):  # hits read raw by a framework: drop versions readers must not see
        hits = visible(hits)
    # a source that cannot tell a document's live version reads each at its hits' version
    pinned = getattr(store, "pinned_to", None)
    source = pinned(hits) if callable(pinned) else store
    if max_tokens is not None:
        ranked = sorted(hits, key=lambda h: -h.score)  # a framework's hits, best first
        passages, _ = budget_passages(
            ranked, source, strategy, max_tokens, count_tokens=count_tokens or approx_tokens,
            query_vector=query_vector, k=k, order=order,
        )
        return passages
    passages = expand_hits(
        hits, source, strategy, query_vector=query_vector, count_tokens=count_tokens, order=order, max_passages=k
    )
    return passages[:k] if k is not None else passages
