"""The span arithmetic of ``Extracted``: page of an offset, pages of a span, nearest
heading and heading path, and refusal of spans that are not exact slices."""

from __future__ import annotations

import pytest

from landmark_rag.extract import Extracted, HeadingSpan, PageSpan

TEXT = "aaaa\n\nbbbb\n\ncccc"  # pages 1..3 at 0:4, 6:10, 12:16


def _doc(**kw) -> Extracted:
    pages = [PageSpan(1, 0, 4), PageSpan(2, 6, 10, "ii"), PageSpan(3, 12, 16)]
    return Extracted(TEXT, "pdf", pages=pages, **kw)


def test_page_of_an_offset_and_pages_of_a_span():
    doc = _doc()
    assert [doc.page_at(i).number for i in (0, 3, 4, 5, 6, 11, 12, 15)] == [1, 1, 1, 1, 2, 2, 3, 3]
    assert doc.page_numbers(0, 4) == [1]
    assert doc.page_numbers(2, 8) == [1, 2]
    assert doc.page_numbers(2, 14) == [1, 2, 3]
    assert doc.page_numbers(6, 6) == [2]  # an empty span is on the page where it sits


def test_an_empty_page_holds_no_text():
    doc = Extracted("aaaa\n\ncccc", "pdf", pages=[PageSpan(1, 0, 4), PageSpan(2, 4, 4), PageSpan(3, 6, 10)])
    assert doc.page_at(6).number == 3
    assert doc.page_numbers(0, 10) == [1, 2, 3]


def test_no_pages_means_no_page_numbers():
    doc = Extracted("plain", "text")
    assert doc.page_at(0) is None and doc.page_numbers(0, 5) == []


def test_nearest_heading_and_path():
    text = "A\n\nB\n\nC\n\nbody\n\nD\n\nmore"
    heads = [HeadingSpan("A", 1, 0, 1), HeadingSpan("B", 2, 3, 4), HeadingSpan("C", 3, 6, 7), HeadingSpan("D", 2, 15, 16)]
    doc = Extracted(text, "markdown", headings=heads)
    assert doc.heading_at(text.index("body")).title == "C"
    assert [h.title for h in doc.heading_path(text.index("body"))] == ["A", "B", "C"]
    assert [h.title for h in doc.heading_path(text.index("more"))] == ["A", "D"]
    assert Extracted("x\n\nA", "markdown", headings=[HeadingSpan("A", 1, 3, 4)]).heading_at(0) is None


@pytest.mark.parametrize(
    "kw",
    [
        {"headings": [HeadingSpan("bbbb", 1, 0, 4)]},  # not the text at that span
        {"pages": [PageSpan(1, 0, 4), PageSpan(2, 2, 10)]},  # overlapping pages
        {"pages": [PageSpan(1, 0, 99)]},  # past the end
    ],
)
def test_spans_that_are_not_exact_slices_are_refused(kw):
    with pytest.raises(ValueError):
        Extracted(TEXT, "pdf", **kw)
