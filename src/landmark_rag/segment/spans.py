"""Turn whatever a segmenter returns into clean, gap-free ``Sentence`` records."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from landmark_rag.types import Sentence


def _as_span(item: Any) -> tuple[int, int]:
    if isinstance(item, tuple | list) and len(item) == 2:
        return int(item[0]), int(item[1])
    if hasattr(item, "start") and hasattr(item, "end"):
        return int(item.start), int(item.end)
    raise TypeError(
        "a segmenter must return (start, end) pairs or objects with .start/.end; "
        f"got {type(item).__name__}"
    )


def spans_to_sentences(text: str, spans: Iterable[Any], doc_id: str | None = None) -> list[Sentence]:
    """Normalise raw spans into sentences that cover every non-whitespace character.

    - whitespace at either end of a span is trimmed; spans that become empty are dropped;
    - spans must not overlap (a clear ``ValueError`` otherwise: silently merging would hide
      a broken custom segmenter);
    - spans are sorted, and any non-whitespace text that no span covers becomes a sentence of
      its own, so a segmenter can never lose text.
    """
    n = len(text)
    raw = []
    for item in spans:
        s, e = _as_span(item)
        if not (0 <= s <= e <= n):
            raise ValueError(f"span ({s}, {e}) lies outside the text of length {n}")
        raw.append((s, e))
    raw.sort()
    cleaned: list[tuple[int, int]] = []
    prev_end = 0
    for s, e in raw:
        if s < prev_end:
            raise ValueError(f"segmenter returned overlapping spans ending at {prev_end} and starting at {s}")
        if s > prev_end:  # uncovered text between spans
            cleaned.extend(_trimmed(text, prev_end, s))
        cleaned.extend(_trimmed(text, s, e))
        prev_end = e
    if prev_end < n:
        cleaned.extend(_trimmed(text, prev_end, n))
    return sentences_at(text, cleaned, doc_id)


def sentences_at(text: str, spans: Iterable[tuple[int, int]], doc_id: str | None = None) -> list[Sentence]:
    """Sentences of spans that are already clean (trimmed, sorted, not overlapping: what
    :func:`spans_to_sentences` made of a segmenter's, e.g. in another process), each with the
    whitespace since the previous one as its ``space_before``."""
    out: list[Sentence] = []
    last = 0
    for i, (s, e) in enumerate(spans):
        out.append(Sentence(i, s, e, text[s:e], doc_id, text[last:s]))
        last = e
    return out


def _trimmed(text: str, s: int, e: int) -> list[tuple[int, int]]:
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return [(s, e)] if e > s else []
