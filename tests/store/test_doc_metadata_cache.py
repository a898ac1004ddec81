"""The store's table of per-document metadata kept beside a local store
(``store/doc_metadata_cache.py``): a new store object or process starts from the file and
reads only the documents written since, and a file that does not match the store is never
trusted.

Real Chroma stores, random unit vectors. What a table reads from the sentences is counted by
wrapping ``doc_metadata._read`` (every document (re)read goes through it once); what it
decides is compared with Chroma's own filter (``general_path``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from landmark_rag.store import ChromaSentenceStore, doc_metadata
from landmark_rag.store.doc_metadata_cache import DOC_TABLE_DIR, FORMAT, CachedTable, DocEntry, DocTableCache
from landmark_rag.store.schema import sentence_metadata
from tests.random_vectors import encode
from tests.retrieve.test_filtered_search import IDENTITY, TEXTS, _documents, filtered_store, general_path, query_spy
from tests.store.test_doc_metadata import FILTERS, _check, _filtered_queries, _vectors

REPO = Path(__file__).resolve().parents[2]


def _open(db: Path) -> ChromaSentenceStore:
    """Another store object on the same folder, with a table of its own (as a new process has)."""
    return ChromaSentenceStore.open(db, "unit", create=False)


def _file(db: Path) -> Path:
    return db / DOC_TABLE_DIR / "unit.json"


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    filtered_store(tmp_path / "db")
    return tmp_path / "db"


@contextmanager
def reads_counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The documents any table reads from the sentences while inside."""
    read: list[str] = []
    real = doc_metadata._read
    with monkeypatch.context() as m:
        m.setattr(doc_metadata, "_read", lambda batch, *a: (read.extend(batch), real(batch, *a))[1])
        yield read


def _pets(store: ChromaSentenceStore) -> set[str]:
    return {h.sentence.doc_id for h in store.nearest(_vectors()[0], 40, where={"topic": "pets"})}


def _agree(store: ChromaSentenceStore, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Nearest hits of every filter, asserted equal to what Chroma's filter returns."""
    def run() -> list[Any]:
        return [[(h.sentence.doc_id, h.sentence.index, round(h.score, 5)) for h in store.nearest(vec, 40, where=w)]
                for vec in _vectors(2) for w in FILTERS]

    fast = run()
    with general_path(monkeypatch):
        assert run() == fast
    return fast


def test_the_table_is_kept_beside_the_store_and_a_new_store_object_reads_no_sentences(db, monkeypatch):
    first = _open(db)
    assert not _file(db).exists()  # nothing until a filtered search needs the table
    with reads_counted(monkeypatch) as read:
        assert _pets(first) == {"d0", "d3", "d4", "d7"}
    assert sorted(read) == [f"d{i}" for i in range(8)] and _file(db).is_file()
    saved = _file(db).stat().st_mtime_ns
    second = _open(db)
    with reads_counted(monkeypatch) as read, query_spy(monkeypatch) as calls:
        assert _pets(second) == {"d0", "d3", "d4", "d7"}
    # decided from the file: no sentence read, no vector search filtered by Chroma
    assert read == [] and _filtered_queries(calls) == []
    assert _file(db).stat().st_mtime_ns == saved  # same generation: not written again
    with reads_counted(monkeypatch) as read:
        assert _agree(second, monkeypatch) == _agree(first, monkeypatch)
    assert read == []


def test_a_new_process_starts_from_the_file_and_reads_only_what_changed(db, monkeypatch):
    vec = _vectors()[0]
    child = f"""
import json, sys
import numpy as np
from landmark_rag.store import ChromaSentenceStore, doc_metadata
read, real = [], doc_metadata._read
doc_metadata._read = lambda batch, *a: (read.extend(batch), real(batch, *a))[1]
store = ChromaSentenceStore.open(sys.argv[1], "unit", create=False)
hits = store.nearest(np.asarray({vec.tolist()!r}, dtype=np.float32), 40, where={{"topic": "pets"}})
print(json.dumps({{"read": read, "hits": [[h.sentence.doc_id, h.sentence.index, round(h.score, 5)] for h in hits]}}))
"""

    def in_a_process() -> dict[str, Any]:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
        done = subprocess.run([sys.executable, "-c", child, str(db)], capture_output=True, text=True, env=env,
                              cwd=REPO, timeout=300, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])

    def here() -> list[list[Any]]:
        store = _open(db)
        return [[h.sentence.doc_id, h.sentence.index, round(h.score, 5)]
                for h in store.nearest(vec, 40, where={"topic": "pets"})]

    _pets(_open(db))  # this process builds the table and keeps it
    got = in_a_process()
    assert got["read"] == [] and got["hits"] == here() and {h[0] for h in got["hits"]} == {"d0", "d3", "d4", "d7"}
    # another store object writes: a new document's metadata, a delete, an add
    writer = _open(db)
    writer.add_document(encode(TEXTS[3], "d3", seed=3), metadata={"topic": "space", "year": 2021})
    writer.delete_document("d4")
    writer.add_document(encode(TEXTS[0], "d9", seed=9), metadata={"topic": "pets", "year": 2020})
    got = in_a_process()
    assert sorted(got["read"]) == ["d3", "d9"]  # the rest kept from the file
    with general_path(monkeypatch):
        assert got["hits"] == here()  # what Chroma's filter returns
    assert {h[0] for h in got["hits"]} == {"d0", "d7", "d9"}
    assert in_a_process()["read"] == []  # and that process kept the table at the new generation


