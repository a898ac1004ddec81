"""What an extractor returns: the document's text and where its pages and headings are in it.

Every span is an exact character range of ``Extracted.text``: the text is what gets
segmented, encoded and stored, so a sentence's offsets, its page and its heading all refer
to the same string, and ``text[start:end]`` is what a user can check against.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from landmark_rag.types import Sentence

#: Between two pages: a paragraph break for the segmenter.
PAGE_BREAK = "\n\n"
#: Between two pages where a sentence runs on from one to the next.
RUN_ON_BREAK = "\n"
_SENTENCE_END = re.compile(r"[.!?:;\"'”’)\]]\s*$")


@dataclass(frozen=True)
class PageSpan:
    """One page of a paged document (PDF): ``text[start:end]`` is that page's text.

    ``number`` is the 1-based physical page (what a viewer's page box shows); ``label`` is
    the page label the file defines for it ("iv", "A-3"), ``None`` where it defines none.
    A page without text (a scanned page, a blank one) has ``start == end``.
    """

    number: int
    start: int
    end: int
    label: str | None = None


@dataclass(frozen=True)
class HeadingSpan:
    """A heading: ``text[start:end] == title``; ``level`` 1 is the top (``#``, ``<h1>``, Heading 1)."""

    title: str
    level: int
    start: int
    end: int


@dataclass
class Extracted:
    """A document's text with its pages (PDF only, else ``None``) and headings, in order.

    ``format`` names the extractor that produced it ("pdf", "docx", "html", "markdown",
    "text"); ``metadata`` holds what the file says about itself (``title``, ``author``,
    ``page_count``, ``pages_without_text``), only the keys the format provides.
    """

    text: str
    format: str
    pages: list[PageSpan] | None = None
    headings: list[HeadingSpan] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Spans are built by our own extractors; a wrong one would silently misplace every
        # page or heading a result reports, so it fails here, where it is made.
        n = len(self.text)
        last = 0
        for page in self.pages or ():
            if not (last <= page.start <= page.end <= n):
                raise ValueError(f"page {page.number} span {page.start}:{page.end} is out of order or range")
            last = page.end
        last = 0
        for head in self.headings:
            if not (last <= head.start <= head.end <= n) or self.text[head.start : head.end] != head.title:
                raise ValueError(f"heading {head.title!r} span {head.start}:{head.end} is not an exact slice")
            last = head.start
        self._page_starts = [p.start for p in self.pages or ()]
        self._heading_starts = [h.start for h in self.headings]

    def page_at(self, offset: int) -> PageSpan | None:
        """The page holding character ``offset``: the last page starting at or before it.

        An offset in the separator between two pages belongs to the page before it; an
        empty page never holds an offset (the page with text at the same start wins).
        """
        if not self.pages:
            return None
        i = bisect.bisect_right(self._page_starts, offset) - 1
        return self.pages[max(i, 0)]

    def page_numbers(self, start: int, end: int) -> list[int]:
        """The page numbers a span ``[start, end)`` touches, first to last ([11, 12] across a break)."""
        if not self.pages:
            return []
        first = self.page_at(start)
        last = self.page_at(max(start, end - 1))
        assert first is not None and last is not None
        return list(range(first.number, last.number + 1))

    def heading_at(self, offset: int) -> HeadingSpan | None:
        """The nearest heading starting at or before ``offset`` (``None`` before the first)."""
        i = bisect.bisect_right(self._heading_starts, offset) - 1
        return self.headings[i] if i >= 0 else None

    def heading_path(self, offset: int) -> list[HeadingSpan]:
        """The headings enclosing ``offset``, outermost first (chapter, section, subsection)."""
        i = bisect.bisect_right(self._heading_starts, offset) - 1
        path: list[HeadingSpan] = []
        for head in reversed(self.headings[: i + 1]):
            if not path or head.level < path[0].level:
                path.insert(0, head)
                if head.level <= 1:
                    break
        return path

    def locate(self, sentences: Sequence[Sentence]) -> list[Sentence]:
        """``sentences`` of this text with their ``page`` (where each starts) and ``heading``
        (the nearest one at or before its start) set: the one place a sentence gets them.

        A heading line's own heading is the one it states: its title starts after the marks
        (``## Ferries``), so it is looked up past them, not at the line's first character
        (which would give the section before)."""
        out = []
        for s in sentences:
            page = self.page_at(s.start) if self.pages else None
            marks = len(s.text) - len(s.text.lstrip("#= \t"))
            head = self.heading_at(s.start + marks) if self.headings else None
            out.append(replace(s, page=page.number if page else None, heading=head.title if head else None))
        return out


def join_page_texts(
    pages: Sequence[str], labels: Sequence[str | None] | None = None, numbers: Sequence[int] | None = None
) -> tuple[str, list[PageSpan]]:
    """One text from a document's pages in order, with each page's exact span.

    Pages are stripped and joined by a blank line (a paragraph break for the segmenter),
    except where a sentence runs on: a page whose text ends without a sentence's end and a
    next page that starts in lower case are joined by one newline, so the sentence stays
    whole and its span covers both pages. A PDF's text layer and the pages a framework
    loader gives (``ingest.join_pages``) are joined by this one rule. ``numbers``: the
    pages' numbers (default 1, 2, ...).
    """
    parts: list[str] = []
    spans: list[PageSpan] = []
    length = 0
    previous = ""
    labels = list(labels) if labels is not None else [None] * len(pages)
    numbers = list(numbers) if numbers is not None else list(range(1, len(pages) + 1))
    for number, page, label in zip(numbers, pages, labels, strict=True):
        page = page.strip()
        if page and parts:
            run_on = not _SENTENCE_END.search(previous) and page[0].islower()
            sep = RUN_ON_BREAK if run_on else PAGE_BREAK
            parts.append(sep)
            length += len(sep)
        spans.append(PageSpan(number, length, length + len(page), label))
        if page:
            parts.append(page)
            length += len(page)
            previous = page
    return "".join(parts), spans
