"""Word extraction on files written by python-docx: reading order, headings from styles
(built-in and a custom style based on one), tables, and what is left out."""

from __future__ import annotations

import pytest

from landmark_rag.extract import DocumentError, extract

pytest.importorskip("docx")


def test_headings_come_from_styles_with_exact_spans(manual_docx):
    doc = extract(manual_docx, suffix=".docx")
    assert doc.format == "docx"
    assert [(h.title, h.level) for h in doc.headings] == [
        ("Widget Manual", 1),  # the Title style
        ("Installation", 1),
        ("Tools you need", 2),
        ("Turning the crank", 2),  # a custom style based on Heading 2
        ("Maintenance", 1),
    ]
    for h in doc.headings:
        assert doc.text[h.start : h.end] == h.title


def test_a_paragraph_knows_its_nearest_heading_and_path(manual_docx):
    doc = extract(manual_docx)
    at = doc.text.index("Turn the crank three times")
    assert doc.heading_at(at).title == "Turning the crank"
    assert [h.title for h in doc.heading_path(at)] == ["Installation", "Turning the crank"]
    assert doc.heading_at(doc.text.index("Wipe the widget")).title == "Maintenance"
    assert doc.heading_at(0).title == "Widget Manual"


def test_body_text_tables_and_line_breaks_in_reading_order(manual_docx):
    text = extract(manual_docx).text
    order = ["care for your widget", "flat surface", "screwdriver", "clockwise.\nThen wait", "Gear oil", "dry cloth"]
    positions = [text.index(s) for s in order]
    assert positions == sorted(positions)
    assert "Part | Interval\n\nGear oil | Every six months" in text
    assert "Confidential footer" not in text  # page furniture is not the document's text
    # a heading and the paragraph after it are two paragraphs to the segmenter
    assert "Installation\n\nPlace the widget" in text


def test_an_empty_document_says_so(empty_docx):
    with pytest.raises(DocumentError) as info:
        extract(empty_docx, suffix=".docx")
    assert info.value.reason == "empty document (no text)"


def test_a_truncated_docx_is_corrupt(manual_docx):
    with pytest.raises(DocumentError) as info:
        extract(manual_docx[: len(manual_docx) // 2], suffix=".docx")
    assert info.value.reason == "corrupt DOCX: damaged or truncated ZIP archive"


def test_a_zip_with_a_broken_document_part_is_corrupt(manual_docx):
    import io
    import zipfile

    src = zipfile.ZipFile(io.BytesIO(manual_docx))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as out:
        for item in src.infolist():
            data = src.read(item)
            out.writestr(item, data[: len(data) // 2] if item.filename == "word/document.xml" else data)
    with pytest.raises(DocumentError) as info:
        extract(buf.getvalue(), suffix=".docx")
    assert info.value.reason.startswith("corrupt DOCX: ")
