"""The manifest: how a document is written so that no reader sees it half-written, and what readers see.

Next to the sentence collection ``NAME``, a store keeps the collection ``NAME__documents``
with one record per document (content hash, state, number of sentences, the committed
version, the full text, the user's metadata). Writing a document follows a protocol under
which a reader never sees a half-written document, and a replaced document's previous
version stays visible until the new one is complete (an interruption or a store failure at
any point leaves the previous version, or for a new document nothing, visible):

1. *announce*: the manifest record gets ``dirty=True`` (a new document gets a record with
   ``state="writing"``, which hides it);
2. *write*: the new sentences are written under new ids ``doc_id:index@VERSION`` with
   ``doc_version=VERSION`` in their metadata (VERSION is fresh for every write); readers
   ignore them because the manifest still names the previous version;
3. *commit*: one upsert of the manifest record: ``state="complete"``, the new
   ``doc_hash``, ``doc_version=VERSION``, ``n_sentences`` (still ``dirty``); from here on
   readers see exactly the new version;
4. *clean*: sentences of the document with any other version are deleted, then ``dirty``
   is removed.

A group of documents (:meth:`Manifest.write_many`, which ``ChromaSentenceStore.add_documents``
and so the write path of ``ingest/write.py`` use) runs the same four steps for all of them at
once: each step is one or two Chroma calls covering the whole group (one read of the records,
one announce, one sentence write in the client's batches, one commit, one move of the
generation, one clean-up), so its cost no longer grows with the number of documents. Every
document still has its own record and its own fresh VERSION, and each record changes in one
call, so every promise above holds per document: a reader sees each document of the group in
its previous or its new complete version, and an interruption before the commit leaves every
previous version visible (after it, every new one).

The visibility rule (:func:`is_visible`): a reader shows a sentence when its document has no
manifest record (written by another tool), or the record is ``complete`` and names the
sentence's ``doc_version`` (records written before versions existed: the same
``doc_hash``). A record left ``dirty`` by an interruption is finished by the next write of
that document or by :meth:`Manifest.clean`.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from landmark_rag.store.client import Collections, StoreError, merge_metadata, store_errors
from landmark_rag.store.schema import (
    COMPLETE,
    DIRTY,
    DOC_HASH,
    DOC_ID,
    GENERATION_KEY,
    MANIFEST_KEYS,
    N_SENTENCES,
    STATE,
    VERSION,
    WRITING,
    flat_metadata,
)
from landmark_rag.types import Hit

logger = logging.getLogger(__name__)


def is_visible(metadata: Mapping[str, Any], record: Mapping[str, Any] | None) -> bool:
    """Whether a stored sentence is part of what readers see (see the module docstring)."""
    if record is None:
        return True  # written by another tool without a manifest: trust it
    if record.get(STATE) != COMPLETE:
        return False
    return is_current(metadata, record, record.get(VERSION))


def is_current(metadata: Mapping[str, Any], record: Mapping[str, Any], committed: Any) -> bool:
    """Whether a sentence belongs to the committed version ``committed`` of its document."""
    if committed:
        return metadata.get(VERSION) == committed
    if record.get(STATE) != COMPLETE:
        return False  # a document that never completed has no version to keep
    # a record written before versions existed: its sentences carry no version, same hash
    return VERSION not in metadata and metadata.get(DOC_HASH, record.get(DOC_HASH)) == record.get(DOC_HASH)


def version_key(metadata: Mapping[str, Any]) -> str:
    """Which write a manifest record names, or a sentence comes from: its ``doc_version``
    (records written before versions existed: the ``doc_hash``). A sentence is of the visible
    version of a complete document when the two keys are equal."""
    return str(metadata.get(VERSION) or metadata.get(DOC_HASH, ""))


def is_complete(record: Mapping[str, Any] | None) -> bool:
    """Whether a manifest record is of a completely stored document."""
    return record is not None and record.get(STATE) == COMPLETE


def record_metadata(record: Mapping[str, Any]) -> dict[str, Any]:
    """The user's metadata of a manifest record (the protocol's own keys removed)."""
    return {k: v for k, v in record.items() if k not in MANIFEST_KEYS}


def new_version() -> str:
    """A fresh VERSION for one write of one document (step 2): never reused, so the sentences
    of a write that was interrupted can never be taken for those of a later one."""
    return uuid.uuid4().hex[:12]


@dataclass(frozen=True)
class DocumentWrite:
    """One document of a write: what its manifest record says once it is committed.

    ``version`` names the sentences the caller's write stores for it (:func:`new_version`);
    ``metadata`` is the user's metadata, flat (``schema.flat_metadata``); ``text`` is stored
    with the record (``None``: not stored).
    """

    doc_id: str
    version: str
    n_sentences: int
    doc_hash: str
    metadata: dict[str, Any] = field(default_factory=dict)
    text: str | None = None


class GroupWriteError(StoreError):
    """The store failed during a write of documents (a group, or one) after ``written`` of
    them (the first ones, in the order given) were committed.

    Those documents are stored in their new version (a reader sees it), so a caller that
    counts what was written counts them; every other one keeps its previous version.
    """

    def __init__(self, message: str, written: int) -> None:
        super().__init__(message)
        self.written = written

    def __reduce__(self) -> tuple[type[GroupWriteError], tuple[str, int]]:
        # a Ray worker's failure travels pickled: the count must come along
        return type(self), (str(self), self.written)


def written_before(exc: BaseException) -> int:
    """How many documents of a write (the first ones) were committed before ``exc`` stopped it."""
    return exc.written if isinstance(exc, GroupWriteError) else 0


class Manifest:
    """The manifest collection of a store: the write protocol and the reads that respect it.

    A store without a manifest (a collection another tool wrote) writes without the protocol
    and shows every sentence.
    """

    def __init__(self, collections: Collections) -> None:
        self._io = collections

    @property
    def present(self) -> bool:
        return self._io.manifest is not None

    # ------------------------------------------------------------------ reads
    def records(self, doc_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Manifest records of ``doc_ids`` (absent ones left out), any state."""
        ids = sorted(set(doc_ids))
        if self._io.manifest is None or not ids:
            return {}
        with store_errors("reading the manifest"):
            got = self._io.manifest.get(ids=ids, include=["metadatas"])
        return {i: dict(md or {}) for i, md in zip(got["ids"], got["metadatas"], strict=True)}

    def documents(self, *, include_incomplete: bool = False) -> dict[str, dict[str, Any]]:
        """Every record by document id (only complete ones unless ``include_incomplete``)."""
        if self._io.manifest is None:
            return {}
        with store_errors("reading the manifest"):
            got = self._io.manifest.get(include=["metadatas"])
        records = {doc_id: dict(md or {}) for doc_id, md in zip(got["ids"], got["metadatas"], strict=True)}
        return {d: md for d, md in records.items() if include_incomplete or is_complete(md)}

    def text(self, doc_id: str) -> str | None:
        """The full text stored with a document, if it was stored."""
        if self._io.manifest is None:
            return None
        with store_errors("reading the manifest"):
            got = self._io.manifest.get(ids=[doc_id], include=["documents"])
        return (got["documents"][0] or None) if got["ids"] else None

    def count(self) -> int | None:
        """Documents in the manifest, any state (``None``: the store has no manifest)."""
        if self._io.manifest is None:
            return None
        with store_errors("counting documents"):
            return int(self._io.manifest.count())

    def generation(self) -> str | None:
        """A token that moves whenever a document is completed or deleted (``None``: never).

        Read from the server each time, never from a cached handle: other processes move it.
        """
        manifest = self._io.manifest
        if manifest is None:
            return None
        try:
            md = manifest._client.get_collection(manifest.name, tenant=manifest.tenant,
                                                 database=manifest.database).metadata
        except Exception:  # noqa: BLE001 - an old server or a wrapper without these attributes
            md = manifest.metadata
        value = (md or {}).get(GENERATION_KEY)
        return None if value is None else str(value)

    def visible(self, hits: list[Hit]) -> list[Hit]:
        """The hits whose document is completely stored in the version they come from."""
        if self._io.manifest is None:
            return hits
        records = self.records(h.sentence.doc_id for h in hits if h.sentence.doc_id)
        return [h for h in hits if is_visible(h.metadata, records.get(str(h.sentence.doc_id)))]

    # ------------------------------------------------------------------ the write protocol
    def write(
        self, doc_id: str, write: Callable[[str], None], *, n_sentences: int, doc_hash: str,
        metadata: dict[str, Any] | None = None, text: str | None = None,
    ) -> str:
        """Run the protocol (module docstring) around ``write(version)``; returns the version."""
        version = new_version()
        doc = DocumentWrite(doc_id, version, n_sentences, doc_hash, flat_metadata(metadata), text)
        self.write_many([doc], lambda: write(version))
        return version

    def write_many(
        self, docs: Sequence[DocumentWrite], write: Callable[[], None], on_commit: Callable[[], None] | None = None
    ) -> None:
        """Run the protocol for a group of documents at once around ``write()``, which stores
        the sentences of every one of them (each under its ``DocumentWrite.version``).

        Each step takes one to three Chroma calls covering the whole group, whatever its size
        (reads of the records and of sentences without one; announce: an update of existing
        records, an upsert of the others; commit; clean: a read, a delete, an update); the
        caller keeps the group within the client's batch size (``Collections.batch_size``) and
        gives each ``doc_id`` once (two writes of one document in one group would share its
        record). ``on_commit()`` is called right after the commit, when readers see every new
        version: whatever stops the write after it (a store failure, Ctrl-C), the group is
        written. A store failure raises :class:`StoreError`; after the commit,
        :class:`GroupWriteError` (every document of the group was written).
        """
        ids = [d.doc_id for d in docs]
        if len(set(ids)) != len(ids):
            raise ValueError(f"a group names a document more than once: {sorted({i for i in ids if ids.count(i) > 1})}")
        if not docs:
            return
        committed = False
        try:
            with store_errors(f"writing {_named(ids)}"):
                previous = self._announce(docs)
                write()
                self._commit(docs, previous)
                committed = True
                if on_commit is not None:
                    on_commit()
                self._bump()
                self._clean_written(docs)
        except StoreError as exc:
            if committed:  # the new versions are what readers see: the caller counts them written
                raise GroupWriteError(str(exc), len(docs)) from exc
            raise

    def delete(self, doc_id: str) -> int:
        """Remove a document, its record first (a reader never sees it partly deleted)."""
        with store_errors(f"deleting document {doc_id!r}"):
            if self._io.manifest is not None:
                self._io.manifest.upsert(ids=[doc_id], embeddings=[[0.0]], metadatas=[{STATE: WRITING, DIRTY: True}],
                                         documents=[""])
            ids = list(self._io.collection.get(where={DOC_ID: doc_id}, include=[])["ids"])
            self._io.delete_sentences(ids)
            if self._io.manifest is not None:
                self._io.manifest.delete(ids=[doc_id])
                self._bump()
        return len(ids)

    def clean(self, doc_id: str) -> int:
        """Step 4 alone: delete the sentences of ``doc_id`` of no committed version; returns how many."""
        return self._clean(doc_id)

    def _clean(self, doc_id: str) -> int:
        if self._io.manifest is None:
            return 0
        with store_errors(f"cleaning document {doc_id!r}"):
            rec = self.records([doc_id]).get(doc_id)
            if rec is None:
                return 0
            committed = rec.get(VERSION) if is_complete(rec) else None
            got = self._io.collection.get(where={DOC_ID: doc_id}, include=["metadatas"])
            stale = [i for i, md in zip(got["ids"], got["metadatas"], strict=True)
                     if not is_current(md or {}, rec, committed)]
            self._io.delete_sentences(stale)
            if rec.get(DIRTY):
                self._io.manifest.update(ids=[doc_id], metadatas=[{DIRTY: None}])
                # the write that left it dirty may have stopped between its commit and its move
                # of the generation: readers that cache by generation must see the change
                self._bump()
        return len(stale)

    def _announce(self, docs: Sequence[DocumentWrite]) -> dict[str, dict[str, Any] | None]:
        """Step 1 for a group: flag every record dirty, keeping complete previous versions visible.

        Returns each document's previous record (``None``: a new document). Records that
        exist and are complete only get ``dirty`` (one update); the others (new documents,
        interrupted first writes, sentences without a record) are written whole (one upsert).
        """
        if self._io.manifest is None:
            return {}
        ids = [d.doc_id for d in docs]
        found = self.records(ids)
        adopted = self._adopt([i for i in ids if i not in found])
        previous = {i: found.get(i, adopted.get(i)) for i in ids}
        flag = [i for i in ids if is_complete(found.get(i))]
        if flag:
            self._io.manifest.update(ids=flag, metadatas=[{DIRTY: True} for _ in flag])
        fresh: dict[str, dict[str, Any]] = {}
        for d in docs:
            if d.doc_id in adopted:
                fresh[d.doc_id] = adopted[d.doc_id]
            elif not is_complete(previous[d.doc_id]):
                fresh[d.doc_id] = {**d.metadata, DOC_HASH: d.doc_hash, STATE: WRITING, N_SENTENCES: d.n_sentences,
                                   VERSION: d.version, DIRTY: True}
        if fresh:
            self._io.manifest.upsert(ids=list(fresh), embeddings=[[0.0] for _ in fresh],
                                     metadatas=list(fresh.values()), documents=["" for _ in fresh])
        return previous

    def _adopt(self, doc_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Manifest records for sentences written without one (another tool, an older version,
        a store whose record was lost), read in one call for every id of ``doc_ids`` that has
        sentences; not written here (:meth:`_announce` writes them with the group's other new
        records).

        They count as the document's complete previous version, so they stay visible while
        the new version is written and after a write that stops before its commit (a
        ``writing`` record would hide them). The record names what the sentences carry: their
        ``doc_version`` where they have one (sentences this package wrote, whose record is
        gone), else their ``doc_hash``. Sentences of several versions or hashes cannot all be
        named by one record: the largest set is kept visible (:func:`_adopted_as`; with the
        record lost, nothing tells whether it was ever committed) and the others, which the
        rewrite replaces anyway, are hidden, and deleted by the document's next clean or write.
        """
        if self._io.manifest is None:  # the caller checks first: a store without a manifest has no records to adopt
            raise RuntimeError("adopting sentences into the manifest needs a store with a manifest")
        if not doc_ids:
            return {}
        got = self._io.collection.get(where=_of_documents(doc_ids), include=["metadatas"])
        found: dict[str, list[dict[str, Any]]] = {}
        for md in got["metadatas"]:
            found.setdefault(str((md or {}).get(DOC_ID)), []).append(dict(md or {}))
        return {doc_id: _adopted_as(doc_id, found[doc_id]) for doc_id in doc_ids if doc_id in found}

    def _commit(self, docs: Sequence[DocumentWrite], previous: Mapping[str, dict[str, Any] | None]) -> None:
        """Step 3 for a group: one upsert makes each document's new version the visible one
        (the caller then moves the generation, once for the group).

        Chroma merges metadata on upsert, so keys of a previous record that the new one
        lacks are removed in the same call (a ``None`` value deletes a key).
        """
        if self._io.manifest is None:
            return
        metadatas = []
        for d in docs:
            md: dict[str, Any] = {**d.metadata, DOC_HASH: d.doc_hash, STATE: COMPLETE, N_SENTENCES: d.n_sentences,
                                  VERSION: d.version, DIRTY: True}
            for key in previous.get(d.doc_id) or {}:
                md.setdefault(key, None)
            metadatas.append(md)
        self._io.manifest.upsert(ids=[d.doc_id for d in docs], embeddings=[[0.0] for _ in docs],
                                 metadatas=metadatas, documents=[d.text or "" for d in docs])

    def _clean_written(self, docs: Sequence[DocumentWrite]) -> None:
        """Step 4 for a group just committed: one read of the group's sentences, one delete of
        those of any other version, one update removing ``dirty``.

        The committed versions are the ones this write chose, so the records need not be
        read again (:meth:`clean` reads them: it finishes writes it knows nothing of).
        """
        if self._io.manifest is None:
            return
        version = {d.doc_id: d.version for d in docs}
        ids = list(version)
        got = self._io.collection.get(where=_of_documents(ids), include=["metadatas"])
        stale = [i for i, md in zip(got["ids"], got["metadatas"], strict=True)
                 if (md or {}).get(VERSION) != version.get(str((md or {}).get(DOC_ID)))]
        self._io.delete_sentences(stale)
        self._io.manifest.update(ids=ids, metadatas=[{DIRTY: None} for _ in ids])

    def _bump(self) -> None:
        """Move :meth:`generation` on: after a commit (step 3) and after a delete."""
        if self._io.manifest is not None:
            merge_metadata(self._io.manifest, {GENERATION_KEY: uuid.uuid4().hex})


def _adopted_as(doc_id: str, metadatas: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The record adopting one document's sentences (``metadatas``, non-empty): complete,
    dirty, naming the version the most of them carry (for sentences without versions, the
    hash; one without a hash is visible under any), so that exactly those stay what readers
    see (:func:`is_current`)."""
    versions: Counter[Any] = Counter()
    hashes: Counter[str] = Counter()
    loose = 0
    for md in metadatas:
        if VERSION not in md:
            if DOC_HASH in md:
                hashes[str(md[DOC_HASH])] += 1
            else:
                loose += 1
        elif md[VERSION]:  # an empty version reads as none: no record can name it
            versions[md[VERSION]] += 1  # as stored (a record compares it as it is)
    named: list[tuple[int, str, dict[str, Any]]] = [(n, str(v), {VERSION: v}) for v, n in versions.items()]
    named += [(n + loose, h, {DOC_HASH: h}) for h, n in hashes.items()]
    if loose and not hashes:
        named.append((loose, "", {DOC_HASH: ""}))
    if not named:
        logger.warning("document %r has sentences with an empty doc_version and no manifest record; they are "
                       "hidden and go with its next clean or write", doc_id)
        return {DOC_HASH: "", STATE: COMPLETE, N_SENTENCES: 0, DIRTY: True}
    # the largest set; among equals the one sorting first, so that any writer adopts alike
    count, name, record = min(named, key=lambda c: (-c[0], c[1]))
    if count < len(metadatas):
        logger.warning(
            "document %r has sentences of several versions and no manifest record; the %d of %r stay "
            "visible until it is rewritten, the other %d are hidden and go with its next clean or write",
            doc_id, count, name, len(metadatas) - count,
        )
    if VERSION in record:
        first = next(md for md in metadatas if md.get(VERSION) == record[VERSION])
        record[DOC_HASH] = str(first.get(DOC_HASH, ""))
    return {**record, STATE: COMPLETE, N_SENTENCES: count, DIRTY: True}


def _of_documents(doc_ids: Sequence[str]) -> dict[str, Any]:
    """A ``where`` for the sentences of ``doc_ids`` (one id: the plain equality)."""
    return {DOC_ID: doc_ids[0]} if len(doc_ids) == 1 else {DOC_ID: {"$in": list(doc_ids)}}


def _named(doc_ids: Sequence[str]) -> str:
    """What a store failure's message says was being written."""
    if len(doc_ids) == 1:
        return f"document {doc_ids[0]!r}"
    return f"documents {doc_ids[0]!r} to {doc_ids[-1]!r} (a group of {len(doc_ids)})"


__all__ = [
    "DocumentWrite",
    "GroupWriteError",
    "Manifest",
    "is_complete",
    "is_current",
    "is_visible",
    "new_version",
    "record_metadata",
    "version_key",
    "written_before",
]
