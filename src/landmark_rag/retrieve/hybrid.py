"""Sentence hits for a search mode: dense, lexical, or both fused (step 4 of the pipeline).

:func:`mode_hits` is the one place that turns a query into best-first sentence
:class:`~landmark_rag.types.Hit` for any mode; :func:`search_passages` expands whatever it
returns, so dense, lexical and hybrid hits get the same boundary expansion, merging and
exactly-``k`` logic. In ``hybrid`` mode each half contributes ``max(n, depth)`` candidates,
the lists are fused by sentence id (``retrieve/fusion.py``), and a fused hit carries the fused
score (its metadata records ``_dense_score``/``_lexical_score`` where a half ranked it; the
leading underscore keeps them out of passage metadata and prompts).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from landmark_rag.retrieve.fusion import FusionConfig, Mode, check_mode, fuse
from landmark_rag.store.schema import sentence_id
from landmark_rag.types import Hit

DENSE_SCORE = "_dense_score"
LEXICAL_SCORE = "_lexical_score"


class LexicalSource(Protocol):
    """What the lexical half needs (e.g. :class:`~landmark_rag.store.lexical.StoreLexicalIndex`)."""

    def query(self, text: str, n: int, *, where: dict[str, Any] | None = None) -> list[Hit]: ...


def _key(hit: Hit) -> str:
    return sentence_id(str(hit.sentence.doc_id), hit.sentence.index)


def fuse_hits(dense: list[Hit], lexical: list[Hit], fusion: FusionConfig) -> list[Hit]:
    """One best-first list of hits from the two halves' hits (same sentence = same id)."""
    by_key: dict[str, Hit] = {}
    for h in lexical:
        by_key[_key(h)] = h
    for h in dense:
        by_key[_key(h)] = h  # the dense record wins when both have it (identical sentence)
    d_scores = {_key(h): h.score for h in dense}
    l_scores = {_key(h): h.score for h in lexical}
    fused = fuse(
        [(_key(h), h.score) for h in dense], [(_key(h), h.score) for h in lexical],
        fusion.method, fusion.weight, rrf_k=fusion.rrf_k,
    )
    out = []
    for key, score in fused:
        h = by_key[str(key)]
        md = dict(h.metadata)
        if key in d_scores:
            md[DENSE_SCORE] = float(d_scores[str(key)])
        if key in l_scores:
            md[LEXICAL_SCORE] = float(l_scores[str(key)])
        out.append(Hit(h.sentence, float(score), md))
    return out


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
    """
    mode = check_mode(mode)
    fusion = fusion or FusionConfig(mode="hybrid")
    if mode in ("dense", "hybrid") and query_vector is None:
        raise ValueError(f"{mode} search needs the query vector")
    if mode in ("lexical", "hybrid") and (lexical is None or query_text is None):
        raise ValueError(f"{mode} search needs the query text and a lexical index")
    if mode == "dense":
        return store.query(query_vector, n, where=where)
    if mode == "lexical":
        return lexical.query(query_text, n, where=where)  # type: ignore[union-attr, arg-type]
    depth = max(n, fusion.depth)
    dense = store.query(query_vector, depth, where=where)
    lex = lexical.query(query_text, depth, where=where)  # type: ignore[union-attr, arg-type]
    return fuse_hits(dense, lex, fusion)[:n]


__all__ = ["DENSE_SCORE", "LEXICAL_SCORE", "LexicalSource", "fuse_hits", "mode_hits"]
