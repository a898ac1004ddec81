"""Assembling a document's text from blocks (paragraphs, headings, table rows).

HTML and DOCX have no text of their own to keep offsets into, only a tree of blocks; the
text we index is the blocks joined by a blank line. A blank line is a paragraph break to
the sentence segmenter, so a heading or a table row never runs into the sentence after
it (a single newline would not stop a sentence that lacks a final full stop).
"""

from __future__ import annotations

import re

from landmark_rag.extract.result import HeadingSpan

#: Between two blocks: a paragraph break for the segmenter.
BLOCK_SEPARATOR = "\n\n"

_SPACES = re.compile(r"[^\S\n]+")
_NEWLINES = re.compile(r"[^\S\n]*\n\s*")


def tidy(text: str, *, keep_lines: bool = False) -> str:
    """Collapse runs of whitespace the way a renderer does; ``keep_lines`` keeps line breaks
    (a ``<br>`` or a Word line break), collapsing blank lines into one newline so that only
    our block separator makes a paragraph break."""
    if keep_lines:
        return _SPACES.sub(" ", _NEWLINES.sub("\n", text)).strip()
    return " ".join(text.split())


class BlockText:
    """Blocks appended in reading order; records the span of every heading block."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0
        self.headings: list[HeadingSpan] = []

    def add(self, block: str, *, heading_level: int | None = None) -> None:
        """Append one block (already tidied); empty blocks are dropped."""
        if not block:
            return
        if self._parts:
            self._parts.append(BLOCK_SEPARATOR)
            self._length += len(BLOCK_SEPARATOR)
        if heading_level is not None:
            self.headings.append(HeadingSpan(block, heading_level, self._length, self._length + len(block)))
        self._parts.append(block)
        self._length += len(block)

    def extend(self, other: BlockText) -> None:
        """Append all of ``other``'s blocks, its headings shifted to their new offsets."""
        if not other._parts:
            return
        shift = self._length + (len(BLOCK_SEPARATOR) if self._parts else 0)
        if self._parts:
            self._parts.append(BLOCK_SEPARATOR)
        self._parts.extend(other._parts)
        self._length = shift + other._length
        self.headings.extend(HeadingSpan(h.title, h.level, h.start + shift, h.end + shift) for h in other.headings)

    @property
    def text(self) -> str:
        return "".join(self._parts)
