"""Heading lines are where a passage is, not what it says.

A document's headings (Markdown ``## Title`` and Setext lines, HTML ``<h1>``-``<h6>``, Word
heading styles) are blocks of their own, so the segmenter makes each one a sentence. They
stay in the stored sentences, and so in the encoder's context (the words of a heading help
the vectors of the section under it), and every sentence records its heading as metadata.
What a reader gets back treats them as that metadata only: a heading line is never a hit,
and a passage never begins or ends on one (the hit's section heading says where it is).

This is a rule over the stored sentences (their text and recorded heading), so it applies to
stores written before it existed: nothing is re-indexed and no sentence index changes.
"""

from __future__ import annotations

import re

from landmark_rag.types import Sentence

_ATX = re.compile(r"#{1,6}[ \t]+(?P<title>[^\n]*?)(?:[ \t]+#+)?[ \t]*")
_SETEXT = re.compile(r"(?P<title>[^\n]+?)[ \t]*\r?\n[ \t]*(?:=+|-+)[ \t]*")


def heading_title(sentence: Sentence) -> str | None:
    """The title when ``sentence`` is a heading line, else ``None``.

    A heading line is an ATX Markdown heading (``## Ferries``), a Setext one (a line
    underlined with ``===`` or ``---``), or a sentence whose text is its own recorded heading
    (an HTML or Word heading block).
    """
    text = sentence.text.strip()
    if not text:
        return None
    for pattern in (_ATX, _SETEXT):
        m = pattern.fullmatch(text)
        if m and m.group("title").strip():
            return m.group("title").strip()
    if sentence.heading is not None and text == sentence.heading.strip():
        return sentence.heading
    return None


def is_heading_line(sentence: Sentence) -> bool:
    """Whether ``sentence`` is a heading line (see :func:`heading_title`)."""
    return heading_title(sentence) is not None


__all__ = ["heading_title", "is_heading_line"]
