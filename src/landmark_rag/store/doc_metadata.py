"""Which documents a metadata filter selects, told from a table of per-document metadata.

A vector search filtered on user metadata (``where={"source": "wiki"}``) handed to Chroma
costs a scan of the collection's metadata (about 20 ms at 60,000 sentences, 300 ms for a
``$in`` of 50 values, against 1 ms for the unfiltered search); the same search over the ids
of the documents the filter selects costs 1-8 ms (``store/reads.py``). This table says which
documents those are without Chroma: for each visible document, the metadata all its visible
sentences share and the keys that differ between them (``lexical_filter.shared_metadata``), so
a filter on shared keys is decided per document (``lexical_filter.RowFilter``; what it cannot
decide, such as ``$gt`` or ``sentence_index``, is left to Chroma whole).

It is derived from the sentences themselves, never from the manifest records' copy of the
user's metadata: records written by a framework (``write_document``), adopted from another
tool or written before versions existed need not carry what their sentences carry, and a
filter is about the sentences. So any store works as it is, with no re-ingest: the first
filtered search reads every visible sentence's metadata once (about 5 s at 60,000 sentences
on a 2-core machine), and each later one re-reads only the documents whose manifest version
changed, when the manifest's generation moved (about a millisecond to check). A local store
keeps it beside itself between processes (``store/doc_metadata_cache.py``): a new process
starts from that copy, keeping each entry only while its document's record still names the
version it was read under, and reads the others (every one, when there is no copy).

The table declines (every filter goes to Chroma, as before) where it could be wrong: a store
without a manifest or a generation, one holding sentences no manifest record accounts for
(written by another tool), and documents whose sentence ids do not follow from their record.
Like the lexical index, it sees writes through the store protocol (which move the
generation); sentences another tool adds behind it are noticed at the next move.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from landmark_rag.store.client import Collections, store_errors
from landmark_rag.store.doc_metadata_cache import CachedTable, DocEntry, DocTableCache
from landmark_rag.store.lexical_filter import RowFilter, shared_metadata
from landmark_rag.store.manifest import Manifest, is_complete, is_current, version_key
from landmark_rag.store.schema import DIRTY, DOC_ID, INDEX, N_SENTENCES, VERSION, sentence_id

#: Documents read per Chroma call while (re)building the table.
_BATCH = 64


@dataclass
class _State:
    """The table at one generation of the manifest (``usable``: no sentences outside it)."""

    generation: str
    docs: dict[str, DocEntry]  # never changed once made: its order is the filter's row order
    usable: bool
    _filter: RowFilter | None = None

    def filter(self) -> RowFilter:
        if self._filter is None:
            docs = list(self.docs.values())
            self._filter = RowFilter([d.shared for d in docs], [d.varying for d in docs], [d.n for d in docs])
        return self._filter


class DocumentTable:
    """Per-document metadata of a store's visible sentences (see the module docstring)."""

    def __init__(self, collections: Collections, manifest: Manifest) -> None:
        self._io = collections
        self._manifest = manifest
        self._state: _State | None = None
        self._lock = threading.Lock()
        self._cache = DocTableCache.beside(collections.collection, collections.manifest, collections.local_path)
        self._saved: CachedTable | None = None  # what the cache file holds, as far as this object knows

    def sentence_ids(self, where: Mapping[str, Any], *, most: int) -> list[str] | None:
        """The ids of the visible sentences passing ``where``, when the table decides it whole
        and they are at most ``most``; ``None`` otherwise (the caller asks Chroma's filter).

        ``[]`` never comes back: no document passing is left to Chroma to say, as it would
        also see a document written since the table's generation.
        """
        if not _valid(where):
            return None  # Chroma's own check says what is wrong with it, as it always has
        state = self._current()
        if state is None or not state.usable:
            return None
        mask = state.filter().documents(where)
        if mask is None:
            return None
        chosen = [(d, doc) for (d, doc), ok in zip(state.docs.items(), mask.tolist(), strict=True) if ok]
        if not chosen or sum(doc.n for _, doc in chosen) > most or any(doc.version is None for _, doc in chosen):
            return None
        return [sentence_id(d, i, doc.version) for d, doc in chosen for i in range(doc.n)]

    def _current(self) -> _State | None:
        """The table at the manifest's current generation, synced when it moved."""
        self._io.fresh()
        generation = self._manifest.generation()
        if generation is None:
            return None  # no manifest, or none that ever moved: no cheap way to tell a change
        state = self._state
        if state is not None and state.generation == generation:
            return state
        with self._lock:
            state = self._state
            if state is None or state.generation != generation:
                if state is None:
                    # a table another process (or store object) derived: the start to sync from
                    self._saved = self._cache.load()
                    if self._saved is not None:
                        state = _State(self._saved.generation, self._saved.docs, usable=False)
                state = self._sync(generation, state)
                self._state = state
                self._save(state)
            return state

    def _save(self, state: _State) -> None:
        """Keep ``state`` for later processes, unless the file already holds it."""
        saved = self._saved
        if saved is not None and saved.generation == state.generation and saved.docs == state.docs:
            return
        table = CachedTable(state.generation, dict(state.docs))
        if self._cache.save(table):
            self._saved = table

    def _sync(self, generation: str, old: _State | None) -> _State:
        """Re-read the documents whose record changed since ``old`` (all, the first time)."""
        records = self._manifest.documents(include_incomplete=True)
        complete = {d: md for d, md in records.items() if is_complete(md)}
        before = old.docs if old is not None else {}
        docs = {d: doc for d, doc in before.items() if d in complete and doc.key == version_key(complete[d])}
        todo = [d for d in complete if d not in docs]
        for i in range(0, len(todo), _BATCH):
            batch = todo[i : i + _BATCH]
            docs.update(_read(batch, complete, self._stored(batch, ["metadatas"])))
        return _State(generation, docs, self._accounted(records, complete))

    def _accounted(self, records: Mapping[str, dict[str, Any]], complete: Mapping[str, dict[str, Any]]) -> bool:
        """Whether every stored sentence belongs to a document with a record: the store counts
        what clean complete records say they hold, plus what the others hold as stored (a
        document being written, or one left dirty). Counted first, so a write landing in
        between can only make the store look short of its records, never leave foreign
        sentences unnoticed."""
        with store_errors("counting sentences"):
            stored = int(self._io.collection.count())
        clean = {d: md for d, md in complete.items() if not md.get(DIRTY) and isinstance(md.get(N_SENTENCES), int)}
        expected = sum(int(md[N_SENTENCES]) for md in clean.values())
        others = [d for d in records if d not in clean]
        for i in range(0, len(others), _BATCH):
            expected += len(self._stored(others[i : i + _BATCH], []))
        return stored == expected

    def _stored(self, doc_ids: Sequence[str], include: list[str]) -> list[tuple[str, dict[str, Any]]]:
        """Every stored record of ``doc_ids`` (any version) as ``(id, metadata)``."""
        where = {DOC_ID: doc_ids[0]} if len(doc_ids) == 1 else {DOC_ID: {"$in": list(doc_ids)}}
        with store_errors("reading sentence metadata"):
            got = self._io.collection.get(where=where, include=include)
        mds = got.get("metadatas") or [None] * len(got["ids"])
        return [(rid, dict(md or {})) for rid, md in zip(got["ids"], mds, strict=True)]


