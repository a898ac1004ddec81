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


def collect_passages(
    fetch_hits: Callable[[int], list[Hit]],
    total: int | None,
    source: SentenceSource,
    k: int,
    strategy: Strategy | str = "front",
    *,
    query_vector: np.ndarray | None = None,
    order: Literal["score", "document"] = "score",
    count_tokens: Callable[[str], int] | None = None,
) -> list[Passage]:
    """Exactly ``k`` passages from best-first sentence hits (fewer only when ``total`` runs out).

    ``fetch_hits(n)`` returns the best ``n`` scored sentence hits for the query, whatever
    produced them (a vector search, a lexical index, a fusion of both); ``total`` is how
    many sentences exist, or ``None`` when unknown (a count can cost as much as the search:
    the store running out shows as ``fetch_hits`` returning fewer than asked). Hits of one document often expand into the same passage, so
    ``k`` hits can merge into fewer than ``k`` passages: more hits are asked for until the
    best-first hits form ``k`` distinct, non-overlapping passages.
    """
    if k <= 0:
        return []
    limit = total if total is not None else float("inf")
    n = int(min(limit, max(2 * k, 8)))
    passages: list[Passage] = []
    while n > 0:
        hits = fetch_hits(n)
        passages = expand_hits(
            hits, source, strategy, query_vector=query_vector, count_tokens=count_tokens, max_passages=k
        )
        if len(passages) >= k or n >= limit or len(hits) < n:
            break
        n = int(min(limit, n * 2))
    best = passages[:k]
    if order == "document":
        best.sort(key=lambda p: (p.doc_id, p.start))
    return best


def search_passages(
    query_vector: np.ndarray,
    store: SearchableSource,
    k: int = 4,
    strategy: Strategy | str = "front",
    *,
    where: dict[str, Any] | None = None,
    order: Literal["score", "document"] = "score",
    count_tokens: Callable[[str], int] | None = None,
) -> list[Passage]:
    """Return exactly ``k`` passages (fewer only when the store runs out) for a query vector.

    The vector-level entry point; :class:`landmark_rag.LandmarkIndex` is the text-level one
    that also owns the encoder and the model's expansion.
    """
    return collect_passages(
        lambda n: store.query(query_vector, n, where=where),
        None,
        store,
        k,
        strategy,
        query_vector=query_vector,
        order=order,
        count_tokens=count_tokens,
    )
