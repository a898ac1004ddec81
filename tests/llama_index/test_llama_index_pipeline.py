"""End to end in LlamaIndex: ingestion, query engine, boundary expansion, re-ingest, async.

A real Chroma PersistentClient in a tmp dir, the real default model, the first paragraphs
of three data/squad-v1.1-dev-part-a.json articles, MockLLM for the query engine (it echoes its prompt, so
the retrieved passages are visible in the answer).
"""

from __future__ import annotations

import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("llama_index.vector_stores.chroma")

import itertools

import chromadb
from llama_index.core import Document, Settings, StorageContext, VectorStoreIndex
from llama_index.core.ingestion import DocstoreStrategy, IngestionPipeline
from llama_index.core.llms import MockLLM
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.vector_stores.chroma import ChromaVectorStore

from landmark_rag.llama_index import (
    BoundaryExpansionPostprocessor,
    LandmarkEmbedding,
    LandmarkNodeParser,
    ReplaceDocuments,
)
from landmark_rag.segment import segment_sentences
from landmark_rag.store import ChromaSentenceStore, sentence_id

PARAGRAPHS = 3


@pytest.fixture(scope="module")
def articles(squad_articles):
    """(Document, questions inside it) for the first paragraphs of three articles."""
    out = []
    for a in squad_articles[:3]:
        text = "\n\n".join(a.text.split("\n\n")[:PARAGRAPHS])
        qs = [q for q in a.questions if q.answer_start + len(q.answer) <= len(text)]
        out.append((Document(text=text, id_=a.title, metadata={"title": a.title}), qs))
    return out


@pytest.fixture(scope="module")
def docs(articles) -> list[Document]:
    return [d for d, _ in articles]


@pytest.fixture(scope="module")
def embed(minilm) -> LandmarkEmbedding:
    return LandmarkEmbedding(encoder=minilm)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, docs, embed):
    """The plain pattern: IngestionPipeline writing into a ChromaVectorStore."""
    path = tmp_path_factory.mktemp("chroma")
    collection = chromadb.PersistentClient(path=str(path)).get_or_create_collection("landmark")
    vs = ChromaVectorStore(chroma_collection=collection)
    IngestionPipeline(transformations=[LandmarkNodeParser(), embed], vector_store=vs).run(documents=docs)
    index = VectorStoreIndex.from_vector_store(vs, embed_model=embed)
    return collection, vs, index


def _check_passages(nodes: list[NodeWithScore], docs: list[Document]) -> None:
    """Exact, contiguous, non-overlapping slices that contain their hits."""
    by_id = {d.id_: d for d in docs}
    spans: dict[str, list[tuple[int, int, int, int]]] = {}
    for nws in nodes:
        md = nws.node.metadata
        doc = by_id[md["doc_id"]]
        assert doc.text[md["start"] : md["end"]] == nws.node.text
        assert (nws.node.start_char_idx, nws.node.end_char_idx) == (md["start"], md["end"])
        sents = segment_sentences(doc.text)
        first, last = md["first_sentence"], md["last_sentence"]
        assert (sents[first].start, sents[last].end) == (md["start"], md["end"])  # whole sentences, contiguous
        hits = [int(x) for x in md["hit_sentences"].split(",")]
        assert all(first <= h <= last for h in hits)
        assert nws.score == pytest.approx(md["score"])
        spans.setdefault(doc.id_, []).append((first, last, md["start"], md["end"]))
    for doc_spans in spans.values():
        doc_spans.sort()
        for a, b in itertools.pairwise(doc_spans):
            assert a[1] + 1 < b[0], "passages of one document must neither overlap nor touch"


def test_sentence_count_and_core_store_reads_the_collection(indexed, docs):
    collection, _, _ = indexed
    expected = {d.id_: segment_sentences(d.text, doc_id=d.id_) for d in docs}
    assert collection.count() == sum(len(v) for v in expected.values())
    core = ChromaSentenceStore(collection)
    for doc in docs:
        assert core.read_document(doc.id_).sentences == expected[doc.id_]


@pytest.mark.parametrize(
    ("strategy", "params"),
    [("front", {}), ("front", {"k": 2}), ("surround", {"before": 1, "after": 1}), ("adaptive", {"max_tokens": 160})],
)
def test_query_engine_with_expansion(indexed, articles, docs, strategy, params):
    _, vs, index = indexed
    pp = BoundaryExpansionPostprocessor(vector_store=vs, strategy=strategy, strategy_params=params)
    engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=5, node_postprocessors=[pp])
    question = articles[0][1][0]
    response = engine.query(question.text)
    assert isinstance(response.response, str) and response.response
    assert response.source_nodes
    _check_passages(response.source_nodes, docs)
    scores = [n.score for n in response.source_nodes]
    assert scores == sorted(scores, reverse=True)
    if strategy == "front":
        k = params.get("k", 3)
        for n in response.source_nodes:
            md = n.node.metadata
            hits = [int(x) for x in md["hit_sentences"].split(",")]
            assert md["last_sentence"] == max(hits)  # Front never looks past the hit
            assert md["first_sentence"] == max(0, min(hits) - k + 1)
    # schema / span keys never reach the LLM prompt
    prompt_view = response.source_nodes[0].node.get_content(metadata_mode="llm")
    assert "hit_sentences" not in prompt_view and "first_sentence" not in prompt_view


