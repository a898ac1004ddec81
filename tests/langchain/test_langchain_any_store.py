"""LangChain with a vector store other than Chroma: in-context vectors, warnings, expansion.

The route: ``LandmarkTextSplitter(embeddings=emb)`` encodes each document once and hands the
sentence vectors to ``emb``; any ``VectorStore`` adding the sentences through ``emb`` then
stores the in-context vectors, and ``BoundaryExpansionCompressor(docstore=store)`` (or
``documents=``) expands its hits. Checked with ``InMemoryVectorStore`` (langchain-core) and
FAISS (langchain-community + faiss-cpu), on real models.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import EXCERPT, load_squad

pytest.importorskip("langchain_core", reason="the langchain extra")

from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore

from landmark_rag.index.handoff import OutOfContextWarning
from landmark_rag.langchain import (
    BoundaryExpansionCompressor,
    LandmarkEmbeddings,
    LandmarkRetriever,
    LandmarkTextSplitter,
)
from tests.langchain.test_langchain import SquadCollection, assert_exact_passages, ingested_squad

FAISS = pytest.importorskip("langchain_community.vectorstores", reason="langchain-community (test extra)").FAISS
pytest.importorskip("faiss", reason="faiss-cpu (test extra)")

SHARED = "Its lamp burned whale oil."
DOCS = [
    Document(id="lighthouse", page_content=f"The lighthouse was built in 1874. {SHARED} In 1894 the keepers switched "
                                           "to kerosene. The light was automated in 1962."),
    Document(id="harbour", page_content=f"The harbour freezes in winter. {SHARED} Fishing boats are hauled out. "
                                        "Ice-breaking was tried in 1931."),
]


@pytest.fixture
def tiny_embeddings(tiny_encoder) -> LandmarkEmbeddings:
    """A random tiny BERT with in-context landmark pooling: fast, and context changes vectors."""
    return LandmarkEmbeddings.from_encoder(tiny_encoder(pooling="landmark"))


def stored_vectors(store, ids: list[str]) -> np.ndarray:
    if isinstance(store, InMemoryVectorStore):
        return np.array([store.store[i]["vector"] for i in ids])
    position = {v: k for k, v in store.index_to_docstore_id.items()}
    return np.array([store.index.reconstruct(position[i]) for i in ids])


def in_memory(sentences, embeddings):
    return InMemoryVectorStore.from_documents(sentences, embedding=embeddings)


def faiss(sentences, embeddings):
    return FAISS.from_documents(sentences, embedding=embeddings, distance_strategy="MAX_INNER_PRODUCT")


@pytest.mark.parametrize("make_store", [in_memory, faiss], ids=["InMemoryVectorStore", "FAISS"])
def test_splitter_hands_in_context_vectors_to_any_store(make_store, tiny_embeddings):
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutOfContextWarning)
        sentences = LandmarkTextSplitter(embeddings=tiny_embeddings).split_documents(DOCS)
        store = make_store(sentences, tiny_embeddings)
    expected = {d.id: tiny_embeddings.embed_document_in_context(d, d.id).embeddings for d in DOCS}
    got = stored_vectors(store, [s.id for s in sentences])
    want = np.array([expected[s.metadata["doc_id"]][s.metadata["sentence_index"]] for s in sentences])
    np.testing.assert_allclose(got, want, atol=1e-5)
    # the sentence both documents share got each document's own vector
    shared = [i for i, s in enumerate(sentences) if s.page_content == SHARED]
    assert len(shared) == 2 and not np.allclose(got[shared[0]], got[shared[1]], atol=1e-4)
    # every vector was handed out once: embedding the sentences again embeds them alone, and says so
    with pytest.warns(OutOfContextWarning, match=r"LandmarkTextSplitter\(embeddings="):
        again = np.array(tiny_embeddings.embed_documents([SHARED]))
    np.testing.assert_allclose(again[0], tiny_embeddings.encoder.encode_texts([SHARED])[0], atol=1e-5)


def test_a_document_split_again_hands_over_only_its_new_vectors(tiny_embeddings):
    splitter = LandmarkTextSplitter(embeddings=tiny_embeddings)
    splitter.split_documents(DOCS[:1])  # split, never added
    edited = Document(id="lighthouse", page_content=f"A storm damaged the tower in 1901. {SHARED}")
    sentences = splitter.split_documents([edited])
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutOfContextWarning)
        store = in_memory(sentences, tiny_embeddings)
    want = tiny_embeddings.embed_document_in_context(edited, "lighthouse").embeddings
    np.testing.assert_allclose(stored_vectors(store, [s.id for s in sentences]), want, atol=1e-5)
    with pytest.warns(OutOfContextWarning):  # the first split's vectors were dropped, not left waiting
        tiny_embeddings.embed_documents([DOCS[0].page_content.split(". ")[0] + "."])


def test_plain_splitter_into_a_store_warns_what_to_do(tiny_embeddings):
    sentences = LandmarkTextSplitter().split_documents(DOCS)
    with pytest.warns(OutOfContextWarning) as caught:
        InMemoryVectorStore.from_documents(sentences, embedding=tiny_embeddings)
    message = str(caught[0].message)
    assert f"{len(sentences)} of {len(sentences)} texts" in message
    assert "LandmarkTextSplitter(embeddings=" in message and "docs/langchain.md" in message
    # ordinary texts (not sentences a splitter produced) are embedded alone without a warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutOfContextWarning)
        tiny_embeddings.embed_documents(["A text nobody split.", "Another one, of two sentences. Here."])


@pytest.mark.parametrize("make_store", [in_memory, faiss], ids=["InMemoryVectorStore", "FAISS"])
def test_compressor_expands_hits_of_any_store(make_store, tiny_embeddings):
    text = load_squad(EXCERPT)[0].text
    source = [Document(id="article", page_content=text, metadata={"title": "t"})]
    sentences = LandmarkTextSplitter(embeddings=tiny_embeddings).split_documents(source)
    store = make_store(sentences, tiny_embeddings)
    question = sentences[5].page_content
    hits = store.similarity_search(question, k=4)
    by_docstore = BoundaryExpansionCompressor(docstore=store, embeddings=tiny_embeddings, strategy="front")
    by_documents = BoundaryExpansionCompressor(documents=sentences, embeddings=tiny_embeddings, strategy="front")
    passages = by_docstore.compress_documents(hits, question)
    assert [p.id for p in passages] == [p.id for p in by_documents.compress_documents(hits, question)]
    assert_exact_passages(list(passages), {"article": text})
    assert passages[0].metadata["title"] == "t"
    for p in passages:  # front-3: the passage ends at its last hit, at most two sentences before it
        hit_ids = [int(i) for i in p.metadata["hit_sentences"].split(",")]
        assert p.metadata["last_sentence"] == max(hit_ids) and p.metadata["first_sentence"] >= min(hit_ids) - 2
    # hits that lost their metadata are found by id in the store
    bare = [Document(page_content=h.page_content, id=h.id) for h in hits]
    assert [p.id for p in by_docstore.compress_documents(bare, question)] == [p.id for p in passages]
    with pytest.raises(ValueError, match="not in the documents given"):
        by_documents.compress_documents([Document(page_content="x", id="elsewhere:3")], question)
    with pytest.raises(ValueError, match="adaptive"):
        BoundaryExpansionCompressor(docstore=store, strategy="adaptive")
    with pytest.raises(TypeError, match="get_by_ids"):
        BoundaryExpansionCompressor(docstore=object())


def test_a_passage_never_mixes_two_versions_of_an_upserted_document(tiny_embeddings):
    # such stores upsert by id: a document re-split shorter keeps its old tail (doc:2, doc:3)
    splitter = LandmarkTextSplitter(embeddings=tiny_embeddings)
    old = Document(id="town", page_content="Alpha founded the town in 1800. Beta built the mill in 1850. "
                                           "Gamma opened the school in 1900. Delta closed the mine in 1950.")
    new = Document(id="town", page_content="Alpha founded the town in 1801. The mill burned down in 1860.")
    store = InMemoryVectorStore(embedding=tiny_embeddings)
    store.add_documents(splitter.split_documents([old]))
    store.add_documents(splitter.split_documents([new]))
    assert sorted(store.store) == ["town:0", "town:1", "town:2", "town:3"]  # the stale tail is there
    compressor = BoundaryExpansionCompressor(docstore=store, embeddings=tiny_embeddings, strategy="surround")
    # the best hit's version decides; hits of the other version are dropped
    for hit_ids, version in ((["town:1"], new), (["town:1", "town:2"], new), (["town:2", "town:1"], old)):
        passages = compressor.compress_documents(store.get_by_ids(hit_ids), "mill")
        assert len(passages) == 1
        p = passages[0]
        assert version.page_content[p.metadata["start"] : p.metadata["end"]] == p.page_content


def test_compressor_without_sentences_says_what_is_missing(tmp_path):
    LandmarkRetriever(persist_directory=str(tmp_path), collection_name="notes")  # a store with another collection
    with pytest.raises(LookupError) as caught:
        BoundaryExpansionCompressor(persist_directory=str(tmp_path))
    message = str(caught.value)
    assert "no collection 'landmark'" in message and "'notes'" in message  # what exists
    assert "documents=" in message and "docstore=" in message  # and what to pass instead
    with pytest.raises(LookupError, match="no collection 'landmark'.*docstore="):  # in memory: Chroma's shared one
        BoundaryExpansionCompressor()
    empty = tmp_path / "empty"
    with pytest.raises(LookupError, match="it has no collections"):
        BoundaryExpansionCompressor(persist_directory=str(empty))


@pytest.fixture(scope="module")
def squad() -> SquadCollection:
    return ingested_squad()


def test_any_store_route_matches_the_chroma_route(squad: SquadCollection):
    """Answer in the top 3 passages, every question of the three articles: FAISS and
    InMemoryVectorStore through the splitter and the compressor against LandmarkRetriever.

    Measured 311/318 for both stores and for the dense retriever (the same sentences, the same
    in-context vectors, the same expansion), 312/318 for the hybrid default.
    """
    embeddings = LandmarkEmbeddings()
    base = {"persist_directory": squad.persist_dir, "collection_name": squad.collection_name, "k": 3}
    chroma = LandmarkRetriever(**base)
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutOfContextWarning)
        sentences = LandmarkTextSplitter(embeddings=embeddings).split_documents(squad.documents)
        memory = in_memory(sentences, embeddings)
        sentences_faiss = LandmarkTextSplitter(embeddings=embeddings).split_documents(squad.documents)
        flat = faiss(sentences_faiss, embeddings)
    systems = {
        "hybrid": chroma.invoke,
        "dense": lambda q: chroma.invoke(q, mode="dense"),
        "memory": lambda q: BoundaryExpansionCompressor(docstore=memory, k=3).compress_documents(
            memory.similarity_search(q, k=20), q),
        "faiss": lambda q: BoundaryExpansionCompressor(documents=sentences_faiss, k=3).compress_documents(
            flat.similarity_search(q, k=20), q),
    }
    rate = {}
    for name, search in systems.items():
        found = 0
        for question, answer, offset, doc_id in squad.questions:
            found += any(
                p.metadata["doc_id"] == doc_id and p.metadata["start"] <= offset
                and offset + len(answer) <= p.metadata["end"] for p in search(question)
            )
        rate[name] = found / len(squad.questions)
    assert rate["dense"] >= 0.9, rate
    for name in ("memory", "faiss"):
        assert abs(rate[name] - rate["dense"]) <= 0.01, rate
        assert abs(rate[name] - rate["hybrid"]) <= 0.01, rate
