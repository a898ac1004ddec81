"""Markdown: the text is kept exactly as written (the markup is part of what the author
wrote and what ``query`` shows); only the headings are found, ATX (``## Title``) and Setext
(a line underlined with ``===`` or ``---``), outside fenced code and front matter.

A line-based scan rather than a Markdown parser: headings are all we need, and offsets
into the raw text come for free.
"""

from __future__ import annotations

import re

from landmark_rag.extract.result import Extracted, HeadingSpan
from landmark_rag.extract.text import decode_bytes

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+|$)(.*?)(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# lines that are not paragraph text, so cannot be a Setext heading's content
_NOT_PARAGRAPH = re.compile(r"^(?: {4}|\t| {0,3}(?:[-*+>|]|\d+[.)]|#|`{3}|~{3}))")


def extract_markdown(data: bytes) -> Extracted:
    """Decoded like plain text; ``headings`` from ATX and Setext lines."""
    text = decode_bytes(data)
    return Extracted(text, "markdown", headings=markdown_headings(text))


def markdown_headings(text: str) -> list[HeadingSpan]:
    """Every heading of ``text`` with its exact span (the title without the ``#`` marks)."""
    headings: list[HeadingSpan] = []
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    i = _front_matter_end(lines)
    fence: str | None = None
    paragraph: list[int] = []  # indices of the current paragraph's lines
    while i < len(lines):
        line = lines[i].rstrip("\r\n")
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
        elif opened:
            fence, paragraph = opened.group(1), []
        elif (m := _ATX.match(line)) is not None:
            title_at = starts[i] + m.start(2)
            if m.group(2):
                headings.append(HeadingSpan(m.group(2), len(m.group(1)), title_at, title_at + len(m.group(2))))
            paragraph = []
        elif paragraph and (m := _SETEXT.match(line)) is not None:
            first, last = paragraph[0], paragraph[-1]
            start = starts[first] + len(lines[first]) - len(lines[first].lstrip())
            end = starts[last] + len(lines[last].rstrip())
            headings.append(HeadingSpan(text[start:end], 1 if m.group(1)[0] == "=" else 2, start, end))
            paragraph = []
        elif not line.strip() or (not paragraph and _NOT_PARAGRAPH.match(line)):
            paragraph = []
        else:
            paragraph.append(i)
        i += 1
    return headings


def _front_matter_end(lines: list[str]) -> int:
    """The first line after a YAML front matter block (``---`` ... ``---``), else 0: its
    closing ``---`` would otherwise read as a Setext underline of the last key."""
    if not lines or lines[0].rstrip("\r\n") != "---":
        return 0
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n") in ("---", "..."):
            return i + 1
    return 0