def test_expansion_covers_more_answers_than_bare_hits(indexed, articles, docs):
    _, vs, index = indexed
    retriever = index.as_retriever(similarity_top_k=5)
    pp = BoundaryExpansionPostprocessor(vector_store=vs)
    questions = [(d, q) for d, qs in articles for q in qs[:4]]
    bare = expanded = 0
    for doc, q in questions:
        bundle = QueryBundle(q.text)
        hits = retriever.retrieve(bundle)
        lo, hi = q.answer_start, q.answer_start + len(q.answer)
        bare += any(
            h.node.metadata["doc_id"] == doc.id_ and h.node.start_char_idx <= lo and hi <= h.node.end_char_idx
            for h in hits
        )
        passages = pp.postprocess_nodes(hits, bundle)
        _check_passages(passages, docs)
        expanded += any(
            p.node.metadata["doc_id"] == doc.id_ and p.node.metadata["start"] <= lo and hi <= p.node.metadata["end"]
            for p in passages
        )
    assert expanded >= bare  # passages are supersets of their hits
    assert expanded / len(questions) > 0.3


def test_top_n_document_order_and_foreign_nodes(indexed, docs):
    _, vs, index = indexed
    hits = index.as_retriever(similarity_top_k=8).retrieve("When did the event take place?")
    q = "When did the event take place?"
    foreign = NodeWithScore(node=TextNode(text="not a landmark node"), score=0.01)
    # a user's own doc_id and index without a span: no landmark node, passed through, not an error
    partial = NodeWithScore(node=TextNode(text="a row", metadata={"doc_id": "report-7", "sentence_index": 3}), score=0.99)
    by_document = BoundaryExpansionPostprocessor(vector_store=vs, order="document", top_n=3)
    out = by_document.postprocess_nodes([*hits[:2], foreign], query_str=q)
    assert out[-1] is foreign and len(out) <= 3  # the passages in reading order, then what passed through
    keys = [(n.node.metadata["doc_id"], n.node.metadata["start"]) for n in out[:-1]]
    assert keys == sorted(keys)
    _check_passages(out[:-1], docs)
    # top_n caps what comes back, passed-through nodes included (LlamaIndex's top_n)
    capped = BoundaryExpansionPostprocessor(vector_store=vs, order="document", top_n=2).postprocess_nodes(
        [*hits, foreign], query_str=q)
    assert len(capped) == 2 and foreign not in capped
    _check_passages(capped, docs)
    by_score = BoundaryExpansionPostprocessor(vector_store=vs, top_n=3).postprocess_nodes([*hits, foreign, partial], query_str=q)
    assert by_score[0] is partial and len(by_score) == 3  # ranked among the passages by its score
    assert [n.score for n in by_score] == sorted((n.score for n in by_score), reverse=True)
    # a sentence given twice (a fusion of two retrievers) keeps its best score
    alone = BoundaryExpansionPostprocessor(vector_store=vs, top_n=1)
    best = alone.postprocess_nodes(hits[:1], query_str=q)[0].score
    again = NodeWithScore(node=hits[0].node, score=0.001)
    assert alone.postprocess_nodes([hits[0], again], query_str=q)[0].score == best


def test_adaptive_needs_a_query_vector(indexed, embed):
    _, vs, index = indexed
    hits = index.as_retriever(similarity_top_k=3).retrieve("What is the subject?")
    with pytest.raises(ValueError, match="query embedding"):
        BoundaryExpansionPostprocessor(vector_store=vs, strategy="adaptive").postprocess_nodes(
            hits, QueryBundle("What is the subject?")
        )
    pp = BoundaryExpansionPostprocessor(vector_store=vs, strategy="adaptive", embed_model=embed)
    without = pp.postprocess_nodes(hits, QueryBundle("What is the subject?"))
    bundle = QueryBundle("What is the subject?", embedding=embed.get_query_embedding("What is the subject?"))
    with_vec = pp.postprocess_nodes(hits, bundle)
    assert [n.node.text for n in without] == [n.node.text for n in with_vec]


