"""Where the hit sentences lie inside a passage, for highlighting in any output format."""

from __future__ import annotations

from collections.abc import Iterable

from landmark_rag.types import Passage, Sentence


def hit_segments(passage: Passage, hits: Iterable[Sentence]) -> list[tuple[str, bool]]:
    """Split ``passage.text`` into ``(piece, is_hit)`` runs that concatenate back to it.

    ``hits`` are the passage's hit sentences (document offsets); pieces outside the passage
    are ignored, so a caller can pass every sentence it fetched without filtering.
    """
    text = passage.text
    spans = sorted(
        (max(s.start, passage.start) - passage.start, min(s.end, passage.end) - passage.start)
        for s in hits
        if s.end > passage.start and s.start < passage.end
    )
    out: list[tuple[str, bool]] = []
    pos = 0
    for a, b in spans:
        a = max(a, pos)
        if b <= a:
            continue
        if a > pos:
            out.append((text[pos:a], False))
        out.append((text[a:b], True))
        pos = b
    if pos < len(text):
        out.append((text[pos:], False))
    return out