def test_a_write_by_another_store_object_is_read_from_the_store_not_the_file(db, monkeypatch):
    _pets(_open(db))
    writer = _open(db)
    writer.add_document(encode(TEXTS[3], "d3", seed=3), metadata={"topic": "space", "year": 2021})
    writer.delete_document("d4")
    reader = _open(db)
    with reads_counted(monkeypatch) as read:
        assert _pets(reader) == {"d0", "d7"}
    assert read == ["d3"]
    _check(reader, monkeypatch)
    # the file moved on with it: a store object after the write reads nothing
    with reads_counted(monkeypatch) as read:
        assert _pets(_open(db)) == {"d0", "d7"}
    assert read == []


def _rewrite(path: Path, change: Any) -> None:
    meta = json.loads(path.read_text())
    change(meta)
    path.write_text(json.dumps(meta))


def _old_format(meta: dict[str, Any]) -> None:
    meta["signature"]["format"] = FORMAT - 1


def _other_collection(meta: dict[str, Any]) -> None:
    meta["signature"]["collection"] = "00000000-0000-0000-0000-000000000000"


def _bad_entry(meta: dict[str, Any]) -> None:
    meta["docs"][2][3] = "four"  # a count that is not one


def _no_generation(meta: dict[str, Any]) -> None:
    del meta["generation"]


@pytest.mark.parametrize("damage", [
    lambda p: p.write_text('{"signature": '),  # torn
    lambda p: p.write_bytes(b"\x00\xff garbage"),
    lambda p: p.write_text("[]"),
    lambda p: _rewrite(p, _old_format),
    lambda p: _rewrite(p, _other_collection),
    lambda p: _rewrite(p, _bad_entry),
    lambda p: _rewrite(p, _no_generation),
], ids=["torn", "garbage", "not-a-table", "old-format", "other-collection", "bad-entry", "no-generation"])
def test_a_file_that_is_not_this_stores_table_is_rebuilt(db, monkeypatch, damage):
    _pets(_open(db))
    damage(_file(db))
    store = _open(db)
    with reads_counted(monkeypatch) as read:
        assert _pets(store) == {"d0", "d3", "d4", "d7"}
    assert sorted(read) == [f"d{i}" for i in range(8)]  # every document, from the sentences
    _agree(store, monkeypatch)
    with reads_counted(monkeypatch) as read:  # and written again, whole
        _pets(_open(db))
    assert read == []


