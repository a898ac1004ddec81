"""Filtered search's fast paths return what the general path returns.

A metadata filter is evaluated inside the lexical index as a mask over its rows
(``store/lexical_filter.py``), a ``doc_id`` filter of a vector search is read by sentence
ids (``SentenceReads._query``; a few ids scored exactly, their vectors read), and hybrid
search gives its dense half the documents the lexical index says a metadata filter selects
(``retrieve/ranking.py``); the general path asks Chroma's metadata filter. Real Chroma
stores, random unit vectors; each comparison runs the same requests with the fast paths
switched off.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from landmark_rag.expand import Surround
from landmark_rag.retrieve import FusionConfig, Request, Sources, find_hits, find_passages, ranking
from landmark_rag.store import ChromaSentenceStore, reads
from landmark_rag.store.lexical import StoreLexicalIndex
from landmark_rag.store.lexical_filter import RowFilter, shared_metadata
from landmark_rag.store.reads import SentenceReads
from landmark_rag.store.schema import documents_named
from tests.random_vectors import encode

TEXTS = [
    "Cats purr when content. Kittens play with yarn. Old cats nap in the sun. A cat likes fish.",
    "Rockets need fuel. Cats once flew in rockets. Orbits are curved paths. Launches are loud.",
    "Bread needs flour. Ovens bake loaves. A cat sleeps by the oven. Yeast makes dough rise.",
    "The fish swim in the river. Cats watch the fish. The river is cold. Boats float on it.",
]
META: list[dict[str, Any]] = [
    {"topic": "pets", "year": 2020, "flag": True},
    {"topic": "space", "year": 2021, "flag": False},
    {"topic": "food", "year": 2020, "flag": True},
    {"topic": "pets", "year": 2019},
]
FILTERS: list[dict[str, Any]] = [
    {"doc_id": "d3"},
    {"doc_id": {"$eq": "d5"}},
    {"doc_id": {"$in": ["d1", "d4", "d6"]}},
    {"doc_id": "nowhere"},
    {"topic": "pets"},
    {"year": 2020},
    {"year": 2020.0},  # Chroma matches numbers by value
    {"flag": True},
    {"topic": "pets", "year": 2020},  # several keys: their conjunction
    {"$and": [{"doc_id": {"$in": ["d0", "d1", "d2", "d3"]}}, {"topic": "pets"}]},
    {"$or": [{"topic": "space"}, {"doc_id": "d6"}]},
    {"$and": [{"topic": "pets"}, {"sentence_index": {"$gte": 2}}]},  # part mask, part Chroma
    {"year": {"$gt": 2019}},  # Chroma only
    {"sentence_index": 1},  # a key that differs within a document: Chroma only
]
QUERIES = ["cats fish", "river boats", "rockets fuel cats", "oven bread yeast", "sun nap"]


IDENTITY = {"model_name": "m", "pooling": "landmark"}


def _documents(store: ChromaSentenceStore, n: int = 8) -> None:
    for i in range(n):
        store.add_document(encode(TEXTS[i % len(TEXTS)], f"d{i}", seed=i), metadata=META[i % len(META)])


def filtered_store(db: Path) -> ChromaSentenceStore:
    """A new store in ``db`` (collection ``unit``) holding the eight documents the filters select from."""
    store = ChromaSentenceStore.open(db, "unit", identity=IDENTITY)
    _documents(store)
    return store


@pytest.fixture()
def store(tmp_path) -> ChromaSentenceStore:
    return filtered_store(tmp_path / "db")


@contextmanager
def general_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every filter asked of Chroma, as before the fast paths existed."""
    with monkeypatch.context() as m:
        m.setattr(RowFilter, "split", lambda self, where: (None, where))
        m.setattr(RowFilter, "documents", lambda self, where: None)
        m.setattr(SentenceReads, "_scope_ids", lambda self, where: None)
        yield


def _run(store: ChromaSentenceStore, lex: StoreLexicalIndex) -> list[Any]:
    """Hits (id, score) and passages of every mode, query and filter."""
    fusion = FusionConfig(mode="hybrid", depth=6)
    rng = np.random.default_rng(7)
    out: list[Any] = []
    for q in QUERIES:
        vec = rng.normal(size=8).astype(np.float32)
        vec /= np.linalg.norm(vec)
        for where in FILTERS:
            for mode in ("dense", "lexical", "hybrid"):
                request = Request(mode, q, vec, where)
                sources = Sources(store, lex, fusion)
                hits = find_hits(request, 5, sources)
                out.append((q, mode, str(where), [(h.sentence.doc_id, h.sentence.index, round(h.score, 5)) for h in hits]))
                passages = find_passages(request, 3, sources, Surround())
                out.append((q, mode, str(where), [(p.doc_id, p.start, p.end) for p in passages]))
    return out


