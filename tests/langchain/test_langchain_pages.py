"""A PDF loader's pages of one file are one document (``landmark_rag.ingest.join_pages``).

``langchain_community`` is not a dependency, so the per-page Documents are built here as
``PyPDFLoader`` builds them (``source``, 0-based ``page``, ``page_label``, ``total_pages``),
from a real 3-page PDF whose page texts come from the package's own extractor.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

pytest.importorskip("langchain_core")

from langchain_core.documents import Document

from landmark_rag.extract import extract
from landmark_rag.langchain import LandmarkEmbeddings, LandmarkRetriever, LandmarkTextSplitter
from tests.extract import documents


@pytest.fixture(scope="module")
def pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return documents.write_river_pdf(tmp_path_factory.mktemp("pdf"))


def loader_pages(path: Path) -> list[Document]:
    """What ``PyPDFLoader(path).load()`` returns: one Document per page."""
    got = extract(path)
    assert got.pages is not None
    return [
        Document(page_content=got.text[p.start : p.end],
                 metadata={"source": str(path), "page": p.number - 1, "page_label": str(p.number), "total_pages": 3})
        for p in got.pages
    ]


@pytest.fixture
def embeddings(tiny_encoder) -> LandmarkEmbeddings:
    return LandmarkEmbeddings.from_encoder(tiny_encoder(pooling="landmark"))


def retriever(embeddings: LandmarkEmbeddings, name: str) -> LandmarkRetriever:
    # in-memory Chroma clients of one process share their collections: a name of its own
    unique = f"{name}-{uuid.uuid4().hex[:8]}"
    return LandmarkRetriever(embeddings=embeddings, collection_name=unique, k=2, strategy="front", mode="dense")


def test_pages_of_one_file_are_one_document_with_pages(pdf: Path, embeddings: LandmarkEmbeddings) -> None:
    pages = loader_pages(pdf)
    r = retriever(embeddings, "pages")
    assert r.add_documents(list(reversed(pages))) == [str(pdf)] * 3  # any order: joined in page order
    assert list(r.store.documents()) == [str(pdf)]
    sentences = r.store.read_document(str(pdf)).sentences
    assert [s.page for s in sentences] == [1, 1, 1, 2, 2, 3, 3]  # the run-on sentence starts on page 1
    assert r.store.document_text(str(pdf)) == extract(pdf).text  # the PDF's own joining rule
    record = r.store.documents()[str(pdf)]
    assert record.get("total_pages") == 3 and "page" not in record and "page_label" not in record


def test_retrieval_on_the_pages_equals_the_same_text_as_one_document(pdf: Path, embeddings) -> None:
    paged, whole = retriever(embeddings, "paged"), retriever(embeddings, "whole")
    paged.add_documents(loader_pages(pdf))
    whole.add_documents([Document(page_content=extract(pdf).text, metadata={"source": str(pdf), "total_pages": 3})])
    for question in ("When was the stone bridge built?", "Where do salmon return?", "Who maps streams?"):
        a, b = paged.invoke(question), whole.invoke(question)
        assert [(d.page_content, d.metadata["start"], d.metadata["score"]) for d in a] == [
            (d.page_content, d.metadata["start"], d.metadata["score"]) for d in b
        ]
        for d in a:  # the pages each passage spans, as the PDF numbers them
            assert d.metadata["pages"] and "pages" not in next(x for x in b if x.id == d.id).metadata


def test_re_ingesting_the_file_replaces_it_as_a_whole(pdf: Path, embeddings) -> None:
    r = retriever(embeddings, "again")
    r.add_documents(loader_pages(pdf))
    shorter = loader_pages(pdf)[:2]
    r.add_documents(shorter)
    assert list(r.store.documents()) == [str(pdf)]
    assert {s.page for s in r.store.read_document(str(pdf)).sentences} == {1, 2}
    assert r.store.count_sentences() == len(r.store.read_document(str(pdf)).sentences)  # nothing stale left


def test_documents_without_page_metadata_keep_the_clear_error(pdf: Path) -> None:
    rows = [Document(page_content=f"Row {i} text.", metadata={"source": "table.csv"}) for i in range(2)]
    with pytest.raises(ValueError, match="two different documents resolve to the id 'table.csv'"):
        LandmarkTextSplitter().split_documents(rows)


def test_the_splitter_gives_the_joined_sentences_their_pages(pdf: Path) -> None:
    sentences = LandmarkTextSplitter().split_documents(loader_pages(pdf))
    assert {d.metadata["doc_id"] for d in sentences} == {str(pdf)}
    assert [d.metadata["sentence_page"] for d in sentences] == [1, 1, 1, 2, 2, 3, 3]
