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

The visibility rule (:func:`is_visible`): a reader shows a sentence when its document has no
manifest record (written by another tool), or the record is ``complete`` and names the
sentence's ``doc_version`` (records written before versions existed: the same
``doc_hash``). A record left ``dirty`` by an interruption is finished by the next write of
that document or by :meth:`Manifest.clean`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from landmark_rag.store.client import Collections, merge_metadata, store_errors
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
        user_md = flat_metadata(metadata)
        version = uuid.uuid4().hex[:12]
        with store_errors(f"writing document {doc_id!r}"):
            previous = self._announce(doc_id, doc_hash, n_sentences, user_md, version)
            write(version)
            self._commit(doc_id, doc_hash, n_sentences, user_md, version, text, previous)
            self._clean(doc_id)
        return version

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
        return len(stale)

    def _announce(
        self, doc_id: str, doc_hash: str, n: int, user_md: dict[str, Any], version: str
    ) -> dict[str, Any] | None:
        """Step 1: flag the record dirty, keeping a complete previous version visible."""
        if self._io.manifest is None:
            return None
        previous = self.records([doc_id]).get(doc_id)
        if previous is None:
            previous = self._adopt(doc_id)
        if is_complete(previous):
            self._io.manifest.update(ids=[doc_id], metadatas=[{DIRTY: True}])
        else:
            md = {**user_md, DOC_HASH: doc_hash, STATE: WRITING, N_SENTENCES: n, VERSION: version, DIRTY: True}
            self._io.manifest.upsert(ids=[doc_id], embeddings=[[0.0]], metadatas=[md], documents=[""])
        return previous

    def _adopt(self, doc_id: str) -> dict[str, Any] | None:
        """A manifest record for sentences written without one (another tool, an older version).

        They count as the document's complete previous version, so they stay visible while
        the new version is written (a ``writing`` record would hide them).
        """
        manifest = self._io.manifest
        if manifest is None:  # the caller checks first: a store without a manifest has no records to adopt
            raise RuntimeError("adopting sentences into the manifest needs a store with a manifest")
        got = self._io.collection.get(where={DOC_ID: doc_id}, include=["metadatas"])
        if not got["ids"]:
            return None
        md = dict(got["metadatas"][0] or {})
        record = {DOC_HASH: str(md.get(DOC_HASH, "")), STATE: COMPLETE, N_SENTENCES: len(got["ids"]), DIRTY: True}
        manifest.upsert(ids=[doc_id], embeddings=[[0.0]], metadatas=[record], documents=[""])
        return record

    def _commit(
        self, doc_id: str, doc_hash: str, n: int, user_md: dict[str, Any], version: str, text: str | None,
        previous: dict[str, Any] | None,
    ) -> None:
        """Step 3: one upsert makes the new version the visible one.

        Chroma merges metadata on upsert, so keys of the previous record that the new one
        lacks are removed in the same call (a ``None`` value deletes a key).
        """
        if self._io.manifest is None:
            return
        md: dict[str, Any] = {**user_md, DOC_HASH: doc_hash, STATE: COMPLETE, N_SENTENCES: n, VERSION: version,
                              DIRTY: True}
        for key in previous or {}:
            md.setdefault(key, None)
        self._io.manifest.upsert(ids=[doc_id], embeddings=[[0.0]], metadatas=[md], documents=[text or ""])
        self._bump()

    def _bump(self) -> None:
        """Move :meth:`generation` on: after a commit (step 3) and after a delete."""
        merge_metadata(self._io.manifest, {GENERATION_KEY: uuid.uuid4().hex})


__all__ = ["Manifest", "is_complete", "is_current", "is_visible", "record_metadata", "version_key"]
