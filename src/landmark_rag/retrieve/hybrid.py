"""Sentence hits for a search mode: dense, lexical, or both fused (step 4 of the pipeline).

:func:`mode_hits` is the one place that turns a query into best-first sentence
:class:`~landmark_rag.types.Hit` for any mode; :func:`~landmark_rag.retrieve.collect_passages` expands whatever it
returns, so dense, lexical and hybrid hits get the same boundary expansion, merging and
exactly-``k`` logic. In ``hybrid`` mode each half contributes ``max(n, depth)`` candidates,
the lists are fused by sentence id (``retrieve/fusion.py``), and a fused hit carries the fused
score (its metadata records ``_dense_score``/``_lexical_score`` where a half ranked it; the
leading underscore keeps them out of passage metadata and prompts).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from landmark_rag.retrieve.fusion import FusionConfig, Mode, check_mode, fuse
from landmark_rag.store.schema import sentence_id
from landmark_rag.types import Hit

DENSE_SCORE = "_dense_score"
LEXICAL_SCORE = "_lexical_score"


class LexicalSource(Protocol):
    """What the lexical half needs (e.g. :class:`~landmark_rag.store.lexical.StoreLexicalIndex`)."""

    def candidates(self, text: str, n: int, *, where: dict[str, Any] | None = None) -> list[tuple[str, float]]: ...

    def query(self, text: str, n: int, *, where: dict[str, Any] | None = None) -> list[Hit]: ...

    def stale(self, hits: Sequence[Hit]) -> bool: ...


def mode_hits(
    mode: Mode | str,
    n: int,
    *,
    store: Any,
    query_vector: np.ndarray | None = None,
    query_text: str | None = None,
    lexical: LexicalSource | None = None,
    fusion: FusionConfig | None = None,
    where: dict[str, Any] | None = None,
) -> list[Hit]:
    """Best-first sentence hits of ``mode`` (at most ``n``; lexical may match fewer).

    ``dense`` needs ``query_vector``; ``lexical`` needs ``query_text`` and ``lexical``;
    ``hybrid`` needs all three. A missing piece is a ``ValueError``, not a silent fallback.

    Hybrid fuses *ids* first and reads records after: each half ranks ``max(n, depth)``
    candidates without reading text or metadata (Chroma ids + distances; BM25 ids + scores),
    and only the fused best are read and checked for visibility, topped up from lower fused
    ranks when some are hidden. A candidate of a document that is being written thus takes
    part in the ranking but is never returned.
    """
    mode = check_mode(mode)
    fusion = fusion or FusionConfig(mode="hybrid")
    if mode in ("dense", "hybrid") and query_vector is None:
        raise ValueError(f"{mode} search needs the query vector")
    if mode in ("lexical", "hybrid") and (lexical is None or query_text is None):
        raise ValueError(f"{mode} search needs the query text and a lexical index")
    if mode == "dense":
        return store.query(query_vector, n, where=where)
    assert lexical is not None and query_text is not None
    if mode == "lexical":
        return lexical.query(query_text, n, where=where)
    depth = max(n, fusion.depth)
    out: list[Hit] = []
    for attempt in (0, 1):
        dense = store.query_ids(query_vector, depth, where=where)
        lex = lexical.candidates(query_text, depth, where=where)
        fused = fuse(dense, lex, fusion.method, fusion.weight, rrf_k=fusion.rrf_k)
        out = []
        step = n + max(8, n // 4)
        for i in range(0, len(fused), step):
            chunk = fused[i : i + step]
            out.extend(store.hits_by_ids([str(u) for u, _ in chunk], [s for _, s in chunk]))
            if len(out) >= n:
                break
        if attempt == 0 and lexical.stale(out):
            continue  # the lexical index was out of date and has re-synced: rank again
        break
    d_scores, l_scores = dict(dense), dict(lex)
    for h in out[:n]:
        key = sentence_id(str(h.sentence.doc_id), h.sentence.index)
        if key in d_scores:
            h.metadata[DENSE_SCORE] = float(d_scores[key])
        if key in l_scores:
            h.metadata[LEXICAL_SCORE] = float(l_scores[key])
    return out[:n]


__all__ = ["DENSE_SCORE", "LEXICAL_SCORE", "LexicalSource", "mode_hits"]