def test_docstore_source_matches_vector_store_source(docs, embed, indexed):
    _, vs, _chroma_index = indexed
    # in-memory VectorStoreIndex: sentence nodes live in the docstore, vectors in SimpleVectorStore
    mem = VectorStoreIndex.from_documents(docs, transformations=[LandmarkNodeParser(), embed], embed_model=embed)
    q = "Who was involved?"
    hits = mem.as_retriever(similarity_top_k=5).retrieve(q)
    bundle = QueryBundle(q, embedding=embed.get_query_embedding(q))
    for strategy in ("front", "adaptive"):
        from_docstore = BoundaryExpansionPostprocessor(
            docstore=mem.docstore, vector_store=mem.vector_store, strategy=strategy
        ).postprocess_nodes(hits, bundle)
        from_chroma = BoundaryExpansionPostprocessor(vector_store=vs, strategy=strategy).postprocess_nodes(hits, bundle)
        assert [n.node.text for n in from_docstore] == [n.node.text for n in from_chroma]
        _check_passages(from_docstore, docs)
    with pytest.raises(TypeError, match="ChromaVectorStore"):
        BoundaryExpansionPostprocessor(vector_store=mem.vector_store)


def test_settings_pattern(tmp_path, docs, embed):
    saved = (Settings._embed_model, Settings._transformations, Settings._llm)
    try:
        Settings.embed_model = embed
        Settings.transformations = [LandmarkNodeParser(), embed]
        Settings.llm = MockLLM()
        collection = chromadb.PersistentClient(path=str(tmp_path / "db")).get_or_create_collection("landmark")
        vs = ChromaVectorStore(chroma_collection=collection)
        index = VectorStoreIndex.from_documents(docs[:2], storage_context=StorageContext.from_defaults(vector_store=vs))
        assert collection.count() == sum(len(segment_sentences(d.text)) for d in docs[:2])
        engine = index.as_query_engine(node_postprocessors=[BoundaryExpansionPostprocessor(vector_store=vs)])
        response = engine.query("What happened?")
        _check_passages(response.source_nodes, docs)
    finally:
        Settings._embed_model, Settings._transformations, Settings._llm = saved


def _stored(collection, doc_id: str) -> list[tuple[str, str]]:
    """Every stored record of a document (all versions) as (doc_id:index, text), in order."""
    got = collection.get(where={"doc_id": doc_id}, include=["documents", "metadatas"])
    pairs = [(md["sentence_index"], text) for text, md in zip(got["documents"], got["metadatas"], strict=True)]
    return [(sentence_id(doc_id, i), text) for i, text in sorted(pairs)]


def _expected(doc: Document) -> list[tuple[str, str]]:
    return [(sentence_id(doc.id_, s.index), s.text) for s in segment_sentences(doc.text)]


def test_reingest_plain_pattern_replaces_old_sentences(tmp_path, docs, embed):
    collection = chromadb.PersistentClient(path=str(tmp_path / "db")).get_or_create_collection("landmark")
    vs = ChromaVectorStore(chroma_collection=collection)
    pipeline = IngestionPipeline(
        transformations=[LandmarkNodeParser(), embed, ReplaceDocuments(vs, embed_model=embed)], vector_store=vs
    )
    full = docs[0]
    pipeline.run(documents=[full, docs[1]])
    assert _stored(collection, full.id_) == _expected(full)
    other = _stored(collection, docs[1].id_)
    pipeline.run(documents=[full])  # unchanged: idempotent
    assert _stored(collection, full.id_) == _expected(full)
    sents = segment_sentences(full.text)
    shrunk = Document(text=full.text[: sents[3].end].replace(sents[1].text, "A different sentence."), id_=full.id_)
    pipeline.run(documents=[shrunk])
    assert _stored(collection, full.id_) == _expected(shrunk)  # no stale tail, edited text replaced
    assert _stored(collection, docs[1].id_) == other  # other documents untouched
    assert collection.count() == len(_expected(shrunk)) + len(other)


def test_going_back_to_an_earlier_text_rewrites_it_despite_the_ingestion_cache(tmp_path, docs, embed):
    # IngestionPipeline caches each transformation by its input nodes and to_dict(); a cache hit
    # on ReplaceDocuments would hand on its old output without writing (A, B, A left B live)
    collection = chromadb.PersistentClient(path=str(tmp_path / "db")).get_or_create_collection("landmark")
    vs = ChromaVectorStore(chroma_collection=collection)
    pipeline = IngestionPipeline(
        transformations=[LandmarkNodeParser(), embed, ReplaceDocuments(vs, embed_model=embed)], vector_store=vs
    )
    assert pipeline.cache is not None  # LlamaIndex's default: the case this guards
    a = docs[0]
    b = Document(text=a.text.split("\n\n")[0], id_=a.id_)
    for doc in (a, b, a):
        pipeline.run(documents=[doc])
        assert _stored(collection, a.id_) == _expected(doc)  # the last text, and nothing else
    store = ChromaSentenceStore.for_collection(collection)
    live = store.read_documents({a.id_: None})[a.id_]  # what readers see: A's version
    assert [s.text for s in live.sentences] == [t for _, t in _expected(a)]


