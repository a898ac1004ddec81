"""One rule for "the store's model": a store written with config overrides opens the same way
through the CLI, the core ``LandmarkIndex``, LangChain and LlamaIndex.

Before the rule lived in one place, LangChain re-applied a different list of settings than
the CLI (it dropped ``lmk_token``), so such a store opened in the CLI but raised
``StoreMismatchError`` through LangChain.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from landmark_rag import LandmarkIndex

OVERRIDES = {"pooling": "landmark", "lmk_token": "[CLS]", "query_instruction": "query: "}
QUESTION = "Who proved that air is necessary for combustion?"


@pytest.fixture(scope="module")
def written(tmp_path_factory, tiny_bert_dir, excerpt_articles):
    db = tmp_path_factory.mktemp("overrides") / "db"
    index = LandmarkIndex.open(db, collection="ovr", model=str(tiny_bert_dir), overrides=OVERRIDES)
    index.add_texts([a.text for a in excerpt_articles], ids=[a.title for a in excerpt_articles])
    identity = index.encoder.config.identity()
    assert {k: identity[k] for k in OVERRIDES} == OVERRIDES  # the overrides are what the store records
    return db, index, identity


def test_core_reopens_with_the_recorded_settings(written):
    db, index, identity = written
    again = LandmarkIndex.open(db, collection="ovr", create=False)
    assert again.encoder.config.identity() == identity
    assert again.encoder.model is index.encoder.model  # one cached copy of the weights
    assert [p.id for p in again.search(QUESTION, k=3)] == [p.id for p in index.search(QUESTION, k=3)]


def test_cli_query_opens_it(written):
    from landmark_rag.cli import _register, app

    db, index, _ = written
    _register()
    result = CliRunner().invoke(app, ["query", QUESTION, "--db", str(db), "--collection", "ovr", "--json", "-k", "3"])
    assert result.exit_code == 0, result.output
    got = [(r["doc_id"], r["first_sentence"], r["last_sentence"]) for r in json.loads(result.stdout)]
    assert got == [(p.doc_id, p.first_index, p.last_index) for p in index.search(QUESTION, k=3)]


def test_langchain_opens_it(written):
    from landmark_rag.langchain import BoundaryExpansionCompressor, LandmarkRetriever

    db, index, identity = written
    retriever = LandmarkRetriever(persist_directory=str(db), collection_name="ovr", k=3)
    docs = retriever.invoke(QUESTION)  # raised StoreMismatchError before (lmk_token not re-applied)
    assert retriever.index.encoder.config.identity() == identity
    assert [d.id for d in docs] == [p.id for p in index.search(QUESTION, k=3)]
    compressor = BoundaryExpansionCompressor(persist_directory=str(db), collection_name="ovr")
    assert compressor.index.encoder.config.identity() == identity


def test_llama_index_opens_it(written):
    import chromadb
    from llama_index.vector_stores.chroma import ChromaVectorStore

    from landmark_rag.llama_index import LandmarkEmbedding

    db, index, identity = written
    collection = chromadb.PersistentClient(path=str(db)).get_collection("ovr")
    embed = LandmarkEmbedding.for_vector_store(ChromaVectorStore(chroma_collection=collection))
    assert embed.encoder.config.identity() == identity
    np.testing.assert_allclose(embed.get_query_embedding(QUESTION), index.encode_query(QUESTION), atol=1e-6)
