"""Sentence vectors in Chroma (step 3 of the pipeline): :class:`ChromaSentenceStore`.

The store is a facade over four jobs, one module each: talking to Chroma and re-opening a
folder another process wrote (``store/client.py``), the manifest's write protocol and the
rule for what readers see (``store/manifest.py``), the model identity
(``store/identity.py``) and the reads every reader goes through (``store/reads.py``:
nearest neighbours, records by id, sentences by document). What lives here is opening a
store, writing documents, and what the manifest says about them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from landmark_rag.store.client import (
    DEFAULT_COLLECTION,
    Collections,
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
from landmark_rag.store.manifest import Manifest, is_complete
from landmark_rag.store.reads import SentenceReads
from landmark_rag.store.schema import (
    DOC_HASH,
    content_hash,
    flat_metadata,
    sentence_id,
    sentence_metadata,
)
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
        doc_id = encoded.doc_id
        if not doc_id:
            raise ValueError("add_document needs an EncodedDocument with a doc_id")
        if len(encoded.sentences) != len(encoded.embeddings):
            raise ValueError("sentences and embeddings differ in length")
        doc_hash = doc_hash or content_hash(encoded.text)
        user_md = flat_metadata(metadata)
        vecs = np.asarray(encoded.embeddings, dtype=np.float32)
        docs = [s.text for s in encoded.sentences]

        def write(version: str) -> None:
            ids = [sentence_id(doc_id, s.index, version) for s in encoded.sentences]
            mds = [sentence_metadata(s.with_doc_id(doc_id), doc_hash, user_md, version) for s in encoded.sentences]
            self._io.upsert_sentences(ids, vecs, mds, docs)

        self.write_document(
            doc_id, write, n_sentences=len(docs), doc_hash=doc_hash, metadata=user_md,
            text=encoded.text if store_text else None,
        )
        return len(docs)

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
        the previous version; if it raises, the previous version stays and the exception
        propagates (a store failure as :class:`StoreError`).
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
