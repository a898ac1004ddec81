"""Fixed-size chunkers for the chunk baselines, as exact spans of the document."""

from __future__ import annotations

import re

from landmark_rag.evaluation.context import TokenIndex
from landmark_rag.types import Sentence

_WORD = re.compile(r"\S+")


def _as_units(text: str, spans: list[tuple[int, int]], doc_id: str | None) -> list[Sentence]:
    out = []
    prev = 0
    for i, (s, e) in enumerate(spans):
        out.append(Sentence(i, s, e, text[s:e], doc_id, text[prev:s] if s >= prev else ""))
        prev = e
    return out


def word_chunks(text: str, words: int, doc_id: str | None = None) -> list[Sentence]:
    """Consecutive, non-overlapping chunks of ``words`` whitespace-separated words."""
    if words < 1:
        raise ValueError("words must be >= 1")
    matches = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    spans = [(matches[i][0], matches[min(i + words, len(matches)) - 1][1]) for i in range(0, len(matches), words)]
    return _as_units(text, spans, doc_id)


def token_chunks(text: str, tokens: TokenIndex, size: int, overlap: int, doc_id: str | None = None) -> list[Sentence]:
    """Chunks of ``size`` tokens, consecutive chunks sharing ``overlap`` tokens; the last
    chunk ends at the document's last token (it may be shorter)."""
    if size < 1 or not 0 <= overlap < size:
        raise ValueError("need size >= 1 and 0 <= overlap < size")
    n = len(tokens.starts)
    spans = []
    a = 0
    while a < n:
        b = min(a + size, n)
        spans.append((int(tokens.starts[a]), int(tokens.ends[b - 1])))
        if b == n:
            break
        a = b - overlap
    return _as_units(text, spans, doc_id)
