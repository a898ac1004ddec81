"""The default segmenter: Wikimedia's ``sentencex``.

Chosen after ``benchmarks/segmenters.py`` (see docs/segmentation.md): it got every hand
labelled hard case right (abbreviations, decimals, quotes, bullet lists, paragraph breaks),
split fewest SQuAD answers across a boundary, and was the fastest candidate (a Rust core;
figures in docs/benchmarks.md, "Sentence segmenters"). It reports character (not byte)
offsets, which is what we need.
"""

from __future__ import annotations

import sentencex


def sentencex_spans(text: str, language: str = "en") -> list[tuple[int, int]]:
    """Return raw ``(start, end)`` character spans; whitespace is trimmed later."""
    return [(b["start_index"], b["end_index"]) for b in sentencex.get_sentence_boundaries(language, text)]
