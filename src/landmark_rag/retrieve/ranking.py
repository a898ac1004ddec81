"""One read of a query's best sentences, for each search mode (step 4 of the pipeline).

:func:`read_best` is the only place that ranks sentences for a query: ``dense`` is the
store's top-``n`` vector read, ``lexical`` the BM25 index's top candidates, ``hybrid`` both
fused by sentence id (``retrieve/fusion.py``). It reads once and never asks for more: how
many sentences a search needs is decided by the one loop in ``retrieve/search.py``, which
calls it again with a larger ``n``. Every mode's hits therefore go through the same boundary
expansion, merging and exactly-``k`` logic.

Lexical and hybrid rank *ids* first and read records after (Chroma ids + distances, BM25
ids + scores: a tenth of the cost of reading the text and metadata of every candidate); only
the best are read and checked for visibility. A candidate of a document that is being
written thus takes part in the ranking but is never returned. A fused hit carries the fused
score; its metadata records ``_dense_score``/``_lexical_score`` where a half ranked it (the
leading underscore keeps them out of passage metadata and prompts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from landmark_rag.retrieve.fusion import FusionConfig, Mode, check_mode, fuse
from landmark_rag.store.protocols import SentenceReader
from landmark_rag.store.reads import SCOPE_IDS
from landmark_rag.store.schema import DOC_ID, chroma_where, documents_named, sentence_id
from landmark_rag.types import DENSE_SCORE, Hit

LEXICAL_SCORE = "_lexical_score"


class LexicalSource(Protocol):
    """What the lexical half needs (e.g. :class:`~landmark_rag.store.lexical.StoreLexicalIndex`).

    An index may also offer ``documents_passing(where, *, most)`` (the store's does): a hybrid
    search then gives its dense half the documents a metadata filter selects (:func:`_dense_where`).
    """

    def candidates(self, text: str, n: int, *, where: dict[str, Any] | None = None) -> list[tuple[str, float]]: ...

    def stale(self, hits: Sequence[Hit]) -> bool: ...


@dataclass(frozen=True)
class Request:
    """One query as the modes read it, checked once so a missing piece fails before any read.

    ``vector`` is the unit query vector (the dense half; the adaptive expansion also needs it
    in lexical mode), ``text`` the query text (the lexical half), ``where`` a Chroma metadata
    filter on the sentences.
    """

    mode: Mode
    text: str | None = None
    vector: np.ndarray | None = None
    where: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        check_mode(self.mode)
        object.__setattr__(self, "where", chroma_where(self.where))  # {"a": 1, "b": 2} means both
        if self.mode in ("dense", "hybrid") and self.vector is None:
            raise ValueError(f"{self.mode} search needs the query vector")
        if self.mode in ("lexical", "hybrid") and self.text is None:
            raise ValueError(f"{self.mode} search needs the query text and a lexical index")


@dataclass(frozen=True)
class Sources:
    """What a search reads: the sentence store (vectors, records, neighbours for the
    expansion), the lexical index (``None`` for dense searches: it is built on first use, and
    a dense search should not build it) and the fusion settings."""

    store: SentenceReader
    lexical: LexicalSource | None = None
    fusion: FusionConfig = field(default_factory=lambda: FusionConfig(mode="hybrid"))


@dataclass
class Ranked:
    """The visible hits of one read, best first, and whether the ranking has no more.

    ``exhausted`` is what stops the search loop without a ``count()`` (a read of its own on
    every query): a read that found fewer candidates than it asked for has seen them all.
    When it has, ``hits`` holds every visible hit read, else at most the ``n`` asked for.
    """

    hits: list[Hit]
    exhausted: bool


def read_best(request: Request, n: int, sources: Sources) -> Ranked:
    """The best ``n`` visible sentence hits of ``request.mode``, from one read of the sources.

    Fewer than ``n`` come back when some of the best are hidden (a document being written)
    or, with ``exhausted`` set, when the ranking runs out (lexical: fewer sentences share a
    term with the query, or follow one that does when the fusion has a ``lexical_context``).
    """
    if request.mode != "dense" and sources.lexical is None:
        raise ValueError(f"{request.mode} search needs the query text and a lexical index")
    if request.mode == "dense":
        return _dense(request, n, sources.store)
    read = _lexical if request.mode == "lexical" else _hybrid
    ranked = read(request, n, sources)
    if sources.lexical is not None and sources.lexical.stale(ranked.hits):
        ranked = read(request, n, sources)  # the lexical index was out of date and has re-synced
    return ranked


def _read_ahead(n: int) -> int:
    """Candidates read for ``n`` hits by id: a few more, so a hidden one rarely costs a round."""
    return n + max(8, n // 4)


def _dense(request: Request, n: int, store: SentenceReader) -> Ranked:
    """The store's top-``n`` vector read (records included: one Chroma call).

    Exactly ``n``, no read-ahead: Chroma's approximate search depends on ``n_results``, and
    these are the sizes dense search has always asked for, so its results stay the same.
    """
    assert request.vector is not None  # Request refuses a dense or hybrid search without one
    # every record, hidden ones included: fewer than n of those is what says the store has no more
    records = store.nearest(request.vector, n, where=request.where, hidden=True)
    hits = store.visible_hits(records)
    for h in hits:  # a dense score is the cosine itself (Passage.cosine reads it here)
        h.metadata[DENSE_SCORE] = float(h.score)
    return Ranked(hits, exhausted=len(records) < n)


def _lexical(request: Request, n: int, sources: Sources) -> Ranked:
    """The BM25 index's best candidates (a prefix of its ranking: fewer than asked is all)."""
    assert sources.lexical is not None and request.text is not None
    ask = _read_ahead(n)
    candidates = sources.lexical.candidates(request.text, ask, where=request.where)
    hits = _records(candidates, sources.store)
    exhausted = len(candidates) < ask
    return Ranked(hits if exhausted else hits[:n], exhausted)


def _hybrid(request: Request, n: int, sources: Sources) -> Ranked:
    """Both halves' top ``max(n, depth)`` ids fused; only the fused best are read.

    The fused list is complete for its depth, so it has run out once it is read to its end
    with fewer than ``n`` visible hits in it.
    """
    assert sources.lexical is not None and request.text is not None and request.vector is not None
    fusion, depth, ask = sources.fusion, max(n, sources.fusion.depth), _read_ahead(n)
    lexical = sources.lexical.candidates(request.text, depth, where=request.where)
    dense = sources.store.nearest_ids(request.vector, depth, where=_dense_where(request.where, sources.lexical))
    fused = fuse(dense, lexical, fusion.method, fusion.weight, rrf_k=fusion.rrf_k)
    hits = _records(fused[:ask], sources.store)
    exhausted = len(fused) <= ask and len(hits) < n
    _record_halves(hits, dict(dense), dict(lexical))
    return Ranked(hits if exhausted else hits[:n], exhausted)


def _dense_where(where: dict[str, Any] | None, lexical: LexicalSource) -> dict[str, Any] | None:
    """The dense half's filter: ``where`` as the documents it selects, when the lexical index
    can tell them from the metadata it keeps (``StoreLexicalIndex.documents_passing``).

    The store reads named documents' sentences by id, where Chroma evaluates any other filter
    over the whole collection (a metadata filter at 60,000 sentences: 20-40 ms, against 1 ms
    for the unfiltered vector search). Same sentences: a document's metadata is its
    sentences' (the index only decides filters on keys no document varies between its
    sentences).
    """
    passing = getattr(lexical, "documents_passing", None)
    if where is None or passing is None or documents_named(where)[1] is None:
        return where  # no filter, no index that can tell, or one that names documents already
    docs = passing(where, most=SCOPE_IDS)
    # none passing: Chroma's filter says so too, and sees any document written since the sync
    return {DOC_ID: {"$in": docs}} if docs else where


def _records(ranking: Sequence[tuple[Any, float]], store: SentenceReader) -> list[Hit]:
    """The visible records of ``ranking``'s ids, scored and ordered as ranked."""
    return list(store.read_ids([str(u) for u, _ in ranking], [s for _, s in ranking]).values())


def _record_halves(hits: list[Hit], dense: dict[str, float], lexical: dict[str, float]) -> None:
    """Each fused hit's scores in the halves that ranked it (for display and debugging)."""
    for h in hits:
        key = sentence_id(str(h.sentence.doc_id), h.sentence.index)
        if key in dense:
            h.metadata[DENSE_SCORE] = float(dense[key])
        if key in lexical:
            h.metadata[LEXICAL_SCORE] = float(lexical[key])


__all__ = ["DENSE_SCORE", "LEXICAL_SCORE", "LexicalSource", "Ranked", "Request", "Sources", "read_best"]