def _check(store: ChromaSentenceStore, lex: StoreLexicalIndex, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    fast = _run(store, lex)
    with general_path(monkeypatch):
        general = _run(store, lex)
    assert fast == general
    return fast


def test_fast_paths_return_what_the_general_path_returns(store, monkeypatch):
    lex = StoreLexicalIndex(store)
    got = _check(store, lex, monkeypatch)
    # the comparison is not vacuous: filters find hits, and they keep to their documents
    by_filter = {(mode, where): hits for q, mode, where, hits in got[::2] if q == "cats fish"}
    assert {d for d, _, _ in by_filter[("lexical", str({"doc_id": "d3"}))]} == {"d3"}
    assert len({d for d, _, _ in by_filter[("hybrid", str({"topic": "pets"}))]} - {"d0", "d3", "d4", "d7"}) == 0
    assert len(by_filter[("hybrid", str({"topic": "pets"}))]) == 5
    assert {d for d, _, _ in by_filter[("dense", str({"doc_id": {"$in": ["d1", "d4", "d6"]}}))]} <= {"d1", "d4", "d6"}
    assert by_filter[("lexical", str({"doc_id": "nowhere"}))] == []


def test_filters_follow_documents_rewritten_and_deleted(store, monkeypatch):
    lex = StoreLexicalIndex(store)
    _check(store, lex, monkeypatch)
    # new metadata for a document (same text), a deleted document, a new one: the index
    # re-reads what changed, and its masks change with it
    store.add_document(encode(TEXTS[3], "d3", seed=3), metadata={"topic": "space", "year": 2021})
    store.delete_document("d5")
    store.add_document(encode(TEXTS[0], "d9", seed=9), metadata={"topic": "pets", "year": 2020})
    got = _check(store, lex, monkeypatch)
    pets = {d for q, mode, where, hits in got[::2] if mode == "lexical" and where == str({"topic": "pets"}) for d, _, _ in hits}
    assert "d3" not in pets and "d9" in pets
    assert not [h for q, mode, where, h in got[::2] if where == str({"doc_id": {"$eq": "d5"}}) and h]
    # a fresh index reading its cache from disk masks the same way
    assert _run(store, StoreLexicalIndex(store)) == got


def test_a_one_document_filter_asks_chroma_nothing_per_candidate(store, monkeypatch):
    lex = StoreLexicalIndex(store)
    lex.snapshot()
    asked: list[Any] = []
    real = store.read_ids
    monkeypatch.setattr(store, "read_ids", lambda *a, **k: asked.append(k.get("where")) or real(*a, **k))
    assert {i.split(":")[0] for i, _ in lex.candidates("cats fish", 5, where={"doc_id": "d3"})} == {"d3"}
    assert {i.split(":")[0] for i, _ in lex.candidates("cats", 5, where={"topic": "pets", "year": 2019})} == {"d3", "d7"}
    assert asked == []
    # the part of a filter the index cannot evaluate is asked of Chroma, for masked candidates only
    got = lex.candidates("cats", 9, where={"$and": [{"topic": "pets"}, {"sentence_index": {"$gte": 2}}]})
    assert asked == [{"sentence_index": {"$gte": 2}}]
    assert got and {i.split(":")[0] for i, _ in got} <= {"d0", "d3", "d4", "d7"}


@contextmanager
def query_spy(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, list[dict[str, Any]]]]:
    """The keyword arguments of every ``query`` and ``get`` a store's collection is asked."""
    from chromadb.api.models.Collection import Collection

    calls: dict[str, list[dict[str, Any]]] = {"query": [], "get": []}
    with monkeypatch.context() as m:
        for name in calls:
            real = getattr(Collection, name)

            # on the class: the store re-opens its collection after a write
            def spy(self: Any, *, _name: str = name, _real: Any = real, **kw: Any) -> Any:
                calls[_name].append(kw)
                return _real(self, **kw)

            m.setattr(Collection, name, spy)
        yield calls


def _nearest(store: ChromaSentenceStore, vec: np.ndarray, n: int, where: dict[str, Any]) -> list[tuple[str, int, float]]:
    return [(h.sentence.doc_id, h.sentence.index, round(h.score, 5)) for h in store.nearest(vec, n, where=where)]


