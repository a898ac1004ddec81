"""``SimpleDirectoryReader``'s pages of one PDF are one document (``landmark_rag.ingest.join_pages``).

``llama-index-readers-file`` is not a dependency, so the per-page Documents are built here as
its PDF reader builds them (``page_label``, ``file_name``, ``file_path``, ``file_type``, a
random ``id_`` each), from a real 3-page PDF whose page texts come from the package's own
extractor.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("llama_index.vector_stores.chroma")

import chromadb
from llama_index.core import Document
from llama_index.core.ingestion import IngestionPipeline
from llama_index.vector_stores.chroma import ChromaVectorStore

from landmark_rag.extract import extract
from landmark_rag.llama_index import LandmarkEmbedding, LandmarkNodeParser, ReplaceDocuments
from landmark_rag.store import ChromaSentenceStore
from tests.extract import documents


@pytest.fixture(scope="module")
def pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return documents.write_river_pdf(tmp_path_factory.mktemp("pdf"))


def reader_pages(path: Path) -> list[Document]:
    """What ``SimpleDirectoryReader(input_files=[path]).load_data()`` returns for a PDF."""
    got = extract(path)
    assert got.pages is not None
    return [
        Document(text=got.text[p.start : p.end], metadata={
            "page_label": str(p.number), "file_name": path.name, "file_path": str(path),
            "file_type": "application/pdf", "file_size": path.stat().st_size,
        })
        for p in got.pages
    ]


def ingest(embed: LandmarkEmbedding, docs: list[Document], vector_store=None) -> list:
    steps = [LandmarkNodeParser.for_embedding(embed), embed]
    if vector_store is not None:
        steps.append(ReplaceDocuments(vector_store, embed_model=embed))
    return IngestionPipeline(transformations=steps, vector_store=vector_store).run(documents=docs)


def test_pages_of_one_file_are_one_document_like_the_same_text(pdf: Path, tiny_encoder) -> None:
    embed = LandmarkEmbedding(encoder=tiny_encoder(pooling="landmark"))
    paged = ingest(embed, list(reversed(reader_pages(pdf))))
    whole = ingest(embed, [Document(id_=str(pdf), text=extract(pdf).text)])
    assert {n.metadata["doc_id"] for n in paged} == {str(pdf)}
    assert [n.metadata["sentence_page"] for n in paged] == [1, 1, 1, 2, 2, 3, 3]
    assert [(n.node_id, n.text, n.start_char_idx) for n in paged] == [(n.node_id, n.text, n.start_char_idx)
                                                                      for n in whole]
    # one pass over the joined text: every vector equals the one-document vector
    np.testing.assert_allclose([n.embedding for n in paged], [n.embedding for n in whole], rtol=1e-5, atol=1e-6)
    md = paged[0].metadata
    assert md["file_name"] == "river.pdf" and "page_label" not in md
    assert "sentence_page" in paged[0].excluded_llm_metadata_keys


def test_re_ingesting_the_file_replaces_it_as_a_whole(pdf: Path, tiny_encoder) -> None:
    embed = LandmarkEmbedding(encoder=tiny_encoder(pooling="landmark"))
    # in-memory Chroma clients of one process share their collections: a name of its own
    collection = chromadb.EphemeralClient().get_or_create_collection(f"pages-{uuid.uuid4().hex[:8]}")
    vector_store = ChromaVectorStore(chroma_collection=collection)
    ingest(embed, reader_pages(pdf), vector_store)
    ingest(embed, reader_pages(pdf)[:2], vector_store)
    store = ChromaSentenceStore.for_collection(vector_store.client)
    assert list(store.documents()) == [str(pdf)]
    sentences = store.read_document(str(pdf)).sentences
    assert {s.page for s in sentences} == {1, 2} and store.count_sentences() == len(sentences)


def test_docs_pages_example_runs(capsys) -> None:
    """docs/llama_index.md, "PDF pages are one document", runs as it stands."""
    import re

    from conftest import REPO

    blocks = re.findall(r"```python\n(.*?)```", (REPO / "docs" / "llama_index.md").read_text(encoding="utf-8"),
                        flags=re.DOTALL)
    (block,) = [b for b in blocks if "page_label" in b]
    namespace: dict = {"__name__": "__docs__"}
    exec(compile(block, "docs/llama_index.md", "exec"), namespace)  # noqa: S102 - our own docs
    passage = namespace["passages"][0].node
    assert "1902" in passage.text and "2" in passage.metadata["pages"].split(",")