def _read(
    batch: Sequence[str], records: Mapping[str, dict[str, Any]], rows: Sequence[tuple[str, dict[str, Any]]]
) -> dict[str, DocEntry]:
    """The table's entries for ``batch`` from the stored ``(id, metadata)`` of its sentences:
    only the version readers see (``manifest.is_current``), as the lexical index reads them."""
    per: dict[str, list[tuple[str, dict[str, Any]]]] = {d: [] for d in batch}
    for rid, md in rows:
        d = str(md.get(DOC_ID))
        if d in per and is_current(md, records[d], records[d].get(VERSION)):
            per[d].append((rid, md))
    out: dict[str, DocEntry] = {}
    for d, found in per.items():
        record = records[d]
        version = record.get(VERSION)
        # the ids a search names must be exactly the visible sentences' ids
        ids = sorted(rid for rid, _ in found)
        derived = sorted(sentence_id(d, i, str(version)) for i in range(len(found))) if version else None
        addressable = derived is not None and ids == derived and record.get(N_SENTENCES) == len(found)
        found.sort(key=lambda r: int(r[1].get(INDEX, 0)))
        shared, varying = shared_metadata([md for _, md in found])
        out[d] = DocEntry(version_key(record), str(version) if addressable else None, len(found), shared, varying)
    return out


def _valid(where: Mapping[str, Any]) -> bool:
    """Whether Chroma accepts ``where``: the table decides only filters Chroma would run (one
    it refuses, such as a one-part ``$and`` the table could read, must fail as before)."""
    try:
        from chromadb.api.types import validate_where

        validate_where(dict(where))
    except Exception:  # noqa: BLE001 - refused, or a Chroma without this check: Chroma decides
        return False
    return True


__all__ = ["DocumentTable"]
