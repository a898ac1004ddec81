"""Chroma store: replace-on-reingest, manifest visibility, identity checks, passage search."""

from __future__ import annotations

import numpy as np
import pytest

from landmark_rag.retrieve import search_passages
from landmark_rag.segment import segment_sentences
from landmark_rag.store import ChromaSentenceStore, StoreMismatchError, sentence_id
from landmark_rag.types import EncodedDocument

DOC_A = "Cats purr when content. They sleep a lot. Kittens play with yarn. Old cats nap in the sun."
DOC_B = "Rockets need fuel. Orbits are curved paths. Satellites circle the Earth. Launches are loud."


def encode(text: str, doc_id: str, seed: int = 0) -> EncodedDocument:
    sents = segment_sentences(text, doc_id=doc_id)
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(len(sents), 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return EncodedDocument(text, sents, vecs, doc_id)


@pytest.fixture()
def store(tmp_path) -> ChromaSentenceStore:
    return ChromaSentenceStore.open(tmp_path / "db", "unit", identity={"model_name": "m", "pooling": "landmark"})


def test_add_query_and_exact_neighbours(store):
    a, b = encode(DOC_A, "a", 1), encode(DOC_B, "b", 2)
    assert store.add_document(a, metadata={"source": "a.txt", "tags": ["x", "y"], "none": None}) == 4
    store.add_document(b)
    assert store.count_sentences() == 8
    hits = store.query(a.embeddings[2], 3)
    assert hits[0].sentence == a.sentences[2]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert hits[0].metadata["source"] == "a.txt" and hits[0].metadata["tags"] == '["x", "y"]'
    assert store.get_sentences("a", [0, 1, 99]) == {0: a.sentences[0], 1: a.sentences[1]}
    np.testing.assert_allclose(store.get_embeddings("b", [3])[3], b.embeddings[3], atol=1e-6)
    assert store.document_text("a") == DOC_A


def test_reingest_shrunk_document_leaves_nothing_stale(store):
    store.add_document(encode(DOC_A + " Extra one. Extra two.", "a"))
    assert store.count_sentences() == 6
    store.add_document(encode("Cats purr. Done.", "a", 5))
    assert store.count_sentences() == 2
    assert [s.text for s in store.document_sentences("a")] == ["Cats purr.", "Done."]
    store.add_document(encode("Cats purr. Done.", "a", 5))  # idempotent
    assert store.count_sentences() == 2
    assert store.delete_document("a") == 2 and store.count_sentences() == 0
    assert store.documents() == {}


def test_interrupted_write_is_invisible_until_completed(store):
    a = encode(DOC_A, "a")
    store.add_document(a)
    new = encode(DOC_A.replace("yarn", "string"), "a", 9)
    # simulate a crash after the manifest was marked and half of the sentences were written
    store._mark("a", "newhash", "writing", 4, {}, None)
    store.collection.upsert(ids=[sentence_id("a", 0)], embeddings=new.embeddings[:1],
                            metadatas=[{"doc_id": "a", "sentence_index": 0, "start": 0, "end": 5,
                                        "space_before": "", "doc_hash": "newhash"}], documents=["Cats "])
    assert store.query(a.embeddings[1], 4) == []
    assert store.document_hash("a") is None  # the next run must redo it
    store.add_document(new)
    assert len(store.query(new.embeddings[0], 4)) == 4


def test_identity_mismatch_is_refused(tmp_path, store):
    store.add_document(encode(DOC_A, "a"))
    again = ChromaSentenceStore.open(tmp_path / "db", "unit", identity={"model_name": "m", "pooling": "landmark"})
    assert again.count_sentences() == 4
    with pytest.raises(StoreMismatchError, match="pooling"):
        ChromaSentenceStore.open(tmp_path / "db", "unit", identity={"model_name": "m", "pooling": "mean"})
    with pytest.raises(LookupError):
        ChromaSentenceStore.open(tmp_path / "db", "missing", create=False)


def test_search_passages_returns_exactly_k_non_overlapping(store):
    long_a, long_b = " ".join([DOC_A] * 4), " ".join([DOC_B] * 4)
    a, b = encode(long_a, "a", 3), encode(long_b, "b", 4)
    store.add_document(a)
    store.add_document(b)
    q = a.embeddings[1] + a.embeddings[2]
    for k in (1, 2, 3, 5):
        ps = search_passages(q, store, k=k, strategy="surround")
        assert len(ps) == k
        spans = sorted((p.doc_id, p.first_index, p.last_index) for p in ps)
        for (d1, _, hi), (d2, lo, _) in zip(spans, spans[1:]):
            assert d1 != d2 or lo > hi + 1
        for p in ps:
            text = long_a if p.doc_id == "a" else long_b
            assert text[p.start : p.end] == p.text
    # asking for more than the store can supply gives what there is, still disjoint
    many = search_passages(q, store, k=50, strategy="front")
    assert 2 <= len(many) < 50
    covered = [(p.doc_id, i) for p in many for i in range(p.first_index, p.last_index + 1)]
    assert len(covered) == len(set(covered))


def test_scores_are_cosine_in_any_chroma_space(tmp_path):
    import chromadb

    a = encode(DOC_A, "a", 7)
    client = chromadb.PersistentClient(path=str(tmp_path / "spaces"))
    for space in ("l2", "ip", "cosine"):
        col = client.create_collection(f"space-{space}", configuration={"hnsw": {"space": space}}, embedding_function=None)
        store = ChromaSentenceStore(col)
        store.add_document(a)
        q = a.embeddings[0] * 0.8 + a.embeddings[1] * 0.6
        q /= np.linalg.norm(q)
        hits = store.query(q, 4)
        expected = sorted((float(v @ q) for v in a.embeddings), reverse=True)
        assert [h.score for h in hits] == pytest.approx(expected, abs=1e-4), space