def test_a_doc_id_filter_of_many_sentences_reads_vectors_by_id_and_falls_back_when_one_is_gone(store, monkeypatch):
    monkeypatch.setattr(reads, "_EXACT_IDS", 0)  # these documents stand for ones too long to score here
    vec = encode(TEXTS[1], "q", seed=1).embeddings[2]
    where = {"doc_id": {"$in": ["d1", "d5"]}}
    with general_path(monkeypatch):
        expected = _nearest(store, vec, 6, where)
    with query_spy(monkeypatch) as calls:
        got = _nearest(store, vec, 6, where)
    assert got == expected and {d for d, _, _ in got} == {"d1", "d5"}
    assert len(calls["query"]) == 1 and "where" not in calls["query"][0] and len(calls["query"][0]["ids"]) == 8
    # a record deleted behind the manifest's back: Chroma refuses ids it does not hold, and
    # the search takes its metadata filter instead
    gone = store.collection.get(where={"doc_id": "d5"}, include=[])["ids"][0]
    store.collection.delete(ids=[gone])
    with query_spy(monkeypatch) as calls:
        got = _nearest(store, vec, 6, where)
    assert [c.get("ids") is not None for c in calls["query"]] == [True, False] and calls["query"][1]["where"] == where
    with general_path(monkeypatch):
        assert got == _nearest(store, vec, 6, where)


def test_a_doc_id_filter_of_few_sentences_is_scored_exactly_here(store, monkeypatch):
    vec = encode(TEXTS[1], "q", seed=1).embeddings[2]
    for where in ({"doc_id": "d1"}, {"doc_id": {"$eq": "d1"}}, {"doc_id": {"$in": ["d1", "d5"]}}):
        for n in (1, 3, 20):
            with general_path(monkeypatch):
                expected = _nearest(store, vec, n, where)
            with query_spy(monkeypatch) as calls:
                got = _nearest(store, vec, n, where)
            assert got == expected and got
            # no vector search: the documents' vectors read by id (the manifest is read too)
            reads_by_id = [c for c in calls["get"] if c.get("include") == ["embeddings"]]
            assert calls["query"] == [] and len(reads_by_id) == 1 and reads_by_id[0]["ids"]
            assert store.nearest_ids(vec, n, where=where) == [
                (f"{d}:{i}", pytest.approx(s, abs=1e-5)) for d, i, s in expected
            ]
    # a record deleted behind the manifest's back is simply not found, as Chroma's filter finds it not
    where = {"doc_id": {"$in": ["d1", "d5"]}}
    gone = store.collection.get(where={"doc_id": "d5"}, include=[])["ids"][0]
    store.collection.delete(ids=[gone])
    with query_spy(monkeypatch) as calls:
        got = _nearest(store, vec, 8, where)
    assert calls["query"] == [] and len(got) == 7
    with general_path(monkeypatch):
        assert got == _nearest(store, vec, 8, where)


def test_a_filter_naming_more_than_documents_is_left_to_chroma(store, monkeypatch):
    # Chroma given both ids and a filter is far slower than given the filter alone
    vec = encode(TEXTS[1], "q", seed=1).embeddings[2]
    where = {"$and": [{"doc_id": "d2"}, {"sentence_index": {"$gte": 1}}]}
    with query_spy(monkeypatch) as calls:
        got = _nearest(store, vec, 5, where)
    assert [c["where"] for c in calls["query"]] == [where] and "ids" not in calls["query"][0]
    assert {d for d, _, _ in got} == {"d2"} and 0 not in {i for _, i, _ in got}


