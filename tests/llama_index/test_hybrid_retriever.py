"""LandmarkHybridRetriever in a real LlamaIndex pipeline (ChromaVectorStore, real model)."""

from __future__ import annotations

import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("llama_index.vector_stores.chroma")

import chromadb
from llama_index.core import Document
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import QueryBundle
from llama_index.vector_stores.chroma import ChromaVectorStore

from landmark_rag.llama_index import (
    BoundaryExpansionPostprocessor,
    LandmarkEmbedding,
    LandmarkHybridRetriever,
    LandmarkNodeParser,
)
from landmark_rag.store.lexical import LEXICAL_DIR

PARAGRAPHS = 3


@pytest.fixture(scope="module")
def setup(tmp_path_factory, squad_articles, minilm):
    docs, questions = [], []
    for a in squad_articles[:3]:
        text = "\n\n".join(a.text.split("\n\n")[:PARAGRAPHS])
        docs.append(Document(text=text, id_=a.title, metadata={"title": a.title}))
        questions += [(a.title, q) for q in a.questions if q.answer_start + len(q.answer) <= len(text)][:3]
    path = tmp_path_factory.mktemp("chroma")
    collection = chromadb.PersistentClient(path=str(path)).get_or_create_collection("landmark")
    vs = ChromaVectorStore(chroma_collection=collection)
    embed = LandmarkEmbedding(encoder=minilm)
    IngestionPipeline(transformations=[LandmarkNodeParser(), embed], vector_store=vs).run(documents=docs)
    return path, vs, embed, docs, questions


def test_hybrid_sentence_hits_feed_the_expansion_in_a_query_engine(setup):
    path, vs, embed, docs, questions = setup
    retriever = LandmarkHybridRetriever(vs, embed, similarity_top_k=6, mode="hybrid")
    _title, q = questions[0]
    hits = retriever.retrieve(q.text)
    assert len(hits) == 6
    assert all(h.node.metadata["doc_id"] in {d.id_ for d in docs} for h in hits)
    assert all("_dense_score" in h.node.metadata or "_lexical_score" in h.node.metadata for h in hits)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert (path / LEXICAL_DIR / "landmark" / "state.json").is_file()  # cached beside the store

    pp = BoundaryExpansionPostprocessor(vector_store=vs, embed_model=embed, top_n=3)
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM(), node_postprocessors=[pp])
    response = engine.query(q.text)
    by_id = {d.id_: d.text for d in docs}
    assert 1 <= len(response.source_nodes) <= 3
    for n in response.source_nodes:
        md = n.node.metadata
        assert by_id[md["doc_id"]][md["start"] : md["end"]] == n.node.text  # exact slices
    prompt_view = response.source_nodes[0].node.get_content(metadata_mode="llm")
    assert "lexical_score" not in prompt_view and "sentence_index" not in prompt_view


def test_modes_and_async(setup):
    _, vs, embed, _docs, questions = setup
    _, q = questions[1]
    lexical = LandmarkHybridRetriever(vs, similarity_top_k=3, mode="lexical")  # no model needed
    hit = lexical.retrieve("Which stadium, Levi's?")[0]
    assert "levi's stadium" in hit.node.text.lower()
    dense = LandmarkHybridRetriever(vs, embed, similarity_top_k=3, mode="dense")
    bundle = QueryBundle(q.text)
    assert [h.node.node_id for h in dense.retrieve(bundle)] == [
        h.node.node_id for h in dense.retrieve(QueryBundle(q.text))
    ]
    assert bundle.embedding is not None  # handed on to the adaptive expansion
    with pytest.raises(ValueError, match="embed_model"):
        LandmarkHybridRetriever(vs, similarity_top_k=3, mode="hybrid")
    with pytest.raises(ValueError, match="search mode"):
        LandmarkHybridRetriever(vs, embed, mode="sparse")  # type: ignore[arg-type]


async def test_async_retrieve_matches_sync(setup):
    _, vs, embed, _, questions = setup
    retriever = LandmarkHybridRetriever(vs, embed, similarity_top_k=4, mode="hybrid")
    _, q = questions[2]
    sync = [(h.node.node_id, round(h.score, 6)) for h in retriever.retrieve(q.text)]
    got = [(h.node.node_id, round(h.score, 6)) for h in await retriever.aretrieve(q.text)]
    assert got == sync


