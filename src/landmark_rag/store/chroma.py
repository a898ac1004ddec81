"""Sentence vectors in Chroma (step 3 of the pipeline).

Two collections per store: ``NAME`` holds one record per sentence (the sentence text, its
vector and the flat metadata of :mod:`landmark_rag.store.schema`); ``NAME__documents`` is a
manifest with one record per document (content hash, state, number of sentences, the
committed version, the full text, user metadata).

Writing a document follows a protocol under which a reader never sees a half-written
document, and a replaced document's previous version stays visible until the new one is
complete (an interruption or a store failure at any point leaves the previous version, or
for a new document nothing, visible):

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

A reader shows a sentence when its document has no manifest record (written by another
tool), or the record is ``complete`` and names the sentence's ``doc_version`` (records
written before versions existed: the same ``doc_hash``). A record left ``dirty`` by an
interruption is finished by the next write of that document or by :meth:`clean_document`.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

from landmark_rag.store.schema import (
    DIRTY,
    DOC_HASH,
    DOC_ID,
    INDEX,
    N_SENTENCES,
    STATE,
    VERSION,
    flat_metadata,
    parse_sentence_key,
    sentence_from_metadata,
    sentence_id,
    sentence_key,
    sentence_metadata,
)
from landmark_rag.store.stamp import stamped_models
from landmark_rag.types import EncodedDocument, Hit, Sentence

DEFAULT_DB = "./landmark_db"
DEFAULT_COLLECTION = "landmark"
#: ``db`` value for a store that lives in memory only (tests, notebooks, one-off runs).
MEMORY = ":memory:"
IDENTITY_PREFIX = "landmark_rag:"
GENERATION_KEY = IDENTITY_PREFIX + "generation"
_WRITING, _COMPLETE = "writing", "complete"
#: Identity fields compared only when the store has them recorded (added after stores existed).
OPTIONAL_IDENTITY = ("weights_fingerprint",)
#: Identity fields written only when they differ from their default (``LandmarkConfig.identity``):
#: a side that lacks one has the default, so a recorded non-default is compared both ways.
IDENTITY_DEFAULTS = {"landmark_attention": "full", "landmark_span": 1}


class StoreMismatchError(ValueError):
    """The collection was written with another model or landmark configuration."""


class StoreError(RuntimeError):
    """The store itself failed (server gone, disk full, database locked): not the document's fault.

    Raised by writes so that callers stop instead of treating the failure as a bad input
    file; the document's previous version is still visible (see the module docstring).
    """


def content_hash(text: str) -> str:
    """Hash identifying a document's content (used to skip unchanged documents)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def make_client(db: str | os.PathLike[str] | None = None) -> Any:
    """The one place a Chroma client is created.

    ``http(s)://host:port`` -> HttpClient (checked with a heartbeat, so an unreachable
    server fails here rather than at the first query); ``":memory:"`` -> EphemeralClient
    (nothing written to disk); anything else is a directory for a PersistentClient
    (``None``: ``./landmark_db``).
    """
    import chromadb

    target = os.fspath(db) if db is not None else DEFAULT_DB
    if target == MEMORY:
        return chromadb.EphemeralClient()
    if target.startswith(("http://", "https://")):
        url = urlparse(target)
        client = chromadb.HttpClient(
            host=url.hostname or "localhost", port=url.port or (443 if url.scheme == "https" else 8000),
            ssl=url.scheme == "https",
        )
        client.heartbeat()
        return client
    path = Path(target).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(path))


