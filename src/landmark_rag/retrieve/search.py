"""Query -> sentence hits -> ``k`` expanded, non-overlapping passages (step 4 of the pipeline).

The one "ask for more" loop of a search lives here, for every mode. A read
(:func:`~landmark_rag.retrieve.ranking.read_best`) returns the best ``n`` visible hits and
never tops itself up; this loop decides whether they are enough and, if not, reads again
with twice as many. Two things can make them too few: hits of one document that expand into
the same passage (``k`` hits often form fewer than ``k`` passages), and hits hidden because
their document is being written. Both are answered the same way, so neither the store nor
the fusion needs a loop of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypeVar

import numpy as np

from landmark_rag.expand import AnySentenceSource, Strategy, expand_hits, read_sentences
from landmark_rag.expand.budget import budget_requests, fill_budget
from landmark_rag.expand.headings import is_heading_line
from landmark_rag.expand.strategies import approx_tokens
from landmark_rag.retrieve.ranking import Ranked, Request, Sources, read_best
from landmark_rag.types import Hit, Passage

Order = Literal["score", "document"]
T = TypeVar("T")


def _read_until(request: Request, sources: Sources, n: int, form: Callable[[list[Hit]], list[T]], want: int) -> list[T]:
    """``form`` of the hits of reads of ``n``, ``2n``, ``4n``, ... until it gives ``want``
    items or the ranking runs out: the one loop (see the module docstring).

    Asking again reads the ranking afresh rather than on from where the last read stopped:
    a read is one or two Chroma calls whatever its size, and a hybrid read of more than
    ``depth`` fuses deeper lists, which ranks differently.
    """
    while True:
        ranked: Ranked = read_best(request, n, sources)
        formed = form(ranked.hits)
        if len(formed) >= want or ranked.exhausted:
            return formed
        n *= 2


def find_hits(request: Request, n: int, sources: Sources) -> list[Hit]:
    """The best ``n`` visible sentence hits for ``request``, before expansion (best first).

    Scores are cosine (``dense``), BM25 (``lexical``) or the fused score (``hybrid``); fewer
    than ``n`` only when the ranking runs out. Heading lines are left out (``expand.headings``).
    """
    if n <= 0:
        return []

    def content(hits: list[Hit]) -> list[Hit]:  # a heading line is metadata, never a hit
        return [h for h in hits if not is_heading_line(h.sentence)]

    return _read_until(request, sources, n, content, n)[:n]


def find_passages(
    request: Request,
    k: int,
    sources: Sources,
    strategy: Strategy,
    *,
    order: Order = "score",
    count_tokens: Callable[[str], int] | None = None,
) -> list[Passage]:
    """Exactly ``k`` passages for ``request`` (fewer only when the ranking runs out).

    ``strategy`` is the expansion already chosen for this search (the caller resolves it
    once). Each read's hits are expanded best first until they form ``k`` distinct,
    non-overlapping passages; reading on never changes passages already formed, since lower
    hits that would merge into them are not used (``expand_hits(max_passages=...)``).
    """
    if k <= 0:
        return []

    def expand(hits: list[Hit]) -> list[Passage]:
        return expand_hits(
            hits, sources.store, strategy, query_vector=request.vector, count_tokens=count_tokens, max_passages=k
        )

    best = _read_until(request, sources, max(2 * k, 8), expand, k)[:k]
    if order == "document":
        best.sort(key=lambda p: (p.doc_id, p.start))
    return best


def budget_passages(
    hits: list[Hit],
    source: AnySentenceSource,
    strategy: Strategy,
    max_tokens: int,
    *,
    count_tokens: Callable[[str], int],
    query_vector: np.ndarray | None = None,
    k: int | None = None,
    order: Order = "score",
) -> tuple[list[Passage], bool]:
    """``hits`` (best first) -> passages within ``max_tokens``, and whether the budget is
    full: one read of the sentences they may need, then ``fill_budget``."""
    if strategy.needs_vectors and query_vector is None:  # before any read from the source
        raise ValueError(f"the {type(strategy).__name__.lower()} strategy needs the query vector")
    requests = budget_requests(hits, strategy, max_tokens)
    sents, vecs = read_sentences(source, requests, embeddings=strategy.needs_vectors) if requests else ({}, {})
    return fill_budget(
        hits, sents, strategy, max_tokens, count_tokens, vectors=vecs, query_vector=query_vector,
        max_passages=k, order=order,
    )


def find_budget_hits(
    request: Request,
    max_tokens: int,
    sources: Sources,
    strategy: Strategy,
    *,
    k: int | None = None,
    order: Order = "score",
    count_tokens: Callable[[str], int] | None = None,
) -> tuple[list[Hit], list[Passage]]:
    """The hits a budgeted search reads and the passages, in rank order, whose tokens add up
    to at most ``max_tokens`` (``expand.budget.fill_budget``: hit by hit, sentence-exact, at
    least one passage).

    The best 8 hits (``2k`` when ``k`` caps the passages) are read first, and twice as many
    each time their passages leave room in the budget, until it is full, the ranking runs
    out or ``k`` passages are formed (lower hits could then only grow them): one read of
    their sentences per round. A framework retriever returns these hits, and its expansion
    step, given the same budget, forms the same passages from them.
    """
    count = count_tokens or approx_tokens
    n = max(2 * k, 8) if k else 8
    while True:
        ranked: Ranked = read_best(request, n, sources)
        passages, full = budget_passages(
            ranked.hits, sources.store, strategy, max_tokens, count_tokens=count, query_vector=request.vector,
            k=k, order=order,
        )
        if full or ranked.exhausted or (k is not None and len(passages) >= k):
            return ranked.hits, passages
        n *= 2


__all__ = ["Order", "budget_passages", "find_budget_hits", "find_hits", "find_passages"]