def test_a_replace_documents_collection_fuses_each_sentence_once(tmp_path, squad_articles, minilm):
    """Versioned records (``doc:i@version``) and a manifest: both halves read the versions readers
    see, so every sentence is fused once, ``similarity_top_k`` holds, and a hit's node id is the
    stored record's id, as LlamaIndex's own vector retriever names it."""
    from llama_index.core import VectorStoreIndex
    from llama_index.core.vector_stores import MetadataFilter, MetadataFilters

    from landmark_rag.llama_index import ReplaceDocuments

    docs = [
        Document(text="\n\n".join(a.text.split("\n\n")[:PARAGRAPHS]), id_=a.title, metadata={"title": a.title})
        for a in squad_articles[:2]
    ]
    collection = chromadb.PersistentClient(path=str(tmp_path / "db")).get_or_create_collection("landmark")
    vs = ChromaVectorStore(chroma_collection=collection)
    embed = LandmarkEmbedding(encoder=minilm)
    IngestionPipeline(
        transformations=[LandmarkNodeParser(), embed, ReplaceDocuments(vs, embed_model=embed)], vector_store=vs
    ).run(documents=docs)
    stored = set(collection.get(include=[])["ids"])
    assert all("@" in i for i in stored)  # versioned: the case under test
    retriever = LandmarkHybridRetriever(vs, embed, similarity_top_k=5, mode="hybrid", cache_dir=False)
    q = squad_articles[0].questions[0].text
    hits = retriever.retrieve(q)
    ids = [h.node.node_id for h in hits]
    assert len(hits) == 5 and len(set(ids)) == 5 and set(ids) <= stored
    assert all("_dense_score" in h.node.metadata and "_lexical_score" in h.node.metadata for h in hits[:1])

    title = docs[1].id_
    filters = MetadataFilters(filters=[MetadataFilter(key="title", value=title)])
    dense = LandmarkHybridRetriever(vs, embed, similarity_top_k=3, mode="dense", filters=filters)
    by_where = LandmarkHybridRetriever(vs, embed, similarity_top_k=3, mode="dense", where={"title": title})
    vector = VectorStoreIndex.from_vector_store(vs, embed_model=embed).as_retriever(similarity_top_k=3, filters=filters)
    got = [h.node.node_id for h in dense.retrieve(q)]
    assert got == [h.node.node_id for h in by_where.retrieve(q)] == [h.node.node_id for h in vector.retrieve(q)]
    assert all(i.startswith(f"{title}:") for i in got)
    both = LandmarkHybridRetriever(vs, embed, mode="dense", filters=filters, where={"title": docs[0].id_})
    assert both.retrieve(q) == []  # both must match: no sentence has two titles
    with pytest.raises(TypeError, match="MetadataFilters"):
        LandmarkHybridRetriever(vs, embed, filters={"title": title})  # type: ignore[arg-type]


def test_a_lexical_only_retriever_searches_with_the_recorded_models_fusion(tmp_path):
    """No embed_model: the BM25 parameters and lexical context still come from the model the
    store records (its landmark_config.json, read without weights), under the caller's overrides."""
    from landmark_rag.encode.models.registry import model_config
    from landmark_rag.retrieve import FusionConfig, model_fusion
    from landmark_rag.store import ChromaSentenceStore
    from landmark_rag.store.identity import record_model

    want = model_fusion(model_config("landmark-minilm"))
    assert (want.bm25_k1, want.bm25_b) != (FusionConfig().bm25_k1, FusionConfig().bm25_b)  # else this proves nothing
    store = ChromaSentenceStore.open(tmp_path / "db", "recorded", identity={"model_name": "landmark-minilm", "pooling": "mean"})
    record_model(store, "landmark-minilm", 384)
    vs = ChromaVectorStore(chroma_collection=store.collection)
    got = LandmarkHybridRetriever(vs, similarity_top_k=3, mode="lexical").fusion
    assert (got.bm25_k1, got.bm25_b, got.lexical_context) == (want.bm25_k1, want.bm25_b, want.lexical_context)
    assert LandmarkHybridRetriever(vs, mode="lexical").lexical.b == want.bm25_b
    overridden = LandmarkHybridRetriever(vs, mode="lexical", fusion={"bm25_b": 0.5}).fusion
    assert (overridden.bm25_k1, overridden.bm25_b) == (want.bm25_k1, 0.5)

    bare = ChromaSentenceStore.open(tmp_path / "db", "bare", identity={"model_name": "m", "pooling": "mean"})
    plain = LandmarkHybridRetriever(ChromaVectorStore(chroma_collection=bare.collection), mode="lexical").fusion
    assert (plain.bm25_k1, plain.bm25_b) == (FusionConfig().bm25_k1, FusionConfig().bm25_b)  # nothing recorded


def test_token_budget_through_retriever_and_postprocessor(setup):
    _, vs, embed, docs, questions = setup
    by_id = {d.id_: d.text for d in docs}
    retriever = LandmarkHybridRetriever(vs, embed, max_tokens=160)
    pp = BoundaryExpansionPostprocessor(vector_store=vs, embed_model=embed, max_tokens=160)
    assert pp.max_tokens == 160
    count = embed.encoder.count_tokens
    for _, q in questions[:3]:
        nodes = pp.postprocess_nodes(retriever.retrieve(q.text), query_str=q.text)
        assert nodes and sum(count(n.node.text) for n in nodes) <= 160
        for n in nodes:
            md = n.node.metadata
            assert by_id[md["doc_id"]][md["start"] : md["end"]] == n.node.text
        # the two framework steps give what the core's budgeted search gives
        core = retriever.index.search(q.text, max_tokens=160)
        assert [(n.node.metadata["doc_id"], n.node.metadata["start"]) for n in nodes] == [
            (p.doc_id, p.start) for p in core
        ]
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="max_tokens"):
            LandmarkHybridRetriever(vs, embed, max_tokens=bad)
        with pytest.raises(ValueError, match="max_tokens"):
            BoundaryExpansionPostprocessor(vector_store=vs, embed_model=embed, max_tokens=bad)
