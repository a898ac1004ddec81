"""The framework-free pieces under the CLI: file discovery, decoding, highlighting, shading.

Pure functions on real bytes and real files in tmp dirs; no model needed, so these run in
milliseconds and pin down the edge cases the end-to-end CLI tests only touch once.
"""

from __future__ import annotations

import codecs

import numpy as np
import pytest

from landmark_rag.ingest import BadFileError, decode_bytes, discover_files, read_document
from landmark_rag.render import hit_segments, shade_levels
from landmark_rag.render.collect import DocumentView
from landmark_rag.render.html import render_page
from landmark_rag.types import Passage, Sentence


# ---------------------------------------------------------------------------- decoding
@pytest.mark.parametrize(
    "data, text",
    [
        ("Grüße, Welt.\r\nZweite Zeile.".encode(), "Grüße, Welt.\r\nZweite Zeile."),  # CRLF kept: offsets stay true
        (codecs.BOM_UTF8 + b"BOM first.", "BOM first."),
        ("UTF-16 text here.".encode("utf-16"), "UTF-16 text here."),  # with its BOM
        ("UTF-32 text.".encode("utf-32"), "UTF-32 text."),
        (b"tabs\tand form\x0cfeeds are text", "tabs\tand form\x0cfeeds are text"),
    ],
)
def test_decode_text(data: bytes, text: str) -> None:
    assert decode_bytes(data) == text


@pytest.mark.parametrize(
    "data, reason",
    [
        (b"", "empty"),
        (b"  \n\t \n", "empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "binary"),
        (bytes(range(1, 32)) * 20, "binary"),
        ("caf\xe9 cr\xe8me".encode("latin-1"), "undecodable"),
    ],
)
def test_decode_refuses(data: bytes, reason: str) -> None:
    with pytest.raises(BadFileError) as err:
        decode_bytes(data)
    assert err.value.reason.startswith(reason)


def test_read_document_reports_unreadable(tmp_path) -> None:
    with pytest.raises(BadFileError, match="unreadable"):
        read_document(tmp_path / "missing.txt")


# ---------------------------------------------------------------------------- discovery
def test_discover_ids_are_relative_and_stable(tmp_path) -> None:
    root = tmp_path / "docs"
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "landmark_db").mkdir()
    for rel in ["a.txt", "sub/b.md", "sub/deeper/c.rst", ".hidden.txt", ".git/config", "landmark_db/chroma.sqlite3"]:
        (root / rel).write_text("x")
    found = discover_files([root], exclude=[root / "landmark_db"])
    assert [f.doc_id for f in found] == ["a.txt", "sub/b.md", "sub/deeper/c.rst"]
    assert all(f.root == root.resolve() and f.path.is_absolute() for f in found)
    # the same folder reached through another spelling gives the same ids
    again = discover_files([tmp_path / "docs" / "sub" / ".."], exclude=[root / "landmark_db"])
    assert [f.doc_id for f in again] == [f.doc_id for f in found]
    # a file given directly is its own document, named by its file name
    (single,) = discover_files([root / "sub" / "b.md"])
    assert single.doc_id == "b.md" and single.root == (root / "sub").resolve()


def test_discover_glob_and_missing(tmp_path) -> None:
    (tmp_path / "n").mkdir()
    for rel in ["a.md", "b.txt", "n/c.md", "n/d.txt"]:
        (tmp_path / rel).write_text("x")
    assert [f.doc_id for f in discover_files([tmp_path], glob="*.md")] == ["a.md", "n/c.md"]
    assert [f.doc_id for f in discover_files([tmp_path], glob="n/*")] == ["n/c.md", "n/d.txt"]
    assert [f.doc_id for f in discover_files([tmp_path], glob="**/*.txt")] == ["b.txt", "n/d.txt"]
    with pytest.raises(FileNotFoundError):
        discover_files([tmp_path / "nope"])


# ---------------------------------------------------------------------------- rendering
def _passage(text: str, start: int, end: int, first: int, last: int, hits: list[int]) -> Passage:
    return Passage("d", start, end, first, last, hits, 0.5, text[start:end])


def test_hit_segments_cover_the_passage_exactly() -> None:
    doc = "One. Two is here. Three! Four?"
    sents = [Sentence(0, 0, 4, "One.", "d"), Sentence(1, 5, 17, "Two is here.", "d", " "),
             Sentence(2, 18, 24, "Three!", "d", " "), Sentence(3, 25, 30, "Four?", "d", " ")]
    p = _passage(doc, 5, 30, 1, 3, [2])
    segs = hit_segments(p, [sents[2], sents[0]])  # a sentence outside the passage is ignored
    assert "".join(t for t, _ in segs) == p.text
    assert [t for t, hit in segs if hit] == ["Three!"]
    assert hit_segments(p, []) == [(p.text, False)]


def test_shade_levels_stretch_median_to_best() -> None:
    levels = shade_levels(np.array([0.1, 0.2, 0.3, 0.5, 0.9], dtype=np.float32))
    assert levels[0] == 0 and levels[2] == 0 and levels[-1] == 1 and 0 < levels[3] < 1
    assert shade_levels(np.array([0.4, 0.4])).tolist() == [0.0, 0.0]


def test_render_page_escapes_and_marks_passages() -> None:
    doc = 'Plain start. <script>alert("x")</script> & more. The end.'
    sents = [Sentence(0, 0, 12, "Plain start.", "d"), Sentence(1, 13, 48, doc[13:48], "d", " "),
             Sentence(2, 49, 57, "The end.", "d", " ")]
    assert [doc[s.start:s.end] for s in sents] == [s.text for s in sents]
    p = _passage(doc, 0, 48, 0, 1, [1])
    view = DocumentView("d", "/x/d.txt", doc, sents, np.array([0.1, 0.9, 0.2], dtype=np.float32), [(1, p)])
    page = render_page('why <b>?', [p], [[sents[1]]], [view], sources=["/x/d.txt"])
    assert "<script>" not in page and "&lt;script&gt;" in page and "why &lt;b&gt;?" in page
    assert 'id="p1"' in page and page.count('class="s hit"') == 1
    assert "rgba(255,170,0,0.850)" in page  # the best sentence is fully shaded
