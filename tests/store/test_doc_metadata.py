"""A vector search filtered on user metadata, decided by the store's table of per-document
metadata (``store/doc_metadata.py``), returns what Chroma's own filter returns.

Real Chroma stores, random unit vectors. "General path": ``SentenceReads._scope_ids`` switched
off, so every filter goes to Chroma's ``where`` as before the table existed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from landmark_rag.expand import Surround
from landmark_rag.retrieve import Request, Sources, find_hits, find_passages
from landmark_rag.store import ChromaSentenceStore
from landmark_rag.store.records import document_rows
from landmark_rag.store.schema import sentence_metadata
from tests.random_vectors import encode
from tests.retrieve.test_filtered_search import META, TEXTS, filtered_store, general_path, query_spy

FILTERS: list[dict[str, Any]] = [
    {"topic": "pets"},
    {"topic": {"$eq": "space"}},
    {"topic": {"$in": ["food", "space"]}},
    {"year": 2020},
    {"year": 2020.0},
    {"flag": True},
    {"flag": 1},  # a boolean is not a number
    {"$and": [{"topic": "pets"}, {"year": 2019}]},
    {"$or": [{"topic": "space"}, {"year": 2019}]},
    {"$and": [{"doc_id": {"$in": ["d0", "d1", "d3"]}}, {"topic": "pets"}]},
    {"topic": "nowhere"},
    {"year": {"$gt": 2019}},  # left to Chroma
    {"$and": [{"topic": "pets"}, {"sentence_index": {"$gte": 2}}]},  # left to Chroma whole
]


@pytest.fixture()
def store(tmp_path) -> ChromaSentenceStore:
    return filtered_store(tmp_path / "db")


def _vectors(n: int = 4) -> list[np.ndarray]:
    rng = np.random.default_rng(11)
    out = []
    for _ in range(n):
        v = rng.normal(size=8).astype(np.float32)
        out.append(v / np.linalg.norm(v))
    return out


def _run(store: ChromaSentenceStore, *, plain: bool = True) -> list[Any]:
    """Nearest hits (every size up to all), dense hits and passages for every filter.

    ``plain=False`` leaves out the store's plain reads: while a document is written, Chroma's
    filter also finds its hidden new sentences and a plain read returns fewer than asked
    (``nearest``'s contract), where a read by ids finds only visible ones; a search reads on
    until it has enough, so what it returns is the same.
    """
    out: list[Any] = []
    for vec in _vectors():
        for where in FILTERS:
            for n in (1, 5, 40) if plain else ():
                out.append([(h.sentence.doc_id, h.sentence.index, round(h.score, 5))
                            for h in store.nearest(vec, n, where=where)])
            request = Request("dense", None, vec, where)
            out.append([(h.sentence.doc_id, h.sentence.index) for h in find_hits(request, 6, Sources(store))])
            out.append([(p.doc_id, p.start, p.end) for p in find_passages(request, 3, Sources(store), Surround())])
    return out


def _check(store: ChromaSentenceStore, monkeypatch: pytest.MonkeyPatch, *, plain: bool = True) -> list[Any]:
    fast = _run(store, plain=plain)
    with general_path(monkeypatch):
        general = _run(store, plain=plain)
    assert fast == general
    return fast


def _filtered_queries(calls: dict[str, list[dict[str, Any]]]) -> list[Any]:
    return [c["where"] for c in calls["query"] if "where" in c]


def test_metadata_filters_follow_ingest_reingest_and_delete(store, monkeypatch):
    got = _check(store, monkeypatch)
    assert any(got) and not all(got)  # hits for most filters, none for "nowhere"
    vec = _vectors()[0]
    # the table decided them: no vector search Chroma filters by metadata
    with query_spy(monkeypatch) as calls:
        pets = store.nearest(vec, 40, where={"topic": "pets"})
    assert _filtered_queries(calls) == [] and {h.sentence.doc_id for h in pets} == {"d0", "d3", "d4", "d7"}
    # new metadata for a document (same text), a deleted document, a new one
    store.add_document(encode(TEXTS[3], "d3", seed=3), metadata={"topic": "space", "year": 2021})
    store.delete_document("d4")
    store.add_document(encode(TEXTS[0], "d9", seed=9), metadata={"topic": "pets", "year": 2020})
    _check(store, monkeypatch)
    with query_spy(monkeypatch) as calls:
        pets = store.nearest(vec, 40, where={"topic": "pets"})
    assert _filtered_queries(calls) == [] and {h.sentence.doc_id for h in pets} == {"d0", "d7", "d9"}
    # a fresh store object (another process) starts from the table kept beside the store and agrees
    assert _run(ChromaSentenceStore(store.collection, store.manifest)) == _run(store)


def test_a_document_being_written_is_seen_as_readers_see_it(store, monkeypatch):
    store.nearest(_vectors()[0], 3, where={"topic": "pets"})  # the table, built before the write
    seen: list[Any] = []

    def write_then_search(rows: Any) -> Any:
        def write(version: str) -> None:
            store._io.upsert_sentences(rows.ids(version), rows.vectors, rows.metadatas(version), rows.texts)
            # the new sentences are stored, the previous version (or nothing) is what readers
            # see: the table built before, and one built now, both say so
            for s in (store, ChromaSentenceStore(store.collection, store.manifest)):
                seen.append(_check(s, monkeypatch, plain=False))
        return write

    # a replace with new metadata (the previous version, with the old, stays visible) ...
    rows = document_rows(encode(TEXTS[3], "d3", seed=30), {"topic": "space", "year": 2021}, None, True)
    store.write_document("d3", write_then_search(rows), n_sentences=len(rows.texts), doc_hash=rows.doc_hash,
                         metadata=rows.metadata)
    # ... and a new document (hidden until complete)
    rows = document_rows(encode(TEXTS[0], "d9", seed=9), {"topic": "pets"}, None, True)
    store.write_document("d9", write_then_search(rows), n_sentences=len(rows.texts), doc_hash=rows.doc_hash,
                         metadata=rows.metadata)
    assert len(seen) == 4 and seen[0] == seen[1]
    _check(store, monkeypatch)
    assert _run(store, plain=False) != seen[0]
    pets = {h.sentence.doc_id for h in store.nearest(_vectors()[0], 40, where={"topic": "pets"})}
    assert pets == {"d0", "d4", "d7", "d9"}


def test_sentences_without_a_manifest_record_leave_the_filter_to_chroma(store, monkeypatch):
    vec = _vectors()[0]
    store.nearest(vec, 3, where={"topic": "pets"})  # the table, built while every sentence has a record
    foreign = encode("Cats chase mice. Mice hide well.", "x", seed=5)
    store.collection.add(
        ids=[f"x:{s.index}" for s in foreign.sentences], embeddings=foreign.embeddings,
        metadatas=[sentence_metadata(s, None, {"topic": "pets"}) for s in foreign.sentences],
        documents=[s.text for s in foreign.sentences],
    )
    # another tool's write moves no generation; the next protocol write does, and the table
    # then finds sentences no record accounts for
    store.add_document(encode(TEXTS[1], "d1", seed=1), metadata=META[1])
    with query_spy(monkeypatch) as calls:
        pets = store.nearest(vec, 40, where={"topic": "pets"})
    assert _filtered_queries(calls) == [{"topic": "pets"}] and "x" in {h.sentence.doc_id for h in pets}
    _check(store, monkeypatch)
    # a store that held them from the start: the first table declines too
    assert _run(ChromaSentenceStore(store.collection, store.manifest)) == _run(store)


@pytest.mark.parametrize("where", [
    {"$and": [{"topic": "pets"}]},  # one part: the table could read it, Chroma refuses it
    {"topic": {"$in": []}},
    {"topic": {"$in": ["pets", 2020]}},
    {"topic": "pets", "year": 2020},  # several keys: Request joins them, Chroma alone refuses
    {"topic": {"$eq": "pets", "$ne": "food"}},
])
def test_a_filter_chroma_refuses_fails_as_before(store, monkeypatch, where):
    vec = _vectors()[0]
    store.nearest(vec, 3, where={"topic": "pets"})
    with pytest.raises(Exception) as fast:
        store.nearest(vec, 3, where=where)
    with general_path(monkeypatch), pytest.raises(Exception) as general:
        store.nearest(vec, 3, where=where)
    assert type(fast.value) is type(general.value) and str(fast.value) == str(general.value)


def test_a_store_without_a_manifest_filters_in_chroma(tmp_path, monkeypatch):
    import chromadb

    client = chromadb.PersistentClient(path=str(tmp_path / "raw"))
    collection = client.create_collection("raw", metadata={"hnsw:space": "cosine"})
    for i in range(4):
        doc = encode(TEXTS[i], f"d{i}", seed=i)
        collection.add(ids=[f"d{i}:{s.index}" for s in doc.sentences], embeddings=doc.embeddings,
                       metadatas=[sentence_metadata(s, None, META[i]) for s in doc.sentences],
                       documents=[s.text for s in doc.sentences])
    store = ChromaSentenceStore(collection)
    with query_spy(monkeypatch) as calls:
        got = store.nearest(_vectors()[0], 9, where={"topic": "pets"})
    assert _filtered_queries(calls) == [{"topic": "pets"}] and {h.sentence.doc_id for h in got} == {"d0", "d3"}
