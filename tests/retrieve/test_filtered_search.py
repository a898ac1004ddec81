"""Filtered search's fast paths return what the general path returns.

A metadata filter is evaluated inside the lexical index as a mask over its rows
(``store/lexical_filter.py``) and a ``doc_id`` filter of a vector search is read by sentence
ids (``SentenceReads._query``); the general path asks Chroma's metadata filter. Real Chroma
stores, random unit vectors; each comparison runs the same requests with the fast paths
switched off.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

from landmark_rag.expand import Surround
from landmark_rag.retrieve import FusionConfig, Request, Sources, find_hits, find_passages
from landmark_rag.store import ChromaSentenceStore
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


def _documents(store: ChromaSentenceStore, n: int = 8) -> None:
    for i in range(n):
        store.add_document(encode(TEXTS[i % len(TEXTS)], f"d{i}", seed=i), metadata=META[i % len(META)])


@pytest.fixture()
def store(tmp_path) -> ChromaSentenceStore:
    store = ChromaSentenceStore.open(tmp_path / "db", "unit", identity={"model_name": "m", "pooling": "landmark"})
    _documents(store)
    return store


@contextmanager
def general_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every filter asked of Chroma, as before the fast paths existed."""
    with monkeypatch.context() as m:
        m.setattr(RowFilter, "split", lambda self, where: (None, where))
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


def test_a_doc_id_filter_reads_vectors_by_id_and_falls_back_when_one_is_gone(store, monkeypatch):
    from chromadb.api.models.Collection import Collection

    vec = encode(TEXTS[1], "q", seed=1).embeddings[2]
    calls: list[dict[str, Any]] = []
    real = Collection.query

    def spy(self: Any, **kw: Any) -> Any:  # on the class: the store re-opens its collection after a write
        calls.append(kw)
        return real(self, **kw)

    monkeypatch.setattr(Collection, "query", spy)
    where = {"doc_id": {"$in": ["d1", "d5"]}}
    with general_path(monkeypatch):
        expected = [(h.sentence.doc_id, h.sentence.index) for h in store.nearest(vec, 6, where=where)]
    calls.clear()
    got = [(h.sentence.doc_id, h.sentence.index) for h in store.nearest(vec, 6, where=where)]
    assert got == expected and {d for d, _ in got} == {"d1", "d5"}
    assert len(calls) == 1 and calls[0]["where"] is None and len(calls[0]["ids"]) == 8
    # a record deleted behind the manifest's back: Chroma refuses ids it does not hold, and
    # the search takes its metadata filter instead
    gone = store.collection.get(where={"doc_id": "d5"}, include=[])["ids"][0]
    store.collection.delete(ids=[gone])
    calls.clear()
    got = [(h.sentence.doc_id, h.sentence.index) for h in store.nearest(vec, 6, where=where)]
    assert [c.get("ids") is not None for c in calls] == [True, False] and calls[1]["where"] == where
    with general_path(monkeypatch):
        assert got == [(h.sentence.doc_id, h.sentence.index) for h in store.nearest(vec, 6, where=where)]


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