def test_hybrid_gives_its_dense_half_the_documents_a_metadata_filter_selects(store, monkeypatch):
    lex = StoreLexicalIndex(store)
    vec = encode(TEXTS[1], "q", seed=1).embeddings[2]
    sources = Sources(store, lex, FusionConfig(mode="hybrid", depth=6))
    for where, docs in (
        ({"topic": "pets"}, {"d0", "d3", "d4", "d7"}),
        ({"topic": "pets", "year": 2020}, {"d0", "d4"}),
        ({"$and": [{"doc_id": {"$in": ["d0", "d1", "d2", "d3"]}}, {"topic": "pets"}]}, {"d0", "d3"}),
    ):
        with query_spy(monkeypatch) as calls:
            hits = find_hits(Request("hybrid", "cats fish", vec, where), 5, sources)
        assert hits and {h.sentence.doc_id for h in hits} <= docs
        # the dense half read the selected documents' vectors by id: no filtered vector search
        assert calls["query"] == [] and {
            i.split(":")[0] for c in calls["get"] if c.get("include") == ["embeddings"] for i in c["ids"]
        } == docs
    # what the index cannot decide whole goes to Chroma as it is
    where = {"$and": [{"topic": "pets"}, {"sentence_index": {"$gte": 2}}]}
    with query_spy(monkeypatch) as calls:
        find_hits(Request("hybrid", "cats fish", vec, where), 5, sources)
    assert [c["where"] for c in calls["query"]] == [where]
    # nor are more sentences named than a read by id is worth (by the lexical index, nor by
    # the store's own table of document metadata)
    monkeypatch.setattr(ranking, "SCOPE_IDS", 3)
    monkeypatch.setattr(reads, "SCOPE_IDS", 3)
    with query_spy(monkeypatch) as calls:
        find_hits(Request("hybrid", "cats fish", vec, {"topic": "pets"}), 5, sources)
    assert [c["where"] for c in calls["query"]] == [{"topic": "pets"}]


@pytest.mark.parametrize("space", ["cosine", "l2", "ip"])
def test_distances_are_chromas(space):
    import chromadb

    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(40, 16)).astype(np.float32)
    query = rng.normal(size=16).astype(np.float32)
    collection = chromadb.EphemeralClient().get_or_create_collection(f"space-{space}", metadata={"hnsw:space": space})
    collection.add(ids=[f"r{i}" for i in range(40)], embeddings=vectors)
    got = collection.query(query_embeddings=[query], n_results=10, include=["distances"])
    rows = [int(r[1:]) for r in got["ids"][0]]
    mine = reads.distances(vectors, query, space)
    assert np.argsort(mine, kind="stable")[:10].tolist() == rows
    np.testing.assert_allclose(mine[rows], got["distances"][0], rtol=1e-5, atol=1e-5)


def test_row_filter_evaluates_what_it_can_and_returns_the_rest():
    shared = [{"doc_id": "a", "topic": "x", "n": 1}, {"doc_id": "b", "topic": "y", "n": 2.0, "flag": True}]
    rf = RowFilter(shared, [["sentence_index"], ["sentence_index", "page"]], [2, 3])
    mask, rest = rf.split({"doc_id": "b"})
    assert mask.tolist() == [False, False, True, True, True] and rest is None
    assert rf.split({"n": {"$in": [1, 2]}})[0].all()  # numbers by value
    assert not rf.split({"flag": 1})[0].any()  # a boolean is not a number
    assert rf.split({"topic": {"$ne": "x"}}) == (None, {"topic": {"$ne": "x"}})
    assert rf.split({"page": 3}) == (None, {"page": 3})  # differs within a document
    assert rf.split({"doc_hash": "h"}) == (None, {"doc_hash": "h"})  # not kept per document
    mask, rest = rf.split({"$and": [{"topic": "x"}, {"page": 3}, {"n": {"$gt": 0}}]})
    assert mask.tolist() == [True, True, False, False, False]
    assert rest == {"$and": [{"page": 3}, {"n": {"$gt": 0}}]}
    assert rf.split({"$or": [{"topic": "x"}, {"page": 3}]}) == (None, {"$or": [{"topic": "x"}, {"page": 3}]})
    assert rf.split({"$or": [{"topic": "x"}, {"flag": True}]})[0].all()
    assert shared_metadata([{"a": 1, "b": 2, "doc_hash": "h"}, {"a": 1.0, "b": 3}]) == ({"a": 1}, ["b"])
    assert shared_metadata([{"a": 1}, {"a": True}]) == ({}, ["a"])


def test_documents_named_by_a_filter():
    assert documents_named({"doc_id": "a"}) == (["a"], None)
    assert documents_named({"doc_id": {"$in": ["b", "a"]}}) == (["a", "b"], None)
    rest = {"topic": "x"}
    assert documents_named({"$and": [{"doc_id": {"$in": ["a", "b"]}}, {"doc_id": "b"}, rest]}) == (["b"], rest)
    assert documents_named({"doc_id": {"$ne": "a"}}) == ([], {"doc_id": {"$ne": "a"}})
    assert documents_named({"doc_id": 3}) == ([], {"doc_id": 3})  # not how the store writes ids
    assert documents_named(None) == ([], None)
