"""PDF extraction on PDFs written by reportlab: pages, labels, run-on sentences,
hyphens, and the one-line reasons for files that have no readable text."""

from __future__ import annotations

import pytest

from landmark_rag.extract import BadFileError, DocumentError, extract
from landmark_rag.segment import segment_sentences
from tests.extract.documents import PDF_PAGES, build_pdf

pytest.importorskip("pypdfium2")

def test_every_page_is_an_exact_span_with_its_number_and_label(report_pdf):

    doc = extract(report_pdf, suffix=".pdf")
    assert doc.format == "pdf" and doc.metadata["page_count"] == 4
    assert [p.number for p in doc.pages] == [1, 2, 3, 4]
    assert [p.label for p in doc.pages] == ["i", "ii", "1", "2"]
    for page, lines in zip(doc.pages, PDF_PAGES, strict=True):
        assert doc.text[page.start : page.end].split("\n") == lines

def test_a_fact_on_page_3_is_found_on_page_3(report_pdf):
    doc = extract(report_pdf, suffix=".pdf")
    sentence = next(s for s in segment_sentences(doc.text) if "Biscuit" in doc.text[s.start : s.end])
    assert doc.page_at(sentence.start).number == 3
    assert doc.page_numbers(sentence.start, sentence.end) == [3]

def test_a_sentence_across_a_page_break_stays_whole_and_spans_both_pages(report_pdf):
    doc = extract(report_pdf, suffix=".pdf")
    sentences = [doc.text[s.start : s.end] for s in segment_sentences(doc.text)]
    whole = "The migration of the arctic terns along the northern\ncoast was counted by volunteers every morning."
    assert whole in sentences
    start = doc.text.index(whole)
    assert doc.page_numbers(start, start + len(whole)) == [2, 3]
    # a page that ends a sentence is a paragraph break: page 1's last sentence stays on page 1
    assert "cranes.\n\nThe tide tables" in doc.text

def test_line_end_hyphens_join_only_words_the_document_uses(hyphenated_pdf):
    doc = extract(hyphenated_pdf)
    assert "moves water efficiently through" in doc.text
    assert "state-owned canal" in doc.text
    assert "\x02" not in doc.text and "\ufffe" not in doc.text

def test_blank_pages_are_kept_as_empty_spans(tmp_path):
    data = build_pdf([["First page words."], [], ["Third page words."]])
    path = tmp_path / "gap.pdf"
    path.write_bytes(data)
    doc = extract(path)
    assert doc.metadata["pages_without_text"] == [2]
    assert doc.pages[1].start == doc.pages[1].end
    assert doc.page_at(doc.text.index("Third")).number == 3

def test_an_owner_password_alone_does_not_stop_reading(owner_locked_pdf):
    assert "Readable text in a restricted file." in extract(owner_locked_pdf).text

@pytest.mark.parametrize(
    ("fixture", "reason"),
    [
        ("encrypted_pdf", "encrypted PDF (needs a password)"),
        ("image_only_pdf", "no text layer (scanned PDF?)"),
    ],
)
def test_unreadable_pdfs_say_why(request, fixture, reason):
    with pytest.raises(DocumentError) as info:
        extract(request.getfixturevalue(fixture), suffix=".pdf")
    assert info.value.reason == reason
    assert isinstance(info.value, BadFileError)  # skipped like any bad file today

def test_a_truncated_pdf_says_it_is_truncated(report_pdf):
    with pytest.raises(DocumentError) as info:
        extract(report_pdf[: len(report_pdf) // 2], suffix=".pdf")
    assert info.value.reason == "not a readable PDF: truncated (no end-of-file marker)"

def test_a_damaged_pdf_with_an_end_marker_says_damaged(report_pdf):
    broken = report_pdf[:200] + b"\x00garbage" * 50 + b"\n%%EOF\n"
    with pytest.raises(DocumentError) as info:
        extract(broken, suffix=".pdf")
    assert info.value.reason.startswith("not a readable PDF: damaged (")

def test_a_text_file_named_pdf_is_refused(tmp_path):
    path = tmp_path / "notes.pdf"
    path.write_text("just some notes, not a PDF\n", encoding="utf-8")
    with pytest.raises(DocumentError) as info:
        extract(path)
    assert info.value.reason == "not a readable PDF: no PDF header (is it a text file?)"
