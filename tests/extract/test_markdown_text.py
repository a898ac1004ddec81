"""Markdown keeps its text as written and finds ATX and Setext headings; plain text is
decoded by the indexer's rules."""

from __future__ import annotations

import pytest

from landmark_rag.extract import BadFileError, extract

NOTES = """---
title: front matter is not a heading
---
# Field notes #

Intro paragraph.

Setext chapter
==============

Body of the chapter.
A second line of the same paragraph
-----------------------------------

```python
# a comment in code, not a heading
x = 1
```

    # indented code, not a heading

### Third level ###
#hashtag is not a heading
Last words.
"""


def test_markdown_headings_with_exact_spans_and_text_unchanged():
    doc = extract(NOTES.encode(), suffix=".md")
    assert doc.format == "markdown" and doc.text == NOTES
    assert [(h.title, h.level) for h in doc.headings] == [
        ("Field notes", 1),
        ("Setext chapter", 1),
        ("Body of the chapter.\nA second line of the same paragraph", 2),
        ("Third level", 3),
    ]
    for h in doc.headings:
        assert doc.text[h.start : h.end] == h.title
    assert doc.heading_at(doc.text.index("Last words")).title == "Third level"
    assert doc.heading_at(doc.text.index("title:")) is None


def test_crlf_markdown_keeps_exact_spans():
    text = "Title\r\n=====\r\n\r\ntext\r\n## Next\r\nmore\r\n"
    doc = extract(text.encode(), suffix=".markdown")
    assert [(h.title, h.level) for h in doc.headings] == [("Title", 1), ("Next", 2)]
    assert doc.text == text


def test_plain_text_is_decoded_exactly_as_before():
    text = "caf\u00e9\r\nline two\n"
    doc = extract(text.encode("utf-16"), suffix=".txt")
    assert doc.format == "text" and doc.text == text and doc.pages is None and doc.headings == []


def test_binary_bytes_stay_a_bad_file():
    with pytest.raises(BadFileError) as info:
        extract(b"\x00\x01\x02binary", suffix=".bin")
    assert info.value.reason == "binary file (contains NUL bytes)"
