"""Chroma store: replace-on-reingest, manifest visibility, identity checks, passage search."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from landmark_rag.store import ChromaSentenceStore, StoreError, StoreMismatchError, sentence_id
from tests.random_vectors import encode

DOC_A = "Cats purr when content. They sleep a lot. Kittens play with yarn. Old cats nap in the sun."
DOC_B = "Rockets need fuel. Orbits are curved paths. Satellites circle the Earth. Launches are loud."




@pytest.fixture()
def store(tmp_path) -> ChromaSentenceStore:
    return ChromaSentenceStore.open(tmp_path / "db", "unit", identity={"model_name": "m", "pooling": "landmark"})


def test_add_query_and_exact_neighbours(store):
    a, b = encode(DOC_A, "a", 1), encode(DOC_B, "b", 2)
    assert store.add_document(a, metadata={"source": "a.txt", "tags": ["x", "y"], "none": None}) == 4
    store.add_document(b)
    assert store.count_sentences() == 8
    hits = store.nearest(a.embeddings[2], 3)
    assert hits[0].sentence == a.sentences[2]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert hits[0].metadata["source"] == "a.txt" and hits[0].metadata["tags"] == '["x", "y"]'
    assert store.read_document("a", [0, 1, 99]).sentences == [a.sentences[0], a.sentences[1]]
    np.testing.assert_allclose(store.read_document("b", [3], embeddings=True).embeddings[0], b.embeddings[3], atol=1e-6)
    both = store.read_documents({"a": None, "b": [3]}, embeddings=True)  # one read, whole or in part
    assert both["a"].sentences == a.sentences and both["b"].sentences == [b.sentences[3]]
    np.testing.assert_allclose(both["a"].embeddings, a.embeddings, atol=1e-6)
    assert store.read_document("b", [3]).embeddings.shape == (1, 0)  # vectors only when asked for
    assert store.document_text("a") == DOC_A


def test_read_ids_reads_what_a_framework_holds(store):
    a = encode(DOC_A, "a", 1)
    store.add_document(a, metadata={"source": "a.txt"})
    rid = sentence_id("a", 1, store.read_ids(["a:1"])["a:1"].metadata["doc_version"])  # the stored record id
    [(got_id, hit)] = store.read_ids([rid, "no-such-id"], hidden=True).items()
    assert (got_id, hit.sentence, hit.metadata["source"]) == (rid, a.sentences[1], "a.txt")
    assert store.read_ids([]) == {}
    scored = store.read_ids(["a:2", "no-such-id", "a:0"], [0.5, 0.4, 0.3])  # a ranking read back, in order
    assert [(h.sentence, h.score) for h in scored.values()] == [(a.sentences[2], 0.5), (a.sentences[0], 0.3)]
    assert list(store.read_ids(["a:2", "a:3"], where={"source": "b.txt"})) == []


def test_record_deleted_mid_search_is_dropped_not_an_error(store, monkeypatch):
    """Chroma reads a query's rows after its vector search; a record another process deletes
    in between (a replaced version) comes back with no metadata and no text. A reader that
    failed there was seen under load; the search drops the row, as for a hidden version."""
    a, b = encode(DOC_A, "a", 1), encode(DOC_B, "b", 2)
    store.add_document(a)
    store.add_document(b)
    deleted = sentence_id("a", 2, store.read_ids(["a:2"])["a:2"].metadata["doc_version"])
    collection_type = type(store.collection)
    chroma_query = collection_type.query

    def query_racing_a_delete(self, *args, **kwargs):
        got = chroma_query(self, *args, **kwargs)
        for j, rid in enumerate(got["ids"][0]):
            if rid == deleted:
                got["metadatas"][0][j] = None
                got["documents"][0][j] = None
        return got

    monkeypatch.setattr(collection_type, "query", query_racing_a_delete)
    hits = store.nearest(a.embeddings[2], 3)
    assert ("a", 2) not in {(h.sentence.doc_id, h.sentence.index) for h in hits}
    assert len(hits) == 2 and all(h.sentence.text for h in hits)
    monkeypatch.undo()
    assert store.nearest(a.embeddings[2], 1)[0].sentence == a.sentences[2]  # nothing was lost


def test_reingest_shrunk_document_leaves_nothing_stale(store):
    store.add_document(encode(DOC_A + " Extra one. Extra two.", "a"))
    assert store.count_sentences() == 6
    store.add_document(encode("Cats purr. Done.", "a", 5))
    assert store.count_sentences() == 2
    assert [s.text for s in store.read_document("a").sentences] == ["Cats purr.", "Done."]
    store.add_document(encode("Cats purr. Done.", "a", 5))  # idempotent
    assert store.count_sentences() == 2
    assert store.delete_document("a") == 2 and store.count_sentences() == 0
    assert store.documents() == {}


class _FailingManifest:
    """The real manifest collection whose ``upsert`` fails (the commit of a replacement)."""

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        if name == "upsert":
            def fail(*args, **kwargs):
                raise ConnectionError("injected: server went away")
            return fail
        return getattr(self.inner, name)


def test_interrupted_replace_keeps_previous_version_until_completed(store):
    a = encode(DOC_A, "a")
    store.add_document(a)
    old_hash = store.document_hash("a")
    new = encode(DOC_A.replace("yarn", "string"), "a", 9)
    broken = ChromaSentenceStore(store.collection, _FailingManifest(store.manifest))
    with pytest.raises(StoreError, match="ConnectionError: injected"):
        broken.add_document(new)  # new sentences written, commit failed
    assert store.count_sentences() == 8  # both versions stored, only the old one visible
    assert next(h.sentence for h in store.nearest(a.embeddings[2], 4)) == a.sentences[2]
    assert len(store.nearest(a.embeddings[1], 10)) == 4
    assert store.read_document("a").sentences == a.sentences
    assert store.read_document("a", [0, 1, 2, 3]).sentences == a.sentences
    assert list(store.read_ids([f"a:{i}" for i in range(4)])) == [f"a:{i}" for i in range(4)]  # the old version
    assert len(store.nearest(a.embeddings[1], 10, hidden=True)) == 8  # every version, for a raw reader
    assert store.document_hash("a") == old_hash
    assert store.add_document(new) == 4  # the next run finishes and cleans up
    assert store.count_sentences() == 4
    assert store.read_document("a").sentences == new.sentences
    assert store.documents()["a"].get("dirty") is None


def test_interrupted_new_document_is_hidden_and_redone(store):
    a = encode(DOC_A, "a")
    broken = ChromaSentenceStore(store.collection, _FailingManifest(store.manifest))
    with pytest.raises(StoreError):
        broken.add_document(a)  # the announce (an upsert for a new document) fails
    assert store.nearest(a.embeddings[1], 4) == []
    assert store.document_hash("a") is None  # the next run must redo it
    store.add_document(a)
    assert len(store.nearest(a.embeddings[0], 4)) == 4 and store.count_sentences() == 4


def test_identity_mismatch_is_refused(tmp_path, store):
    store.add_document(encode(DOC_A, "a"))
    again = ChromaSentenceStore.open(tmp_path / "db", "unit", identity={"model_name": "m", "pooling": "landmark"})
    assert again.count_sentences() == 4
    with pytest.raises(StoreMismatchError, match="pooling"):
        ChromaSentenceStore.open(tmp_path / "db", "unit", identity={"model_name": "m", "pooling": "mean"})
    with pytest.raises(LookupError):
        ChromaSentenceStore.open(tmp_path / "db", "missing", create=False)


def test_search_returns_exactly_k_non_overlapping(store):
    from landmark_rag import LandmarkIndex

    long_a, long_b = " ".join([DOC_A] * 4), " ".join([DOC_B] * 4)
    a, b = encode(long_a, "a", 3), encode(long_b, "b", 4)
    store.add_document(a)
    store.add_document(b)
    index = LandmarkIndex(store)  # no encoder: the query vector is given
    q = a.embeddings[1] + a.embeddings[2]
    for k in (1, 2, 3, 5):
        ps = index.search("", k, strategy="surround", query_vector=q)
        assert len(ps) == k
        spans = sorted((p.doc_id, p.first_index, p.last_index) for p in ps)
        for (d1, _, hi), (d2, lo, _) in itertools.pairwise(spans):
            assert d1 != d2 or lo > hi + 1
        for p in ps:
            text = long_a if p.doc_id == "a" else long_b
            assert text[p.start : p.end] == p.text
    # asking for more than the store can supply gives what there is, still disjoint
    many = index.search("", 50, strategy="front", query_vector=q)
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
        hits = store.nearest(q, 4)
        expected = sorted((float(v @ q) for v in a.embeddings), reverse=True)
        assert [h.score for h in hits] == pytest.approx(expected, abs=1e-4), space


def test_is_server_url_is_the_one_test_for_a_server() -> None:
    from landmark_rag.store import is_server_url

    assert is_server_url("http://localhost:8000") and is_server_url("https://chroma.example:443")
    assert not is_server_url("./landmark_db") and not is_server_url(":memory:") and not is_server_url(None)
    assert not is_server_url("httpdocs/db")
