"""Sentence vectors in Chroma (step 3 of the pipeline): :class:`ChromaSentenceStore`.

The store is a facade over four jobs, one module each: talking to Chroma and re-opening a
folder another process wrote (``store/client.py``), the manifest's write protocol and the
rule for what readers see (``store/manifest.py``), the model identity
(``store/identity.py``) and the reads every reader goes through (``store/reads.py``:
nearest neighbours, records by id, sentences by document). What lives here is opening a
store, writing documents, and what the manifest says about them; how a document's sentences
are laid out as records for a write is ``store/records.py``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from typing import Any

from landmark_rag.store.client import (
    DEFAULT_COLLECTION,
    Collections,
    StoreError,
    make_client,
    manifest_beside,
    open_collections,
    store_errors,
)
from landmark_rag.store.identity import (
    check_identity,
    collection_identity,
    identity_metadata,
    stamped_models,
)
from landmark_rag.store.manifest import (
    GroupWriteError,
    Manifest,
    is_complete,
    written_before,
)
from landmark_rag.store.reads import SentenceReads
from landmark_rag.store.records import GroupRows, document_rows, write_groups
from landmark_rag.store.schema import DOC_HASH
from landmark_rag.types import EncodedDocument


class ChromaSentenceStore(SentenceReads):
    """Read and write landmark-encoded documents in a Chroma collection.

    ``collection`` holds one record per sentence; ``manifest`` (``None`` for a collection
    written without one) one record per document (``store/manifest.py``).

    Reads (``store/reads.py``), each showing only what readers may see: :meth:`nearest` and
    :meth:`nearest_ids` (vector search, optionally filtered by ``where``), :meth:`read_ids`
    (records by id), :meth:`read_documents` / :meth:`read_document` (sentences by document,
    all or some, with or without vectors), and :meth:`visible_hits` for hits read elsewhere.
    """

    def __init__(self, collection: Any, manifest: Any | None = None) -> None:
        self._io = Collections(collection, manifest)
        self._manifest = Manifest(self._io)

    @property
    def collection(self) -> Any:
        """The Chroma collection of sentence records (re-opened when another process wrote)."""
        return self._io.collection

    @collection.setter
    def collection(self, value: Any) -> None:
        self._io.collection = value

    @property
    def manifest(self) -> Any | None:
        """The Chroma collection of manifest records (``None``: the store has none)."""
        return self._io.manifest

    @property
    def name(self) -> str:
        """The sentence collection's name."""
        return str(self._io.collection.name)

    @property
    def local_path(self) -> str | None:
        """The store's folder (``None`` for a server or an in-memory store)."""
        return self._io.local_path

    @property
    def has_manifest(self) -> bool:
        """Whether documents are written through the manifest (else every sentence is visible)."""
        return self._manifest.present

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(
        cls,
        db: str | os.PathLike[str] | None = None,
        collection_name: str = DEFAULT_COLLECTION,
        *,
        client: Any = None,
        identity: dict[str, Any] | None = None,
        create: bool = True,
    ) -> ChromaSentenceStore:
        """Open (or create) a store.

        ``identity`` (e.g. ``encoder.config.identity()``) is recorded on a new collection and
        checked against an existing one: vectors of different models or landmark set-ups are
        not comparable, so mixing them is refused with :class:`StoreMismatchError`. With
        ``create=False`` a missing collection raises ``LookupError``.
        """
        client = client if client is not None else make_client(db)
        metadata = {"hnsw:space": "cosine", **identity_metadata(identity)}
        store = cls(*open_collections(client, collection_name, create=create, metadata=metadata))
        if identity:
            store.check_identity(identity)
        return store

    @classmethod
    def for_collection(cls, collection: Any, *, create_manifest: bool = False) -> ChromaSentenceStore:
        """A store over a collection someone else opened (e.g. a LlamaIndex ``ChromaVectorStore``'s).

        Its manifest is attached when it exists (so reads honour the write protocol), or
        created when ``create_manifest`` (for a writer).
        """
        return cls(collection, manifest_beside(collection, create=create_manifest))

    # ------------------------------------------------------------------ identity
    def identity(self) -> dict[str, Any]:
        """The model identity of the collection (empty if none).

        Recorded on the collection by landmark-rag's writers; for a collection written through
        LlamaIndex's own ``ChromaVectorStore``, the identity ``LandmarkEmbedding`` stamped on
        the records, read without recording it. A collection whose records carry another
        model's stamp (or two models' stamps) is refused with :class:`StoreMismatchError`.
        """
        self._io.fresh()
        with store_errors("reading the model identity"):
            return collection_identity(self._io.collection)

    def stamped_models(self) -> list[tuple[dict[str, Any], str | None]]:
        """``(identity, source)`` of each distinct model stamped on the records (``store/identity.py``)."""
        self._io.fresh()
        with store_errors("reading the model stamps"):
            return stamped_models(self._io.collection)

    def check_identity(self, identity: dict[str, Any], *, record: bool = True) -> None:
        """Refuse a model set-up other than the collection's; a writer (``record=True``) also
        records ``identity`` on a collection that has none recorded (readers pass ``False``)."""
        self._io.fresh()
        check_identity(self._io.collection, identity, record=record)
        self._io.own_write_done()

    # ------------------------------------------------------------------ writing
    def add_document(
        self,
        encoded: EncodedDocument,
        *,
        metadata: dict[str, Any] | None = None,
        doc_hash: str | None = None,
        store_text: bool = True,
    ) -> int:
        """Insert or replace one document's sentences; returns the number stored.

        Re-adding a ``doc_id`` replaces all its old sentences, so a shrunk or edited
        document leaves nothing stale behind. The previous version stays visible until the
        new one is complete; a failure of the store raises :class:`StoreError`.
        """
        rows = document_rows(encoded, metadata, doc_hash, store_text)

        def write(version: str) -> None:
            self._io.upsert_sentences(rows.ids(version), rows.vectors, rows.metadatas(version), rows.texts)

        self.write_document(
            rows.doc_id, write, n_sentences=len(rows.texts), doc_hash=rows.doc_hash, metadata=rows.metadata,
            text=rows.text,
        )
        return len(rows.texts)

    def add_documents(
        self,
        documents: Sequence[EncodedDocument],
        *,
        metadatas: Sequence[dict[str, Any] | None] | None = None,
        doc_hashes: Sequence[str | None] | None = None,
        store_text: bool = True,
        on_committed: Callable[[int], None] | None = None,
    ) -> list[int]:
        """Insert or replace several documents, the manifest's protocol run once per group
        instead of once per document; returns each document's number of sentences.

        Equal to :meth:`add_document` for each document in turn (``metadatas[i]`` and
        ``doc_hashes[i]`` go with ``documents[i]``), at a cost per group: about eight Chroma
        calls for the whole group, where one document at a time pays about eight calls per
        document. Every document is checked before anything is written, its vectors against
        its sentences and against the other documents' width (a ``ValueError`` names the first
        that fails). Groups keep to the client's batch size, and a ``doc_id`` given twice
        starts a new group at its second write, so the later one wins as in sequential writes.

        Each document is atomic as with :meth:`add_document`: a reader sees its previous or
        its new complete version. A store failure raises :class:`StoreError`; if groups before
        the failing one (or the failing one itself, when it failed after its commit) were
        written, :class:`~landmark_rag.store.manifest.GroupWriteError`, whose ``written`` says
        how many of the first documents are stored in their new version.
        ``on_committed(n)`` is called as each group is committed, ``n`` the number of the first
        documents then stored in their new version: what a caller counts as written when
        something else (Ctrl-C) stops the call.
        """
        docs = list(documents)
        mds = list(metadatas) if metadatas is not None else [None] * len(docs)
        hashes = list(doc_hashes) if doc_hashes is not None else [None] * len(docs)
        if not len(docs) == len(mds) == len(hashes):
            raise ValueError(f"got {len(docs)} documents, {len(mds)} metadatas and {len(hashes)} doc_hashes")
        rows = []
        for i, (doc, md, h) in enumerate(zip(docs, mds, hashes, strict=True)):
            try:
                rows.append(document_rows(doc, md, h, store_text))
            except ValueError as exc:
                raise ValueError(f"document {i} ({doc.doc_id!r}): {exc}") from exc
        # everything the call writes is checked and laid out before its first write: a document
        # that cannot be written (vectors of another width) fails here, with nothing written
        widths = [r.vectors.shape[1:] for r in rows if r.texts]
        for r in rows:
            if r.texts and r.vectors.shape[1:] != widths[0]:
                raise ValueError(
                    f"document {r.doc_id!r} has vectors of width {r.vectors.shape[1:]}, the first document "
                    f"{widths[0]}: one call writes vectors of one width"
                )
        groups = [GroupRows.of(part) for part in write_groups(rows, self._io.batch_size())]
        written = 0
        for group in groups:
            try:
                self._io.fresh()
                on_commit = None if on_committed is None else functools.partial(on_committed, written + len(group.docs))
                self._manifest.write_many(group.docs, group.write(self._io), on_commit=on_commit)
                self._io.own_write_done()
            except StoreError as exc:
                done = written + written_before(exc)
                if done:
                    raise GroupWriteError(str(exc), done) from exc
                raise
            written += len(group.docs)
        return [len(r.texts) for r in rows]

    def write_document(
        self,
        doc_id: str,
        write: Callable[[str], None],
        *,
        n_sentences: int,
        doc_hash: str,
        metadata: dict[str, Any] | None = None,
        text: str | None = None,
    ) -> str:
        """Run the manifest's write protocol around ``write(version)``; returns the version.

        ``write`` stores the document's sentences itself (e.g. through a framework's vector
        store), each with id ``sentence_id(doc_id, index, version)`` and ``doc_version=version``
        in its metadata. Until it returns and the manifest is committed, readers keep seeing
        the previous version; if it raises before the commit, the previous version stays and
        the exception propagates (a store failure as :class:`StoreError`; one after the commit,
        when the new version is the visible one, as
        :class:`~landmark_rag.store.manifest.GroupWriteError`).
        """
        self._io.fresh()
        version = self._manifest.write(doc_id, write, n_sentences=n_sentences, doc_hash=doc_hash,
                                       metadata=metadata, text=text)
        self._io.own_write_done()
        return version

    def delete_document(self, doc_id: str) -> int:
        """Remove a document and all its sentences; returns how many sentences went.

        The manifest record goes first, so a reader never sees a partly deleted document.
        """
        self._io.fresh()
        removed = self._manifest.delete(doc_id)
        self._io.own_write_done()
        return removed

    def clean_document(self, doc_id: str) -> int:
        """Delete the sentences of ``doc_id`` that belong to no committed version; returns how many.

        Finishes a write that was interrupted (or failed) after its first step. Only call it
        for a document no other process is writing right now (a writer calls it for its own
        documents).
        """
        self._io.fresh()
        removed = self._manifest.clean(doc_id)
        self._io.own_write_done()
        return removed

    # ------------------------------------------------------------------ documents
    def generation(self) -> str | None:
        """A token that changes whenever a document is completed or deleted (``None``: never).

        Read fresh from the server on every call (about a millisecond), so derived indexes
        (the lexical index of ``store/lexical.py``) can tell cheaply whether any writer -
        this process, another one, a Ray worker - changed the store since they last looked.
        """
        self._io.fresh()
        return self._manifest.generation()

    def documents(self, *, include_incomplete: bool = False) -> dict[str, dict[str, Any]]:
        """Manifest records by document id (``state``, ``doc_hash``, ``n_sentences``, metadata)."""
        self._io.fresh()
        return self._manifest.documents(include_incomplete=include_incomplete)

    def count_documents(self) -> int | None:
        """Documents the manifest knows, in any state (``None``: the store has no manifest)."""
        self._io.fresh()
        return self._manifest.count()

    def document_hash(self, doc_id: str) -> str | None:
        """Content hash of a completely stored document, else ``None`` (absent or interrupted)."""
        rec = self._manifest.records([doc_id]).get(doc_id)
        return rec[DOC_HASH] if rec is not None and is_complete(rec) else None

    def document_text(self, doc_id: str) -> str | None:
        """The full text stored with a document, if it was stored."""
        self._io.fresh()
        return self._manifest.text(doc_id)

    def count_sentences(self) -> int:
        """Sentences stored, of every version (while a document is replaced: both)."""
        self._io.fresh()
        with store_errors("counting sentences"):
            return int(self._io.collection.count())


__all__ = ["ChromaSentenceStore"]