def test_replace_documents_delete_clears_the_manifest_too(tmp_path, docs, embed):
    from landmark_rag import LandmarkIndex

    collection = chromadb.PersistentClient(path=str(tmp_path / "db")).get_or_create_collection("landmark")
    vs = ChromaVectorStore(chroma_collection=collection)
    replace = ReplaceDocuments(vs, embed_model=embed)
    IngestionPipeline(transformations=[LandmarkNodeParser(), embed, replace], vector_store=vs).run(documents=docs[:2])
    gone, kept = docs[0], docs[1]
    assert replace.delete([gone.id_, "no-such-document"]) == len(_expected(gone))
    assert _stored(collection, gone.id_) == [] and _stored(collection, kept.id_) == _expected(kept)
    store = ChromaSentenceStore.for_collection(collection)
    assert gone.id_ not in store.documents() and kept.id_ in store.documents()
    # so the same text added again through the core is written, not skipped as unchanged
    LandmarkIndex(store, embed.encoder).add_texts([gone.text], ids=[gone.id_])
    assert [t for _, t in _stored(collection, gone.id_)] == [t for _, t in _expected(gone)]
    with pytest.raises(TypeError, match="list of document ids"):
        replace.delete(kept.id_)


def test_reingest_with_docstore_upserts(tmp_path, docs, embed):
    collection = chromadb.PersistentClient(path=str(tmp_path / "db")).get_or_create_collection("landmark")
    vs = ChromaVectorStore(chroma_collection=collection)
    pipeline = IngestionPipeline(
        transformations=[LandmarkNodeParser(), embed],
        vector_store=vs,
        docstore=SimpleDocumentStore(),
        docstore_strategy=DocstoreStrategy.UPSERTS,
    )
    full = docs[1]
    assert len(pipeline.run(documents=[full])) == len(_expected(full))
    assert pipeline.run(documents=[full]) == []  # unchanged: skipped
    shrunk = Document(text=full.text.split("\n\n")[0], id_=full.id_)
    pipeline.run(documents=[shrunk])
    assert _stored(collection, full.id_) == _expected(shrunk)
    # and a VectorStoreIndex removes a document with all its sentences
    index = VectorStoreIndex.from_vector_store(vs, embed_model=embed)
    index.delete_ref_doc(full.id_)
    assert collection.count() == 0


async def test_async_pipeline_query_and_postprocess(tmp_path, articles, docs, embed):
    collection = chromadb.PersistentClient(path=str(tmp_path / "db")).get_or_create_collection("landmark")
    vs = ChromaVectorStore(chroma_collection=collection)
    pipeline = IngestionPipeline(
        transformations=[LandmarkNodeParser(), embed, ReplaceDocuments(vs, embed_model=embed)], vector_store=vs
    )
    await pipeline.arun(documents=docs[:2])
    await pipeline.arun(documents=docs[:2])
    assert collection.count() == sum(len(segment_sentences(d.text)) for d in docs[:2])
    index = VectorStoreIndex.from_vector_store(vs, embed_model=embed)
    for strategy in ("front", "adaptive"):
        # the async retriever does not pass the query embedding on: adaptive needs embed_model
        pp = BoundaryExpansionPostprocessor(vector_store=vs, strategy=strategy, embed_model=embed)
        engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=4, node_postprocessors=[pp])
        response = await engine.aquery(articles[1][1][0].text)
        assert response.response and response.source_nodes
        _check_passages(response.source_nodes, docs)
        hits = await index.as_retriever(similarity_top_k=4).aretrieve("Where was it?")
        sync = pp.postprocess_nodes(
            hits, QueryBundle("Where was it?", embedding=embed.get_query_embedding("Where was it?"))
        )
        got = await pp.apostprocess_nodes(
            hits, QueryBundle("Where was it?", embedding=embed.get_query_embedding("Where was it?"))
        )
        assert [n.node.text for n in got] == [n.node.text for n in sync]


def test_strategy_objects_equal_names(indexed):
    from landmark_rag.expand import Surround

    _, vs, index = indexed
    hits = index.as_retriever(similarity_top_k=4).retrieve("Who played?")
    by_name = BoundaryExpansionPostprocessor(
        vector_store=vs, strategy="surround", strategy_params={"before": 2, "after": 0}
    )
    by_obj = BoundaryExpansionPostprocessor(vector_store=vs, strategy=Surround(before=2, after=0))
    assert by_obj.strategy == "surround" and by_obj.strategy_params == {"before": 2, "after": 0}
    assert [n.node.text for n in by_name.postprocess_nodes(hits)] == [
        n.node.text for n in by_obj.postprocess_nodes(hits)
    ]
