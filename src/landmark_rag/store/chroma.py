"""Sentence vectors in Chroma (step 3 of the pipeline).

Two collections per store: ``NAME`` holds one record per sentence (id ``doc_id:index``, the
sentence text, its vector and the flat metadata of :mod:`landmark_rag.store.schema`);
``NAME__documents`` is a manifest with one record per document (content hash, state,
number of sentences, the full text, user metadata).

Replacing a document follows a small protocol so that an interrupted write never leaves a
half-indexed document visible to :meth:`ChromaSentenceStore.query`: the manifest is first
marked ``writing`` (which hides every sentence of the document), then the old sentences are
deleted and the new ones upserted, and only then is the manifest marked ``complete``.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

from landmark_rag.store.schema import (
    DOC_HASH,
    DOC_ID,
    INDEX,
    flat_metadata,
    sentence_from_metadata,
    sentence_id,
    sentence_metadata,
)
from landmark_rag.types import EncodedDocument, Hit, Sentence

DEFAULT_DB = "./landmark_db"
DEFAULT_COLLECTION = "landmark"
#: ``db`` value for a store that lives in memory only (tests, notebooks, one-off runs).
MEMORY = ":memory:"
IDENTITY_PREFIX = "landmark_rag:"
GENERATION_KEY = IDENTITY_PREFIX + "generation"
_WRITING, _COMPLETE = "writing", "complete"


class StoreMismatchError(ValueError):
    """The collection was written with another model or landmark configuration."""


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

    def identity(self) -> dict[str, Any]:
        """The model identity recorded on the collection (empty if none)."""
        md = self.collection.metadata or {}
        return {k[len(IDENTITY_PREFIX):]: v for k, v in md.items() if k.startswith(IDENTITY_PREFIX)}

    def check_identity(self, identity: dict[str, Any]) -> None:
        """Record ``identity`` on an unmarked collection, or refuse a different one."""
        recorded = self.identity()
        wanted = {k: _scalar(v) for k, v in identity.items()}
        if not recorded:
            md = {k: v for k, v in (self.collection.metadata or {}).items() if not k.startswith("hnsw:")}
            md.update({IDENTITY_PREFIX + k: v for k, v in wanted.items()})
            self.collection.modify(metadata=md)
            return
        diff = {k: (recorded.get(k), v) for k, v in wanted.items() if recorded.get(k) != v}
        if diff:
            lines = ", ".join(f"{k}: store has {a!r}, requested {b!r}" for k, (a, b) in diff.items())
            raise StoreMismatchError(
                f"collection {self.collection.name!r} was built with a different model set-up ({lines}). "
                "Use the model it was built with, or index into a new collection."
            )

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
        document leaves nothing stale behind.
        """
        doc_id = encoded.doc_id
        if not doc_id:
            raise ValueError("add_document needs an EncodedDocument with a doc_id")
        if len(encoded.sentences) != len(encoded.embeddings):
            raise ValueError("sentences and embeddings differ in length")
        doc_hash = doc_hash or content_hash(encoded.text)
        user_md = flat_metadata(metadata)
        self._mark(doc_id, doc_hash, _WRITING, len(encoded.sentences), user_md, encoded.text if store_text else None)
        # Chroma's upsert merges metadata into an existing record, so a key the new version
        # no longer has would survive; the old sentences are removed first (still hidden).
        self._delete_ids(self._ids_of(doc_id))
        ids = [sentence_id(doc_id, s.index) for s in encoded.sentences]
        mds = [sentence_metadata(s.with_doc_id(doc_id), doc_hash, user_md) for s in encoded.sentences]
        docs = [s.text for s in encoded.sentences]
        vecs = np.asarray(encoded.embeddings, dtype=np.float32)
        step = self._batch_size()
        for i in range(0, len(ids), step):
            self.collection.upsert(
                ids=ids[i : i + step], embeddings=vecs[i : i + step], metadatas=mds[i : i + step],
                documents=docs[i : i + step],
            )
        self._mark(doc_id, doc_hash, _COMPLETE, len(ids), user_md, encoded.text if store_text else None)
        return len(ids)

    def delete_document(self, doc_id: str) -> int:
        """Remove a document and all its sentences; returns how many sentences went."""
        ids = self._ids_of(doc_id)
        self._delete_ids(ids)
        if self.manifest is not None:
            self.manifest.delete(ids=[doc_id])
            self._bump()
        return len(ids)

    def generation(self) -> str | None:
        """A token that changes whenever a document is completed or deleted (``None``: never).

        Read fresh from the server on every call (about a millisecond), so derived indexes
        (the lexical index of ``store/lexical.py``) can tell cheaply whether any writer -
        this process, another one, a Ray worker - changed the store since they last looked.
        """
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
        md = {k: v for k, v in (self.manifest.metadata or {}).items() if not k.startswith("hnsw:")}
        md[GENERATION_KEY] = uuid.uuid4().hex
        self.manifest.modify(metadata=md)

    def _mark(self, doc_id: str, doc_hash: str, state: str, n: int, user_md: dict[str, Any], text: str | None) -> None:
        if self.manifest is None:
            return
        md = {**user_md, DOC_HASH: doc_hash, "state": state, "n_sentences": n}
        if state == _COMPLETE:
            # upsert merges metadata, so the old record's keys would survive; dropping it is
            # safe only now that every sentence is written (a document with no manifest
            # record is treated as complete)
            self.manifest.delete(ids=[doc_id])
        self.manifest.upsert(ids=[doc_id], embeddings=[[0.0]], metadatas=[md], documents=[text or ""])
        if state == _COMPLETE:
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
        if self.manifest is None:
            return {}
        got = self.manifest.get(include=["metadatas"])
        out = {}
        for doc_id, md in zip(got["ids"], got["metadatas"], strict=True):
            md = dict(md or {})
            if include_incomplete or md.get("state") == _COMPLETE:
                out[doc_id] = md
        return out

    def document_hash(self, doc_id: str) -> str | None:
        """Content hash of a completely stored document, else ``None`` (absent or interrupted)."""
        rec = self._manifest_records([doc_id]).get(doc_id)
        return rec[DOC_HASH] if rec and rec.get("state") == _COMPLETE else None

    def document_text(self, doc_id: str) -> str | None:
        """The full text stored with a document, if it was stored."""
        if self.manifest is None:
            return None
        got = self.manifest.get(ids=[doc_id], include=["documents"])
        return (got["documents"][0] or None) if got["ids"] else None

    def count_sentences(self) -> int:
        return int(self.collection.count())

    def _manifest_records(self, doc_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        ids = sorted(set(doc_ids))
        if self.manifest is None or not ids:
            return {}
        got = self.manifest.get(ids=ids, include=["metadatas"])
        return {i: dict(md or {}) for i, md in zip(got["ids"], got["metadatas"], strict=True)}

    # ------------------------------------------------------------------ reading
    def query(self, vector: np.ndarray, k: int, *, where: dict[str, Any] | None = None) -> list[Hit]:
        """Top-``k`` sentences by cosine similarity, only from completely stored documents."""
        if k <= 0:
            return []
        total = self.count_sentences()
        n = min(k, total)
        while n > 0:
            got = self.collection.query(
                query_embeddings=[np.asarray(vector, dtype=np.float32)], n_results=n, where=where,
                include=["documents", "metadatas", "distances"],
            )
            hits = [
                Hit(sentence_from_metadata(text or "", md), self._similarity(float(dist)), dict(md))
                for text, md, dist in zip(got["documents"][0], got["metadatas"][0], got["distances"][0], strict=True)
            ]
            visible = self._visible(hits)
            if len(visible) >= k or n >= total:
                return visible[:k]
            n = min(total, n * 2)
        return []

    def query_ids(self, vector: np.ndarray, n: int, *, where: dict[str, Any] | None = None) -> list[tuple[str, float]]:
        """Top-``n`` sentence ids with their cosine similarity, nothing else read.

        The cheap first stage of a hybrid search (ids and distances only: a tenth of the cost
        of reading 100 records' text and metadata); visibility is checked later, on the few
        records :meth:`hits_by_ids` reads.
        """
        n = min(int(n), self.count_sentences())
        if n <= 0:
            return []
        got = self.collection.query(
            query_embeddings=[np.asarray(vector, dtype=np.float32)], n_results=n, where=where, include=["distances"]
        )
        return [(i, self._similarity(float(d))) for i, d in zip(got["ids"][0], got["distances"][0], strict=True)]

    def hits_by_ids(
        self, ids: Sequence[str], scores: Sequence[float], *, where: dict[str, Any] | None = None
    ) -> list[Hit]:
        """The visible records of ``ids`` as hits scored ``scores``, in the given order.

        Records that are gone, fail ``where`` or belong to a document being written are left out.
        """
        if not ids:
            return []
        got = self.collection.get(ids=list(ids), where=where, include=["documents", "metadatas"])
        by_id = {i: (t, md) for i, t, md in zip(got["ids"], got["documents"], got["metadatas"], strict=True)}
        hits = [
            Hit(sentence_from_metadata(by_id[i][0] or "", by_id[i][1]), float(s), dict(by_id[i][1]))
            for i, s in zip(ids, scores, strict=True)
            if i in by_id
        ]
        return self._visible(hits)

    def _similarity(self, distance: float) -> float:
        """Cosine similarity from Chroma's distance, whatever space the collection uses.

        Our collections use ``cosine``; LlamaIndex's ``ChromaVectorStore`` creates ``l2``
        (squared L2, which is ``2 - 2 cos`` for unit vectors) and others may use ``ip``.
        """
        space = _space(self.collection)
        if space == "l2":
            return 1.0 - distance / 2.0
        return 1.0 - distance  # cosine and ip distances are both 1 - <a, b>

    def visible(self, hits: list[Hit]) -> list[Hit]:
        """The hits whose document is completely stored in the version they come from.

        Used for vector hits here and for lexical hits (``store/lexical.py``), so both halves
        of a hybrid search hide a document that is being written.
        """
        return self._visible(hits)

    def _visible(self, hits: list[Hit]) -> list[Hit]:
        if self.manifest is None:
            return hits
        records = self._manifest_records(h.sentence.doc_id for h in hits if h.sentence.doc_id)
        out = []
        for h in hits:
            rec = records.get(str(h.sentence.doc_id))
            if rec is None:
                out.append(h)  # written by another tool without a manifest: trust it
            elif rec.get("state") == _COMPLETE and rec.get(DOC_HASH) == h.metadata.get(DOC_HASH, rec.get(DOC_HASH)):
                out.append(h)
        return out

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
        wanted = {str(d): sorted({int(i) for i in idx if int(i) >= 0}) for d, idx in requests.items()}
        owner = {sentence_id(d, i): d for d, idx in wanted.items() for i in idx}
        ids = list(owner)
        out: dict[str, dict[int, tuple[Sentence, np.ndarray | None]]] = {d: {} for d in wanted}
        if not ids:
            return out
        include = ["documents", "metadatas"] + (["embeddings"] if embeddings else [])
        step = self._batch_size()
        for lo in range(0, len(ids), step):
            got = self.collection.get(ids=ids[lo : lo + step], include=include)
            vecs = got.get("embeddings") if embeddings else None
            for j, (rid, text, md) in enumerate(zip(got["ids"], got["documents"], got["metadatas"], strict=True)):
                s = sentence_from_metadata(text or "", md)
                vec = np.asarray(vecs[j], dtype=np.float32) if vecs is not None else None
                out[owner[rid]][s.index] = (s, vec)
        return out

    def _get(self, doc_id: str, indices: Iterable[int], embeddings: bool) -> dict[int, tuple[Sentence, Any]]:
        return self.get_many({doc_id: indices}, embeddings=embeddings)[str(doc_id)]

    def document_sentences(self, doc_id: str) -> list[Sentence]:
        """All stored sentences of a document, in order."""
        got = self.collection.get(where={DOC_ID: doc_id}, include=["documents", "metadatas"])
        sents = [sentence_from_metadata(t or "", md) for t, md in zip(got["documents"], got["metadatas"], strict=True)]
        return sorted(sents, key=lambda s: s.index)

    def document_embeddings(self, doc_id: str) -> tuple[list[Sentence], np.ndarray]:
        """All stored sentences of a document and their vectors, in order."""
        got = self.collection.get(where={DOC_ID: doc_id}, include=["documents", "metadatas", "embeddings"])
        pairs = sorted(
            (
                (sentence_from_metadata(t or "", md), np.asarray(v, dtype=np.float32))
                for t, md, v in zip(got["documents"], got["metadatas"], got["embeddings"], strict=True)
            ),
            key=lambda p: p[0].index,
        )
        if not pairs:
            return [], np.zeros((0, 0), dtype=np.float32)
        return [p[0] for p in pairs], np.stack([p[1] for p in pairs])


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
    "StoreMismatchError",
    "content_hash",
    "make_client",
]
