"""Real documents through the core ingestion: PDF, Word, HTML, Markdown and text files in one
folder, indexed by ``add_files`` and the CLI, searched with the package's default model.

The files are written by the libraries real applications use (reportlab, python-docx; see
tests/extract/documents.py). What is checked is what a user sees: the page of an answer,
both pages of a passage across a page break, no navigation or script text in the index, a
one-line reason for every PDF that cannot be read while the rest of the folder is indexed,
and that a changed PDF is the only file encoded again.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from landmark_rag import LandmarkIndex
from landmark_rag.cli import _register, app
from landmark_rag.expand import Front, expand_hits
from landmark_rag.types import Hit
from tests.extract import documents

_register()

#: A four-page report: one topic a page; the answer to QUESTION is on page 3 only.
REPORT_PAGES = [
    ["Harbour authority annual report.", "The piers were repaired in spring.", "Two new cranes arrived in May."],
    ["Tide tables were revised by the survey office.", "The dredger worked through the summer months.",
     "Shipping traffic rose by a tenth."],
    ["The lighthouse keeper keeps a cat named Biscuit.", "Biscuit sleeps on the lamp room stairs every night.",
     "Visitors may climb the tower on Sundays."],
    ["Appendix: the budget was balanced.", "Dredging costs fell by a third."],
]
QUESTION = "What is the name of the lighthouse keeper's cat?"

HTML_PAGE = b"""<!doctype html><html><head><title>Garden guide</title>
<script>var trackingPixel = "SCRIPTMARKER";</script><style>.x { color: red } /* STYLEMARKER */</style></head>
<body><nav><a href="/">Home</a> <a href="/shop">NAVMARKER shop</a></nav>
<article><h1>Garden guide</h1><h2>Roses</h2>
<p>Roses need six hours of sun each day. Prune them in late winter before new growth starts.</p>
<h2>Tomatoes</h2><p>Tomatoes want deep watering twice a week. Stake them early so the stems do not break.</p>
<p>Pick the fruit when it is fully red and slightly soft to the touch.</p></article>
<footer>FOOTERMARKER copyright and cookie settings</footer></body></html>"""

MARKDOWN = "# Bread\n\nFlour, water, salt and yeast make bread.\n\n## Baking\n\nBake the loaf for forty minutes.\n"


def write_folder(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.pdf").write_bytes(documents.build_pdf(REPORT_PAGES))
    (folder / "garden.html").write_bytes(HTML_PAGE)
    (folder / "bread.md").write_text(MARKDOWN, encoding="utf-8")
    (folder / "manual.docx").write_bytes(documents.build_manual_docx())
    (folder / "notes.txt").write_text("Plain notes about the weather. It rained all week.", encoding="utf-8")
    (folder / "secret.pdf").write_bytes(documents.build_encrypted_pdf())
    (folder / "scan.pdf").write_bytes(documents.build_image_only_pdf())
    whole = documents.build_pdf(REPORT_PAGES)
    (folder / "truncated.pdf").write_bytes(whole[: len(whole) // 2])
    return folder


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("documents")
    folder = write_folder(root / "docs")
    index = LandmarkIndex.open(root / "db", collection="docs")
    report = index.add_files([folder], show_progress=False)
    return index, report, folder


def test_bad_pdfs_are_skipped_with_their_reason_and_the_rest_is_indexed(indexed) -> None:
    _, report, _ = indexed
    reasons = {Path(o.source).name: o.reason for o in report.with_status("skipped")}
    assert reasons == {
        "secret.pdf": "encrypted PDF (needs a password)",
        "scan.pdf": "no text layer (scanned PDF?)",
        "truncated.pdf": "not a readable PDF: truncated (no end-of-file marker)",
    }
    assert all("\n" not in r for r in reasons.values())
    indexed_ids = {o.doc_id for o in report.with_status("indexed")}
    assert indexed_ids == {"report.pdf", "garden.html", "bread.md", "manual.docx", "notes.txt"}


def test_the_answer_on_page_three_comes_back_with_page_three(indexed) -> None:
    index, _, _ = indexed
    best = index.search(QUESTION, k=1, where={"doc_id": "report.pdf"})[0]
    hits = index.store.read_document(best.doc_id, best.hit_indices).sentences
    assert "Biscuit" in best.text and hits and all(s.page == 3 for s in hits)
    # the passage is the hit expanded (the model's Surround-1): it names every page it touches
    assert 3 in best.pages and best.pages == list(range(best.pages[0], best.pages[-1] + 1))
    assert best.span_metadata()["pages"] == ",".join(map(str, best.pages))
    text = index.store.document_text("report.pdf")
    assert text[best.start : best.end] == best.text  # offsets are exact slices of the extracted text


def test_a_passage_across_a_page_break_carries_both_pages(indexed) -> None:
    index, _, _ = indexed
    sentences = index.store.read_document("report.pdf").sentences
    assert [s.page for s in sentences] == [1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4]
    first_of_page_3 = next(s for s in sentences if s.page == 3)
    (passage,) = expand_hits([Hit(first_of_page_3, 1.0, {})], index.store, Front(k=2))
    assert passage.pages == [2, 3]
    assert passage.text == index.store.document_text("report.pdf")[passage.start : passage.end]


def test_html_boilerplate_is_not_indexed_and_headings_are_kept(indexed) -> None:
    index, _, _ = indexed
    sentences = index.store.read_document("garden.html").sentences
    text = index.store.document_text("garden.html")
    for marker in ("SCRIPTMARKER", "STYLEMARKER", "NAVMARKER", "FOOTERMARKER"):
        assert marker not in text
    assert "Roses need six hours of sun each day." in text
    by_text = {s.text: s for s in sentences}
    assert by_text["Tomatoes want deep watering twice a week."].heading == "Tomatoes"
    assert by_text["Roses need six hours of sun each day."].heading == "Roses"
    assert all(s.page is None for s in sentences)


def test_markdown_and_word_sentences_keep_their_nearest_heading(indexed) -> None:
    index, _, _ = indexed
    bread = {s.text: s.heading for s in index.store.read_document("bread.md").sentences}
    assert bread["Bake the loaf for forty minutes."] == "Baking"
    assert bread["Flour, water, salt and yeast make bread."] == "Bread"
    manual = {s.text: s.heading for s in index.store.read_document("manual.docx").sentences}
    assert manual["Turn the crank three times clockwise."] == "Turning the crank"
    notes = index.store.read_document("notes.txt").sentences
    assert all(s.page is None and s.heading is None for s in notes)


def test_search_results_name_pages_and_headings_in_their_metadata(indexed) -> None:
    index, _, _ = indexed
    best = index.search("How often should tomatoes be watered?", k=1, where={"doc_id": "garden.html"})[0]
    assert best.heading == "Tomatoes" and best.pages == []
    assert best.span_metadata()["heading"] == "Tomatoes" and "pages" not in best.span_metadata()


def test_a_changed_pdf_is_the_only_file_encoded_again(tmp_path: Path, tiny_encoder) -> None:
    folder = write_folder(tmp_path / "docs")
    index = _tiny_index(tmp_path, tiny_encoder)  # which files are encoded does not depend on the model
    index.add_files([folder], show_progress=False)
    pages = [list(p) for p in REPORT_PAGES]
    pages[3] = ["Appendix: the budget ran a small surplus.", "Dredging costs fell by a third."]
    (folder / "report.pdf").write_bytes(documents.build_pdf(pages))
    again = index.add_files([folder], show_progress=False)
    statuses = {Path(o.source).name: o.status for o in again.outcomes}
    assert statuses == {
        "report.pdf": "updated", "garden.html": "unchanged", "bread.md": "unchanged", "manual.docx": "unchanged",
        "notes.txt": "unchanged", "secret.pdf": "skipped", "scan.pdf": "skipped", "truncated.pdf": "skipped",
    }
    assert "small surplus" in index.store.document_text("report.pdf")
    # the same bytes a third time: nothing is encoded
    third = index.add_files([folder], show_progress=False)
    assert third.with_status("indexed", "updated") == []


def _tiny_index(tmp_path: Path, tiny_encoder) -> LandmarkIndex:
    from landmark_rag.store import ChromaSentenceStore

    encoder = tiny_encoder()
    return LandmarkIndex(ChromaSentenceStore.open(tmp_path / "db", identity=encoder.config.identity()), encoder)


def test_cli_indexes_a_folder_of_documents_and_shows_pages(tmp_path: Path, indexed) -> None:
    _, _, folder = indexed
    db = tmp_path / "db"
    runner = CliRunner()
    done = runner.invoke(app, ["index", str(folder), "--db", str(db), "--quiet"])
    assert done.exit_code == 0, done.output
    assert "skipped" in done.output and "encrypted PDF (needs a password)" in done.output
    got = runner.invoke(app, ["query", QUESTION, "--db", str(db), "--json", "-k", "1"])
    assert got.exit_code == 0, got.output
    (row,) = json.loads(got.stdout)
    assert row["doc_id"] == "report.pdf" and 3 in row["pages"]
    assert all(h["page"] == 3 for h in row["hit_sentences"])
    shown = runner.invoke(app, ["query", QUESTION, "--db", str(db), "-k", "1", "--strategy", "front"])
    assert "p. 3" in shown.stdout or "pp. " in shown.stdout
    exported = runner.invoke(app, ["info", "--db", str(db), "--text", "report.pdf", "--json"])
    assert exported.exit_code == 0, exported.output
    payload = json.loads(exported.stdout)
    assert payload["pages"] == [1, 2, 3, 4]
    assert payload["text"][row["start"] : row["end"]] == row["text"]
