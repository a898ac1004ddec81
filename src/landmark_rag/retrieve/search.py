"""Query -> sentence hits -> ``k`` expanded, non-overlapping passages (step 4 of the pipeline)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Protocol

import numpy as np

from landmark_rag.expand import SentenceSource, Strategy, expand_hits
from landmark_rag.types import Hit, Passage


class SearchableSource(SentenceSource, Protocol):
    """A sentence source that can also run a vector search (e.g. ``ChromaSentenceStore``)."""

    def query(self, vector: np.ndarray, k: int, *, where: dict[str, Any] | None = None) -> list[Hit]: ...

    def count_sentences(self) -> int: ...


def search_passages(
    query_vector: np.ndarray | None,
    store: SearchableSource,
    k: int = 4,
    strategy: Strategy | str = "front",
    *,
    where: dict[str, Any] | None = None,
    order: Literal["score", "document"] = "score",
    count_tokens: Callable[[str], int] | None = None,
    hits: Callable[[int], list[Hit]] | None = None,
) -> list[Passage]:
    """Return exactly ``k`` passages (fewer only when the store runs out).

    Hits of one document often expand into the same passage, so ``k`` hits can merge into
    fewer than ``k`` passages; the search asks for more hits until the best-first hits form
    ``k`` distinct, non-overlapping passages.

    ``hits(n)`` supplies the ``n`` best sentence hits (default: the store's vector search);
    hybrid and lexical search pass :func:`landmark_rag.retrieve.hybrid.mode_hits` here, so
    every mode shares this expansion and merging. ``query_vector`` may then be ``None``
    (lexical mode) unless the strategy is ``adaptive``, which scores neighbours with it.
    """
    if hits is None:
        if query_vector is None:
            raise ValueError("search_passages needs a query vector or a hits function")

        def hits(n: int) -> list[Hit]:
            return store.query(query_vector, n, where=where)

    if k <= 0:
        return []
    total = store.count_sentences()
    n = min(total, max(2 * k, 8))
    passages: list[Passage] = []
    while n > 0:
        found = hits(n)
        passages = expand_hits(
            found, store, strategy, query_vector=query_vector, count_tokens=count_tokens, max_passages=k
        )
        if len(passages) >= k or n >= total or len(found) < n:
            break
        n = min(total, n * 2)
    best = passages[:k]
    if order == "document":
        best.sort(key=lambda p: (p.doc_id, p.start))
    return best
