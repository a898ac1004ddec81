"""HTML extraction: the main text with its headings, without scripts, styles, navigation,
cookie banners, newsletters and footers."""

from __future__ import annotations

import pytest

from landmark_rag.extract import DocumentError, extract
from tests.extract.documents import ARTICLE_HTML, BOILERPLATE

pytest.importorskip("trafilatura")


def test_boilerplate_is_not_in_the_text():
    text = extract(ARTICLE_HTML.encode(), suffix=".html").text
    for junk in BOILERPLATE:
        assert junk.lower() not in text.lower(), junk
    assert "turning its crank three times clockwise" in " ".join(text.split())


def test_headings_are_found_with_levels_and_exact_spans():
    doc = extract(ARTICLE_HTML.encode(), suffix=".html")
    assert doc.format == "html"
    assert [(h.title, h.level) for h in doc.headings] == [
        ("Caring for your widget", 1),
        ("Installing the widget", 2),
        ("Cleaning", 2),
    ]
    for h in doc.headings:
        assert doc.text[h.start : h.end] == h.title
    assert doc.heading_at(doc.text.index("Keep the original box")).title == "Installing the widget"
    assert doc.metadata["title"] == "Widget care guide"


def test_blocks_are_paragraphs_and_a_br_is_a_line_break():
    text = extract(ARTICLE_HTML.encode(), suffix=".html").text
    assert "Keep the original box for transport.\n\nNever install it near a radiator." in text
    # a <br> is a line break; a newline in the source is only a space
    assert "rust the gears inside, and solvents" in text
    assert "keep the dust out.\nNever use oil on the crank." in text


def test_a_page_without_h1_gets_its_title_as_the_first_heading():
    html = b"<html><head><title>Release notes</title></head><body><h2>Version 2</h2><p>Faster startup.</p></body></html>"
    doc = extract(html, suffix=".htm")
    assert [(h.title, h.level) for h in doc.headings] == [("Release notes", 1), ("Version 2", 2)]
    assert doc.text.startswith("Release notes\n\nVersion 2\n\nFaster startup.")


def test_a_legacy_charset_is_decoded_as_declared():
    html = '<html><head><meta charset="windows-1252"></head><body><p>Caf\u00e9 cr\u00e8me costs \u20ac3.</p></body></html>'
    assert "Café crème costs €3." in extract(html.encode("cp1252"), suffix=".html").text


def test_a_page_with_only_boilerplate_is_empty():
    html = b"<html><head><script>var a = 1;</script></head><body><nav><a href='/'></a></nav></body></html>"
    with pytest.raises(DocumentError) as info:
        extract(html, suffix=".html")
    assert info.value.reason == "empty HTML page (no text)"


def test_comments_inside_a_paragraph_are_not_text():
    html = (
        b"<html><body><article><p>The valve opens at dawn <!-- editor: check this --> and closes at dusk, "
        b"every day of the year without exception.</p></article></body></html>"
    )
    text = extract(html, suffix=".html").text
    assert "editor" not in text and "opens at dawn and closes at dusk" in text
