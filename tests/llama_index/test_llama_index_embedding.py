"""LandmarkEmbedding: documents are encoded in one pass, never sentence by sentence.

Real MiniLM on real data/squad-v1.1-dev-part-a.json articles (the first paragraphs of three articles, to keep
the default run short). ``pooling="mean"`` is the in-context set-up where a sentence's
vector depends on its neighbours, so "encoded in context" is observable: the stored
vectors equal ``encode_document`` of the whole document and differ from the sentence
embedded alone.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("llama_index.vector_stores.chroma")

import chromadb
from llama_index.core import Document, StorageContext, VectorStoreIndex
from llama_index.core.callbacks import CallbackManager, CBEventType, LlamaDebugHandler
from llama_index.core.ingestion import IngestionPipeline
from llama_index.vector_stores.chroma import ChromaVectorStore

from landmark_rag.llama_index import LandmarkEmbedding, LandmarkNodeParser
from landmark_rag.llama_index.embedding import rebuild_text
from landmark_rag.segment import segment_sentences
from landmark_rag.store import sentence_id

PARAGRAPHS = 3


@pytest.fixture(scope="module")
def docs(squad_articles) -> list[Document]:
    return [
        Document(text="\n\n".join(a.text.split("\n\n")[:PARAGRAPHS]), id_=a.title, metadata={"title": a.title})
        for a in squad_articles[:3]
    ]


@pytest.fixture(scope="module")
def mean_embed(minilm_mean) -> LandmarkEmbedding:
    return LandmarkEmbedding(encoder=minilm_mean)


def _stored(collection, doc: Document, n: int) -> np.ndarray:
    got = collection.get(ids=[sentence_id(doc.id_, i) for i in range(n)], include=["embeddings"])
    assert got["ids"] == [sentence_id(doc.id_, i) for i in range(n)]
    return np.asarray(got["embeddings"], dtype=np.float32)


def test_pipeline_stores_whole_document_encodings(tmp_path, docs, mean_embed, minilm_mean):
    client = chromadb.PersistentClient(path=str(tmp_path / "db"))
    collection = client.get_or_create_collection("landmark")
    vs = ChromaVectorStore(chroma_collection=collection)
    IngestionPipeline(transformations=[LandmarkNodeParser(), mean_embed], vector_store=vs).run(documents=docs)
    counts = [len(segment_sentences(d.text)) for d in docs]
    assert collection.count() == sum(counts)
    for doc, n in zip(docs, counts, strict=True):
        whole = minilm_mean.encode_document(doc.text, doc.id_)
        stored = _stored(collection, doc, n)
        np.testing.assert_allclose(stored, whole.embeddings, atol=1e-5)
        alone = minilm_mean.encode_texts([s.text for s in whole.sentences])
        cos = np.sum(stored * alone, axis=1)
        # in context is not the same as alone (mean pooling sees the neighbours)
        assert np.median(cos) < 0.99, cos


def test_from_documents_does_not_reembed_bare_strings(tmp_path, docs, mean_embed, minilm_mean):
    debug = LlamaDebugHandler()
    embed = LandmarkEmbedding(encoder=minilm_mean, callback_manager=CallbackManager([debug]))
    client = chromadb.PersistentClient(path=str(tmp_path / "db"))
    collection = client.get_or_create_collection("landmark")
    storage = StorageContext.from_defaults(vector_store=ChromaVectorStore(chroma_collection=collection))
    VectorStoreIndex.from_documents(
        docs[:2], transformations=[LandmarkNodeParser(), embed], embed_model=embed, storage_context=storage
    )
    events = debug.get_event_pairs(CBEventType.EMBEDDING)
    n = sum(len(segment_sentences(d.text)) for d in docs[:2])
    # exactly one embedding event (the in-context transformation) covering every sentence
    assert len(events) == 1
    assert len(events[0][1].payload["chunks"]) == n
    for doc in docs[:2]:
        whole = minilm_mean.encode_document(doc.text, doc.id_)
        np.testing.assert_allclose(_stored(collection, doc, len(whole)), whole.embeddings, atol=1e-5)


def test_rebuilt_text_equals_source_and_source_documents_are_used(docs, mean_embed, minilm_mean):
    doc = docs[0]
    nodes = LandmarkNodeParser().get_nodes_from_documents([doc])
    sents = [s.with_doc_id(doc.id_) for s in segment_sentences(doc.text)]
    rebuilt = rebuild_text(sents)
    assert rebuilt == doc.text.rstrip()
    # missing sentences leave spaces, but every offset still points at its sentence
    partial = rebuild_text([sents[0], sents[3]])
    assert partial[sents[3].start : sents[3].end] == sents[3].text
    shuffled = list(reversed(nodes))
    mean_embed(shuffled, source_documents=[doc])
    whole = minilm_mean.encode_document(doc.text, doc.id_)
    got = np.asarray([n.embedding for n in nodes], dtype=np.float32)
    np.testing.assert_allclose(got, whole.embeddings, atol=1e-5)


def test_bare_texts_and_queries(minilm, minilm_mean):
    embed = LandmarkEmbedding(encoder=minilm)
    texts = ["Oxygen is a chemical element.", "Paris is the capital of France. It is large."]
    got = np.asarray(embed.get_text_embedding_batch(texts))
    np.testing.assert_allclose(got, minilm.encode_texts(texts), atol=1e-5)
    np.testing.assert_allclose(embed.get_text_embedding(texts[1]), minilm.encode_texts(texts[1:])[0], atol=1e-5)
    q = "What is oxygen?"
    np.testing.assert_allclose(embed.get_query_embedding(q), minilm.encode_query(q), atol=1e-5)
    assert embed.model_name == minilm.model_name and embed.class_name() == "LandmarkEmbedding"
    # a node without sentence metadata (e.g. a Document given straight to the embedder)
    doc = Document(text=texts[1], id_="plain")
    embed([doc])
    np.testing.assert_allclose(doc.embedding, minilm.encode_texts(texts[1:])[0], atol=1e-5)


def test_a_blank_text_gets_a_rankable_vector(minilm):
    # VectorStoreIndex drops only empty nodes, so a whitespace node reaches the model; a zero
    # vector there gave NaN in LlamaIndex's similarity and ranked first in Chroma
    embed = LandmarkEmbedding(encoder=minilm)
    texts = ["The old water mill burned down in 1860.", " \n ", "Cats are mammals."]
    got = np.asarray(embed.get_text_embedding_batch(texts))
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(got[1], minilm.encode_query(texts[1]), atol=1e-5)
    q = embed.get_query_embedding("When did the mill burn down?")
    sims = [embed.similarity(q, list(v)) for v in got]
    assert np.isfinite(sims).all() and int(np.argmax(sims)) == 0


def test_lazy_loading_from_a_model_name():
    embed = LandmarkEmbedding("all-MiniLM-L6-v2", device="cpu", pooling="mean", embed_batch_size=4)
    assert embed._encoder is None  # constructing costs nothing
    assert embed.to_dict()["encoder_kwargs"] == {"pooling": "mean"}
    vec = embed.get_query_embedding("When was the treaty signed?")
    assert embed.encoder.config.pooling == "mean" and len(vec) == embed.encoder.dim
    assert abs(float(np.linalg.norm(vec)) - 1.0) < 1e-5


async def test_async_paths_match_sync(docs, mean_embed, minilm_mean):
    q = "Who won the game?"
    np.testing.assert_allclose(await mean_embed.aget_query_embedding(q), minilm_mean.encode_query(q), atol=1e-5)
    got = await mean_embed.aget_text_embedding_batch(["A sentence. Another."])
    np.testing.assert_allclose(got[0], minilm_mean.encode_texts(["A sentence. Another."])[0], atol=1e-5)
    nodes = LandmarkNodeParser().get_nodes_from_documents(docs[1:2])
    await mean_embed.acall(nodes)
    whole = minilm_mean.encode_document(docs[1].text, docs[1].id_)
    np.testing.assert_allclose(np.asarray([n.embedding for n in nodes]), whole.embeddings, atol=1e-5)


def test_pickles_without_the_model(minilm):
    import pickle

    embed = LandmarkEmbedding(encoder=minilm, embed_batch_size=8)
    clone = pickle.loads(pickle.dumps(embed))
    assert embed._encoder is minilm  # the original keeps its encoder
    assert clone._encoder is None and clone.model_name == embed.model_name and clone.embed_batch_size == 8
    assert clone.to_dict() == embed.to_dict()