class ChromaSentenceStore:
    """Read and write landmark-encoded documents in a Chroma collection."""

    def __init__(self, collection: Any, manifest: Any | None = None) -> None:
        self.collection = collection
        self.manifest = manifest
        self._reopen_lock = threading.Lock()
        self._local_path = _local_path(collection)
        self._seen = _signature(self._local_path) if self._local_path else None

    # ------------------------------------------------------------------ freshness
    def _fresh(self) -> None:
        """Reopen a local store that another process changed since this one opened it.

        A Chroma PersistentClient keeps its vector index in memory: after another process
        writes, counts and metadata (read from SQLite) are new but searches run on the old
        index and filtered searches fail ("Error finding id"). The database file changes on
        every write, so comparing its size and modification time (one ``stat``) tells when
        to reopen (tens of milliseconds). Server stores are always current.
        """
        if self._local_path is None:
            return
        now = _signature(self._local_path)
        if now == self._seen:
            return
        with self._reopen_lock:
            if now == self._seen:
                return
            self._reopen()
            # a write within the file clock's resolution may not move the mtime: a signature
            # taken that close to a write is not trusted, so the next read checks again
            self._seen = None if _recent(now) else now

    def _own_write_done(self) -> None:
        """This store's own writes are visible to it: no reopen for them (a local store has
        one writing process at a time; see docs/reliability.md)."""
        if self._local_path is not None:
            self._seen = _signature(self._local_path)

    def _reopen(self) -> None:
        import chromadb
        from chromadb.api.shared_system_client import SharedSystemClient

        # drop the shared (stale) system for this path without stopping it: other holders
        # of the old client keep working; this store gets a new client on fresh state
        SharedSystemClient._identifier_to_system.pop(self._local_path, None)
        client = chromadb.PersistentClient(path=self._local_path)
        self.collection = client.get_collection(self.collection.name, embedding_function=None)
        if self.manifest is not None:
            self.manifest = client.get_collection(self.manifest.name, embedding_function=None)

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
        not comparable, so mixing them is refused with :class:`StoreMismatchError`.
        """
        client = client if client is not None else make_client(db)
        wanted = {IDENTITY_PREFIX + k: _scalar(v) for k, v in (identity or {}).items()}
        if create:
            collection = client.get_or_create_collection(
                collection_name, metadata={"hnsw:space": "cosine", **wanted} if wanted else {"hnsw:space": "cosine"},
                embedding_function=None,
            )
            manifest = client.get_or_create_collection(_manifest_name(collection_name), embedding_function=None)
        else:
            try:
                collection = client.get_collection(collection_name, embedding_function=None)
            except Exception as exc:  # chromadb raises NotFoundError / ValueError by version
                raise LookupError(f"no collection {collection_name!r} in this store") from exc
            try:
                manifest = client.get_collection(_manifest_name(collection_name), embedding_function=None)
            except Exception:
                manifest = None
        store = cls(collection, manifest)
        if wanted:
            store.check_identity(identity or {})
        return store

    @classmethod
    def for_collection(cls, collection: Any, *, create_manifest: bool = False) -> ChromaSentenceStore:
        """A store over a collection someone else opened (e.g. a LlamaIndex ``ChromaVectorStore``'s).

        Its manifest is attached when it exists (so reads honour the write protocol), or
        created when ``create_manifest`` (for a writer).
        """
        from chromadb.api.models.Collection import Collection

        server = collection._client
        name = _manifest_name(collection.name)
        where = {"tenant": collection.tenant, "database": collection.database}
        try:
            if create_manifest:
                model = server.get_or_create_collection(name=name, **where)
            else:
                model = server.get_collection(name=name, **where)
        except Exception:  # noqa: BLE001 - no manifest: a collection written without the protocol
            return cls(collection)
        return cls(collection, Collection(client=server, model=model, embedding_function=None))

    def identity(self) -> dict[str, Any]:
        """The model identity of the collection (empty if none).

        Recorded on the collection by landmark-rag's writers; for a collection written through
        LlamaIndex's own ``ChromaVectorStore``, the identity ``LandmarkEmbedding`` stamped on
        the records (``landmark_rag.store.stamp``), read without recording it. A collection
        whose records carry another model's stamp (or two models' stamps) is refused with
        :class:`StoreMismatchError`: its vectors are not comparable with each other.
        """
        recorded = self._recorded_identity()
        stamps = self.stamped_models()
        reference = recorded or (stamps[0][0] if stamps else {})
        for other, source in stamps:
            diff = _identity_diff(reference, other)
            if diff:
                lines = ", ".join(f"{k}: {a!r} vs {b!r}" for k, (a, b) in diff.items())
                raise StoreMismatchError(
                    f"collection {self.collection.name!r} holds vectors of two model set-ups ({lines}; the other "
                    f"written through LlamaIndex by {source or other.get('model_name')!r}): they cannot be "
                    "searched together. Re-index into a new collection with one model."
                )
        return dict(reference)

    def _recorded_identity(self) -> dict[str, Any]:
        """The identity recorded on the collection's metadata by a landmark-rag writer."""
        self._fresh()
        md = self.collection.metadata or {}
        return {k[len(IDENTITY_PREFIX):]: v for k, v in md.items() if k.startswith(IDENTITY_PREFIX)}

    def stamped_models(self) -> list[tuple[dict[str, Any], str | None]]:
        """``(identity, source)`` of each distinct model stamped on the records (see ``store.stamp``)."""
        self._fresh()
        with _store_errors("reading the model stamps"):
            return stamped_models(self.collection)

    def check_identity(self, identity: dict[str, Any], *, record: bool = True) -> None:
        """Refuse a model set-up other than the collection's; a writer (``record=True``) also
        records ``identity`` on a collection that has none recorded (readers pass ``False``)."""
        recorded = self.identity()
        wanted = {k: _scalar(v) for k, v in identity.items()}
        diff = _identity_diff(recorded, wanted) if recorded else {}
        if diff:
            lines = ", ".join(f"{k}: store has {a!r}, requested {b!r}" for k, (a, b) in diff.items())
            raise StoreMismatchError(
                f"collection {self.collection.name!r} was built with a different model set-up ({lines}). "
                "Use the model it was built with, or index into a new collection."
            )
        if record and not self._recorded_identity():
            md = {k: v for k, v in (self.collection.metadata or {}).items() if not k.startswith("hnsw:")}
            md.update({IDENTITY_PREFIX + k: v for k, v in wanted.items()})
            self.collection.modify(metadata=md)
            self._own_write_done()

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
            step = self._batch_size()
            for i in range(0, len(ids), step):
                self.collection.upsert(
                    ids=ids[i : i + step], embeddings=vecs[i : i + step], metadatas=mds[i : i + step],
                    documents=docs[i : i + step],
                )

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
        """Run the replace protocol (module docstring) around ``write(version)``; returns the version.

        ``write`` stores the document's sentences itself (e.g. through a framework's vector
        store), each with id ``sentence_id(doc_id, index, version)`` and ``doc_version=version``
        in its metadata. Until it returns and the manifest is committed, readers keep seeing
        the previous version; if it raises, the previous version stays and the exception
        propagates (a store failure as :class:`StoreError`).
        """
        self._fresh()
        user_md = flat_metadata(metadata)
        version = uuid.uuid4().hex[:12]
        with _store_errors(f"writing document {doc_id!r}"):
            previous = self._announce(doc_id, doc_hash, n_sentences, user_md, version)
            write(version)
            self._commit(doc_id, doc_hash, n_sentences, user_md, version, text, previous)
            self._clean(doc_id)
        self._own_write_done()
        return version

    def delete_document(self, doc_id: str) -> int:
        """Remove a document and all its sentences; returns how many sentences went.

        The manifest record goes first, so a reader never sees a partly deleted document.
        """
        self._fresh()
        with _store_errors(f"deleting document {doc_id!r}"):
            if self.manifest is not None:
                self.manifest.upsert(ids=[doc_id], embeddings=[[0.0]], metadatas=[{STATE: _WRITING, DIRTY: True}],
                                     documents=[""])
            ids = self._ids_of(doc_id)
            self._delete_ids(ids)
            if self.manifest is not None:
                self.manifest.delete(ids=[doc_id])
                self._bump()
        self._own_write_done()
        return len(ids)

    def generation(self) -> str | None:
        """A token that changes whenever a document is completed or deleted (``None``: never).

        Read fresh from the server on every call (about a millisecond), so derived indexes
        (the lexical index of ``store/lexical.py``) can tell cheaply whether any writer -
        this process, another one, a Ray worker - changed the store since they last looked.
        """
        self._fresh()
        if self.manifest is None:
            return None
        try:
            fresh = self.manifest._client.get_collection(self.manifest.name, tenant=self.manifest.tenant,
                                                        database=self.manifest.database)
            md = fresh.metadata
        except Exception:  # an old server or a wrapper without these attributes
            md = self.manifest.metadata
        value = (md or {}).get(GENERATION_KEY)
        return None if value is None else str(value)

    def _bump(self) -> None:
        """Move :meth:`generation` on: after a commit (step 3) and after a delete."""
        md = {k: v for k, v in (self.manifest.metadata or {}).items() if not k.startswith("hnsw:")}
        md[GENERATION_KEY] = uuid.uuid4().hex
        self.manifest.modify(metadata=md)

    def clean_document(self, doc_id: str) -> int:
        """Delete the sentences of ``doc_id`` that belong to no committed version; returns how many.

        Finishes a write that was interrupted (or failed) after step 1 of the protocol. Only
        call it for a document no other process is writing right now (a writer calls it for
        its own documents).
        """
        self._fresh()
        removed = self._clean(doc_id)
        self._own_write_done()
        return removed

    def _clean(self, doc_id: str) -> int:
        if self.manifest is None:
            return 0
        with _store_errors(f"cleaning document {doc_id!r}"):
            rec = self._manifest_records([doc_id]).get(doc_id)
            if rec is None:
                return 0
            committed = rec.get(VERSION) if rec.get(STATE) == _COMPLETE else None
            got = self.collection.get(where={DOC_ID: doc_id}, include=["metadatas"])
            stale = [
                i for i, md in zip(got["ids"], got["metadatas"], strict=True)
                if not _is_current(md or {}, rec, committed)
            ]
            self._delete_ids(stale)
            if rec.get(DIRTY):
                self.manifest.update(ids=[doc_id], metadatas=[{DIRTY: None}])
        return len(stale)

    def _announce(
        self, doc_id: str, doc_hash: str, n: int, user_md: dict[str, Any], version: str
    ) -> dict[str, Any] | None:
        """Step 1: flag the record dirty, keeping a complete previous version visible."""
        if self.manifest is None:
            return None
        previous = self._manifest_records([doc_id]).get(doc_id)
        if previous is None:
            previous = self._adopt(doc_id)
        if previous is not None and previous.get(STATE) == _COMPLETE:
            self.manifest.update(ids=[doc_id], metadatas=[{DIRTY: True}])
        else:
            md = {**user_md, DOC_HASH: doc_hash, STATE: _WRITING, N_SENTENCES: n, VERSION: version, DIRTY: True}
            self.manifest.upsert(ids=[doc_id], embeddings=[[0.0]], metadatas=[md], documents=[""])
        return previous

    def _adopt(self, doc_id: str) -> dict[str, Any] | None:
        """A manifest record for sentences written without one (another tool, an older version).

        They count as the document's complete previous version, so they stay visible while
        the new version is written (a ``writing`` record would hide them).
        """
        got = self.collection.get(where={DOC_ID: doc_id}, include=["metadatas"])
        if not got["ids"]:
            return None
        md = dict(got["metadatas"][0] or {})
        record = {DOC_HASH: str(md.get(DOC_HASH, "")), STATE: _COMPLETE, N_SENTENCES: len(got["ids"]), DIRTY: True}
        self.manifest.upsert(ids=[doc_id], embeddings=[[0.0]], metadatas=[record], documents=[""])
        return record

    def _commit(
        self, doc_id: str, doc_hash: str, n: int, user_md: dict[str, Any], version: str, text: str | None,
        previous: dict[str, Any] | None,
    ) -> None:
        """Step 3: one upsert makes the new version the visible one.

        Chroma merges metadata on upsert, so keys of the previous record that the new one
        lacks are removed in the same call (a ``None`` value deletes a key).
        """
        if self.manifest is None:
            return
        md: dict[str, Any] = {**user_md, DOC_HASH: doc_hash, STATE: _COMPLETE, N_SENTENCES: n, VERSION: version,
                              DIRTY: True}
        for key in previous or {}:
            md.setdefault(key, None)
        self.manifest.upsert(ids=[doc_id], embeddings=[[0.0]], metadatas=[md], documents=[text or ""])
        self._bump()

    def _ids_of(self, doc_id: str) -> list[str]:
        return list(self.collection.get(where={DOC_ID: doc_id}, include=[])["ids"])

    def _delete_ids(self, ids: Sequence[str]) -> None:
        step = self._batch_size()
        for i in range(0, len(ids), step):
            self.collection.delete(ids=list(ids[i : i + step]))

    def _batch_size(self) -> int:
        try:
            return max(1, min(int(self.collection._client.get_max_batch_size()), 5000))
        except Exception:
            return 1000

    # ------------------------------------------------------------------ documents
    def documents(self, *, include_incomplete: bool = False) -> dict[str, dict[str, Any]]:
        """Manifest records by document id (``state``, ``doc_hash``, ``n_sentences``, metadata)."""
        self._fresh()
        if self.manifest is None:
            return {}
        with _store_errors("reading the manifest"):
            got = self.manifest.get(include=["metadatas"])
        out = {}
        for doc_id, md in zip(got["ids"], got["metadatas"], strict=True):
            md = dict(md or {})
            if include_incomplete or md.get(STATE) == _COMPLETE:
                out[doc_id] = md
        return out

    def document_hash(self, doc_id: str) -> str | None:
        """Content hash of a completely stored document, else ``None`` (absent or interrupted)."""
        rec = self._manifest_records([doc_id]).get(doc_id)
        return rec[DOC_HASH] if rec and rec.get(STATE) == _COMPLETE else None

    def document_text(self, doc_id: str) -> str | None:
        """The full text stored with a document, if it was stored."""
        self._fresh()
        if self.manifest is None:
            return None
        with _store_errors("reading the manifest"):
            got = self.manifest.get(ids=[doc_id], include=["documents"])
        return (got["documents"][0] or None) if got["ids"] else None

    def count_sentences(self) -> int:
        """Sentences stored, of every version (while a document is replaced: both)."""
        self._fresh()
        with _store_errors("counting sentences"):
            return int(self.collection.count())

    def _manifest_records(self, doc_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        ids = sorted(set(doc_ids))
        if self.manifest is None or not ids:
            return {}
        with _store_errors("reading the manifest"):
            got = self.manifest.get(ids=ids, include=["metadatas"])
        return {i: dict(md or {}) for i, md in zip(got["ids"], got["metadatas"], strict=True)}

    # ------------------------------------------------------------------ reading
    def query(self, vector: np.ndarray, k: int, *, where: dict[str, Any] | None = None) -> list[Hit]:
        """Top-``k`` sentences by cosine similarity, only from completely stored documents."""
        self._fresh()
        if k <= 0:
            return []
        n = k
        while True:
            # no count() first: Chroma returns fewer than n_results when it has fewer, and a
            # count costs ~9 ms at 100k sentences (docs/benchmarks.md, "Query latency")
            got = self.collection.query(
                query_embeddings=[np.asarray(vector, dtype=np.float32)], n_results=n, where=where,
                include=["documents", "metadatas", "distances"],
            )
            hits = [
                Hit(sentence_from_metadata(text or "", md), self._similarity(float(dist)), dict(md))
                for text, md, dist in zip(got["documents"][0], got["metadatas"][0], got["distances"][0], strict=True)
            ]
            visible = self._visible(hits)
            if len(visible) >= k or len(hits) < n:
                return visible[:k]
            n *= 2

    def query_ids(self, vector: np.ndarray, n: int, *, where: dict[str, Any] | None = None) -> list[tuple[str, float]]:
        """Top-``n`` sentence keys ``doc_id:index`` with their cosine similarity, nothing else read.

        The cheap first stage of a hybrid search (ids and distances only: a tenth of the cost
        of reading 100 records' text and metadata); visibility is checked later, on the few
        records :meth:`hits_by_ids` reads.
        """
        n = int(n)  # Chroma clamps n_results to what it holds; no count() needed
        if n <= 0:
            return []
        with _store_errors("searching"):
            got = self.collection.query(
                query_embeddings=[np.asarray(vector, dtype=np.float32)], n_results=n, where=where,
                include=["distances"],
            )
        out: list[tuple[str, float]] = []
        seen: set[str] = set()
        for rid, dist in zip(got["ids"][0], got["distances"][0], strict=True):
            key = sentence_key(rid)  # two versions of one sentence (mid-replace) are one candidate
            if key not in seen:
                seen.add(key)
                out.append((key, self._similarity(float(dist))))
        return out

    def hits_by_ids(
        self, ids: Sequence[str], scores: Sequence[float], *, where: dict[str, Any] | None = None
    ) -> list[Hit]:
        """The visible records of ``ids`` as hits scored ``scores``, in the given order.

        ``ids`` are sentence keys ``doc_id:index`` (as :meth:`query_ids` and the lexical index
        give them: the record of the version readers see is read) or, for records written
        without that form (another tool), raw record ids. Records that are gone, fail
        ``where`` or belong to a document being written are left out.
        """
        if not ids:
            return []
        found = self._records_by_keys(ids, ["documents", "metadatas"], where)
        return [
            Hit(sentence_from_metadata(found[k][1], found[k][2]), float(s), dict(found[k][2]))
            for k, s in zip(ids, scores, strict=True)
            if k in found
        ]

    def keys_matching(self, keys: Sequence[str], where: dict[str, Any]) -> set[str]:
        """The sentence keys (see :meth:`hits_by_ids`) whose visible record passes ``where``."""
        return set(self._records_by_keys(keys, ["metadatas"], where))

    def _records_by_keys(
        self, keys: Sequence[str], include: list[str], where: dict[str, Any] | None
    ) -> dict[str, tuple[str, str, dict[str, Any]]]:
        """``key -> (record id, text, metadata)`` of the visible records named by ``keys``."""
        wanted: dict[str, set[int]] = {}
        for key in keys:
            addr = parse_sentence_key(key)
            if addr is not None:
                wanted.setdefault(addr[0], set()).add(addr[1])
        out: dict[str, tuple[str, str, dict[str, Any]]] = {}
        for (d, i), (rid, text, md, _) in self._read_addresses(wanted, include, False, where).items():
            out[sentence_id(d, i)] = (rid, text, md)
        rest = [k for k in dict.fromkeys(keys) if k not in out]
        if rest:  # records of other tools, whose ids are not keys
            with _store_errors("reading sentences"):
                got = self.collection.get(ids=rest, where=where, include=include)
            texts = got.get("documents") or [""] * len(got["ids"])
            hits = [
                Hit(sentence_from_metadata(t or "", md or {}), 0.0, dict(md or {}))
                for t, md in zip(texts, got["metadatas"], strict=True)
            ]
            keep = {id(h) for h in self._visible(hits)}
            for rid, t, h in zip(got["ids"], texts, hits, strict=True):
                if id(h) in keep:
                    out[rid] = (rid, t or "", h.metadata)
        return out

    def _similarity(self, distance: float) -> float:
        """Cosine similarity from Chroma's distance, whatever space the collection uses.

        Our collections use ``cosine``; LlamaIndex's ``ChromaVectorStore`` creates ``l2``
        (squared L2, which is ``2 - 2 cos`` for unit vectors) and others may use ``ip``.
        """
        space = _space(self.collection)
        if space == "l2":
            return 1.0 - distance / 2.0
        return 1.0 - distance  # cosine and ip distances are both 1 - <a, b>

    def visible_hits(self, hits: Sequence[Hit]) -> list[Hit]:
        """The hits a reader may see (see the module docstring), e.g. from a framework's own search.

        A framework retriever reads the collection raw: while a document is being replaced
        (or after a killed write, before the next run) it can return sentences of a version
        that is not the visible one.
        """
        self._fresh()
        return self._visible(list(hits))

    def visible(self, hits: list[Hit]) -> list[Hit]:
        """The hits whose document is completely stored in the version they come from.

        Used for vector hits here and for lexical hits (``store/lexical.py``), so both halves
        of a hybrid search hide a document that is being written.
        """
        return self.visible_hits(hits)

    def _visible(self, hits: list[Hit]) -> list[Hit]:
        if self.manifest is None:
            return hits
        records = self._manifest_records(h.sentence.doc_id for h in hits if h.sentence.doc_id)
        return [h for h in hits if _is_visible(h.metadata, records.get(str(h.sentence.doc_id)))]

    def get_sentences(self, doc_id: str, indices: Iterable[int]) -> dict[int, Sentence]:
        """Stored sentences of a document by index (missing indices are simply absent)."""
        return {i: s for i, (s, _) in self._get(doc_id, indices, False).items()}

    def get_embeddings(self, doc_id: str, indices: Iterable[int]) -> dict[int, np.ndarray]:
        """Stored vectors of a document's sentences by index."""
        return {i: v for i, (_, v) in self._get(doc_id, indices, True).items() if v is not None}

    def get_many(
        self, requests: Mapping[str, Iterable[int]], *, embeddings: bool = False
    ) -> dict[str, dict[int, tuple[Sentence, np.ndarray | None]]]:
        """Sentences (and vectors) of several documents in **one** store call.

        ``requests`` maps a document id to the sentence indices wanted; the answer maps it
        to ``{index: (sentence, vector or None)}`` with missing indices simply absent. The
        expansion of a query's hits reads all their neighbours through this, so a query
        costs one read however many documents its hits fall in (docs/benchmarks.md,
        "Query latency").
        """
        wanted = {str(d): {int(i) for i in idx if int(i) >= 0} for d, idx in requests.items()}
        out: dict[str, dict[int, tuple[Sentence, np.ndarray | None]]] = {d: {} for d in wanted}
        include = ["documents", "metadatas"] + (["embeddings"] if embeddings else [])
        for (d, i), (_, text, md, vec) in self._read_addresses(wanted, include, embeddings).items():
            out[d][i] = (sentence_from_metadata(text, md), vec)
        return out

    def _read_addresses(
        self, wanted: Mapping[str, set[int]], include: list[str], embeddings: bool,
        where: dict[str, Any] | None = None,
    ) -> dict[tuple[str, int], tuple[str, str, dict[str, Any], Any]]:
        """Visible records at ``(doc_id, index)`` addresses, all documents in **one** read of
        the sentences (plus one small manifest read).

        Record ids carry the write's version (``doc_id:index@VERSION``); the manifest says which
        version readers see (while a document is replaced both are stored), so a complete
        document's records are read by id. Records without that form are found by metadata.
        """
        docs = sorted(d for d, idx in wanted.items() if idx)
        if not docs:
            return {}
        self._fresh()
        records = self._manifest_records(docs)
        out: dict[tuple[str, int], tuple[str, str, dict[str, Any], Any]] = {}
        # A completely stored, versioned document: the ids of its visible records follow from
        # the manifest's version, and a read by id is a key lookup (about 1 ms at 100k
        # sentences), where the metadata filter below scans (about 13 ms; docs/benchmarks.md,
        # "Query latency"). Everything else (documents without a manifest entry, written
        # before versions existed, or being written) takes the filter.
        by_id = {d: str(records[d][VERSION]) for d in docs
                 if records.get(d, {}).get(STATE) == _COMPLETE and records[d].get(VERSION)}
        if by_id:
            ids = [sentence_id(d, i, v) for d, v in by_id.items() for i in sorted(wanted[d])]
            with _store_errors("reading sentences"):
                got = self.collection.get(ids=ids, where=where, include=include)
            self._collect(got, wanted, records, embeddings, out)
            for d in list(by_id):  # a record missing under its id (written outside the protocol,
                n = records[d].get(N_SENTENCES)  # ids kept, version changed): read by metadata
                if any((d, i) not in out for i in wanted[d] if not isinstance(n, int) or i < n):
                    del by_id[d]
        rest = [d for d in docs if d not in by_id]
        if not rest:
            return out
        all_idx = sorted({i for d in rest for i in wanted[d]})
        parts: list[dict[str, Any]] = [{DOC_ID: rest[0]} if len(rest) == 1 else {DOC_ID: {"$in": rest}}]
        if len(all_idx) <= 256:
            parts.append({INDEX: {"$in": all_idx}})
        if where:
            parts.append(where)
        query = parts[0] if len(parts) == 1 else {"$and": parts}
        with _store_errors("reading sentences"):
            got = self.collection.get(where=query, include=include)
        self._collect(got, {d: wanted[d] for d in rest}, records, embeddings, out)
        return out

    @staticmethod
    def _collect(
        got: Mapping[str, Any], wanted: Mapping[str, set[int]], records: Mapping[str, dict[str, Any]],
        embeddings: bool, out: dict[tuple[str, int], tuple[str, str, dict[str, Any], Any]],
    ) -> None:
        """Add the visible records of a ``collection.get`` answer that ``wanted`` names to ``out``."""
        mds = [dict(md or {}) for md in got["metadatas"]]
        vecs = got.get("embeddings") if embeddings else None
        texts = got.get("documents") or [""] * len(got["ids"])
        for j, (rid, text, md) in enumerate(zip(got["ids"], texts, mds, strict=True)):
            d, i = str(md.get(DOC_ID)), int(md.get(INDEX, -1))
            if i not in wanted.get(d, ()):
                continue
            rec = records.get(d)
            if rec is not None and not _is_visible(md, rec):
                continue
            vec = np.asarray(vecs[j], dtype=np.float32) if vecs is not None else None
            out[(d, i)] = (rid, text or "", md, vec)

    def _get(self, doc_id: str, indices: Iterable[int], embeddings: bool) -> dict[int, tuple[Sentence, Any]]:
        return self.get_many({doc_id: indices}, embeddings=embeddings)[str(doc_id)]

    def document_sentences(self, doc_id: str) -> list[Sentence]:
        """All stored sentences of a document's visible version, in order."""
        found = self._current_sentences(doc_id, {DOC_ID: doc_id}, ["documents", "metadatas"], False)
        return sorted((s for s, _ in found), key=lambda s: s.index)

    def document_embeddings(self, doc_id: str) -> tuple[list[Sentence], np.ndarray]:
        """All stored sentences of a document's visible version and their vectors, in order."""
        found = self._current_sentences(doc_id, {DOC_ID: doc_id}, ["documents", "metadatas", "embeddings"], True)
        pairs = sorted(found, key=lambda p: p[0].index)
        if not pairs:
            return [], np.zeros((0, 0), dtype=np.float32)
        return [p[0] for p in pairs], np.stack([p[1] for p in pairs])

    def sentence_records(self, doc_id: str, indices: Iterable[int]) -> dict[int, tuple[str, str, dict[str, Any]]]:
        """Visible stored records of a document's sentences by index: ``(id, text, metadata)``.

        For callers holding a sentence's address rather than its record id (record ids carry
        the write's version, ``doc_id:index@VERSION``).
        """
        idx = sorted({int(i) for i in indices if int(i) >= 0})
        if not idx:
            return {}
        where = {"$and": [{DOC_ID: doc_id}, {INDEX: {"$in": idx}}]}
        return {
            int(md[INDEX]): (rid, text, md)
            for rid, text, md, _ in self._current_records(doc_id, where, ["documents", "metadatas"], False)
        }

    def _current_sentences(
        self, doc_id: str, where: dict[str, Any], include: list[str], embeddings: bool
    ) -> list[tuple[Sentence, Any]]:
        """Sentences of ``doc_id`` matching ``where``, only those of the version readers see."""
        return [
            (sentence_from_metadata(text, md), vec) for _, text, md, vec in self._current_records(
                doc_id, where, include, embeddings
            )
        ]

    def _current_records(
        self, doc_id: str, where: dict[str, Any], include: list[str], embeddings: bool
    ) -> list[tuple[str, str, dict[str, Any], Any]]:
        """Records of ``doc_id`` matching ``where``, only those of the version readers see.

        While a document is being replaced both versions are stored; the manifest says
        which one is visible (one extra small read, only when versioned sentences exist).
        """
        self._fresh()
        with _store_errors(f"reading document {doc_id!r}"):
            got = self.collection.get(where=where, include=include)
        mds = [dict(md or {}) for md in got["metadatas"]]
        rec: dict[str, Any] | None = None
        if any(VERSION in md for md in mds) and self.manifest is not None:
            rec = self._manifest_records([doc_id]).get(doc_id)
        vecs = got.get("embeddings") if embeddings else None
        out = []
        for j, (rid, text, md) in enumerate(zip(got["ids"], got["documents"], mds, strict=True)):
            if rec is not None and not _is_visible(md, rec):
                continue
            vec = np.asarray(vecs[j], dtype=np.float32) if vecs is not None else None
            out.append((rid, text or "", md, vec))
        return out


def _identity_diff(recorded: dict[str, Any], wanted: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Fields where ``wanted`` differs from ``recorded`` (optional fields only where both have them;
    a field with a default, :data:`IDENTITY_DEFAULTS`, also where only ``recorded`` has it)."""
    out = {
        k: (recorded.get(k, IDENTITY_DEFAULTS.get(k)), v) for k, v in wanted.items()
        if recorded.get(k, IDENTITY_DEFAULTS.get(k)) != v and not (k in OPTIONAL_IDENTITY and k not in recorded)
    }
    for k, default in IDENTITY_DEFAULTS.items():
        if k in recorded and k not in wanted and recorded[k] != default:
            out[k] = (recorded[k], default)
    return out


def _is_visible(metadata: dict[str, Any], record: dict[str, Any] | None) -> bool:
    """Whether a stored sentence is part of what readers see (see the module docstring)."""
    if record is None:
        return True  # written by another tool without a manifest: trust it
    if record.get(STATE) != _COMPLETE:
        return False
    return _is_current(metadata, record, record.get(VERSION))


def _is_current(metadata: dict[str, Any], record: dict[str, Any], committed: Any) -> bool:
    """Whether a sentence belongs to the committed version ``committed`` of its document."""
    if committed:
        return metadata.get(VERSION) == committed
    if record.get(STATE) != _COMPLETE:
        return False  # a document that never completed has no version to keep
    # a record written before versions existed: its sentences carry no version, same hash
    return VERSION not in metadata and metadata.get(DOC_HASH, record.get(DOC_HASH)) == record.get(DOC_HASH)


@contextmanager
def _store_errors(what: str) -> Iterator[None]:
    """Turn anything the Chroma client raises into :class:`StoreError` (saying what was being done)."""
    try:
        yield
    except (StoreError, StoreMismatchError):
        raise
    except Exception as exc:  # noqa: BLE001 - chromadb raises many kinds for one dead server
        raise StoreError(f"store failed while {what}: {type(exc).__name__}: {_one_line(exc)}") from exc


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:297] + "..."


def _local_path(collection: Any) -> str | None:
    """The folder of a PersistentClient's collection (``None`` for a server or in memory)."""
    try:
        settings = collection._client.get_settings()
    except Exception:  # noqa: BLE001 - not a chromadb collection (or an older client)
        return None
    path = getattr(settings, "persist_directory", None)
    if not getattr(settings, "is_persistent", False) or not path or not Path(path, "chroma.sqlite3").exists():
        return None
    return str(path)


def _signature(path: str) -> tuple[Any, ...]:
    """What changes whenever any process writes the store: the SQLite files' size and mtime."""
    out: list[Any] = []
    for name in ("chroma.sqlite3", "chroma.sqlite3-wal"):
        try:
            st = os.stat(os.path.join(path, name))
        except OSError:
            out.append(None)
        else:
            out.append((st.st_mtime_ns, st.st_size, st.st_ino))
    return tuple(out)


def _recent(signature: tuple[Any, ...], within_s: float = 0.05) -> bool:
    newest = max((part[0] for part in signature if part is not None), default=0)
    return time.time_ns() - newest < within_s * 1e9


def _space(collection: Any) -> str:
    config = getattr(collection, "configuration_json", None) or {}
    hnsw = config.get("hnsw") or {}
    return str(hnsw.get("space") or (collection.metadata or {}).get("hnsw:space") or "l2")


def _manifest_name(name: str) -> str:
    return f"{name}__documents"


def _scalar(value: Any) -> str | int | float | bool:
    return value if isinstance(value, str | int | float | bool) else ("" if value is None else str(value))


__all__ = [
    "DEFAULT_COLLECTION",
    "DEFAULT_DB",
    "INDEX",
    "MEMORY",
    "ChromaSentenceStore",
    "StoreError",
    "StoreMismatchError",
    "content_hash",
    "make_client",
]