def test_an_entry_read_under_another_version_is_read_again(db, monkeypatch):
    _pets(_open(db))

    def stale(meta: dict[str, Any]) -> None:
        # d1 ("space") recorded as "pets" under a version its record does not name (as a file
        # written before a re-ingest would hold it): the version, not the generation, decides
        row = next(r for r in meta["docs"] if r[0] == "d1")
        row[1], row[4]["topic"] = "some-older-version", "pets"

    _rewrite(_file(db), stale)
    store = _open(db)
    with reads_counted(monkeypatch) as read:
        assert _pets(store) == {"d0", "d3", "d4", "d7"}
    assert read == ["d1"]
    _agree(store, monkeypatch)


def test_sentences_written_behind_the_store_are_counted_again_whatever_the_file_says(db, monkeypatch):
    _pets(_open(db))
    raw = _open(db)
    foreign = encode("Cats chase mice. Mice hide well.", "x", seed=5)
    raw.collection.add(  # another tool: no record, no generation moved, the file unchanged
        ids=[f"x:{s.index}" for s in foreign.sentences], embeddings=foreign.embeddings,
        metadatas=[sentence_metadata(s, None, {"topic": "pets"}) for s in foreign.sentences],
        documents=[s.text for s in foreign.sentences],
    )
    store = _open(db)
    with query_spy(monkeypatch) as calls:
        pets = _pets(store)
    assert _filtered_queries(calls) == [{"topic": "pets"}] and pets == {"d0", "d3", "d4", "d7", "x"}
    _agree(store, monkeypatch)


def test_a_folder_that_cannot_be_written_keeps_the_table_in_memory(db, monkeypatch):
    (db / DOC_TABLE_DIR).write_text("a file where the folder would go")  # mkdir fails, even for root
    store = _open(db)
    with reads_counted(monkeypatch) as read:
        assert _pets(store) == {"d0", "d3", "d4", "d7"}
        assert _pets(store) == {"d0", "d3", "d4", "d7"}
    assert len(read) == 8  # built once, held in memory
    _agree(store, monkeypatch)
    assert (db / DOC_TABLE_DIR).read_text() == "a file where the folder would go"
    assert not [p for p in db.iterdir() if p.name.startswith(".")]  # nothing left half-written


def test_a_store_in_memory_or_on_a_server_keeps_no_file(tmp_path, monkeypatch):
    store = ChromaSentenceStore.open(":memory:", f"mem-{uuid.uuid4().hex[:8]}", identity=IDENTITY)
    _documents(store, 4)
    monkeypatch.chdir(tmp_path)
    assert _pets(store) == {"d0", "d3"}
    assert store._documents_table()._cache.path is None and list(tmp_path.iterdir()) == []


def test_a_save_replaces_the_file_whole(tmp_path):
    cache = DocTableCache(tmp_path / DOC_TABLE_DIR / "unit.json", {"format": FORMAT, "collection": "c", "manifest": "m"})
    table = CachedTable("g1", {"a": DocEntry("v1", "v1", 3, {"topic": "pets", "year": 2020.0, "flag": True}, ["page"])})
    assert cache.load() is None and cache.save(table)
    assert cache.load() == table  # types kept: 2020.0 stays a float, True a boolean
    loaded = cache.load()
    assert loaded is not None and type(loaded.docs["a"].shared["year"]) is float
    assert type(loaded.docs["a"].shared["flag"]) is bool
    newer = CachedTable("g2", {})
    assert cache.save(newer) and cache.load() == newer
    assert sorted(p.name for p in (tmp_path / DOC_TABLE_DIR).iterdir()) == ["unit.json"]  # no staging left
    other = DocTableCache(cache.path, {**cache.signature, "collection": "c2"})
    assert other.load() is None
