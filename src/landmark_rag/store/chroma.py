"""Sentence vectors in Chroma (step 3 of the pipeline): :class:`ChromaSentenceStore`.

The store is a facade over three jobs, one module each: talking to Chroma and re-opening a
folder another process wrote (``store/client.py``), the manifest's write protocol and the
rule for what readers see (``store/manifest.py``), and the model identity
(``store/identity.py``). What lives here is the store's own reading: searches, sentences
by address or key, and whole documents, each showing only what the manifest makes visible.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
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
from landmark_rag.store.manifest import Manifest, is_complete, is_visible
from landmark_rag.store.schema import (
    COMPLETE,
    DOC_HASH,
    DOC_ID,
    INDEX,
    N_SENTENCES,
    STATE,
    VERSION,
    content_hash,
    flat_metadata,
    parse_sentence_key,
    sentence_from_metadata,
    sentence_id,
    sentence_key,
    sentence_metadata,
)
from landmark_rag.types import EncodedDocument, Hit, Sentence


class ChromaSentenceStore:
    """Read and write landmark-encoded documents in a Chroma collection.

    ``collection`` holds one record per sentence; ``manifest`` (``None`` for a collection
    written without one) one record per document (``store/manifest.py``).
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
        return rec[DOC_HASH] if is_complete(rec) else None

    def document_text(self, doc_id: str) -> str | None:
        """The full text stored with a document, if it was stored."""
        self._io.fresh()
        return self._manifest.text(doc_id)

    def count_sentences(self) -> int:
        """Sentences stored, of every version (while a document is replaced: both)."""
        self._io.fresh()
        with store_errors("counting sentences"):
            return int(self._io.collection.count())

    def document_records(self, doc_ids: Sequence[str]) -> list[tuple[str, str, dict[str, Any]]]:
        """Every stored record ``(id, text, metadata)`` of ``doc_ids``, of every version.

        For readers that apply the visibility rule themselves against a manifest they read
        earlier (the lexical index keeps the version it read, ``store.manifest.version_key``).
        """
        if not doc_ids:
            return []
        self._io.fresh()
        where = {DOC_ID: {"$in": list(doc_ids)}} if len(doc_ids) > 1 else {DOC_ID: doc_ids[0]}
        with store_errors("reading sentences"):
            got = self._io.collection.get(where=where, include=["documents", "metadatas"])
        return [(rid, text or "", dict(md or {}))
                for rid, text, md in zip(got["ids"], got["documents"], got["metadatas"], strict=True)]

    def records_by_id(self, ids: Sequence[str]) -> list[tuple[str, str, dict[str, Any]]]:
        """The stored records ``(id, text, metadata)`` of these record ids, of whatever version.

        For a framework that holds record ids it read raw; it drops the versions readers must
        not see afterwards (:meth:`visible_hits`), as for hits from its own search.
        """
        if not ids:
            return []
        self._io.fresh()
        with store_errors("reading sentences"):
            got = self._io.collection.get(ids=list(ids), include=["documents", "metadatas"])
        return [(rid, text or "", dict(md or {}))
                for rid, text, md in zip(got["ids"], got["documents"], got["metadatas"], strict=True)]

    def iter_metadata(self, page: int = 10_000) -> Iterator[tuple[str, dict[str, Any]]]:
        """``(id, metadata)`` of every stored sentence record, read ``page`` records at a time."""
        self._io.fresh()
        offset = 0
        while True:
            with store_errors("reading sentences"):
                got = self._io.collection.get(include=["metadatas"], limit=page, offset=offset)
            for rid, md in zip(got["ids"], got["metadatas"], strict=True):
                yield rid, dict(md or {})
            if len(got["ids"]) < page:
                return
            offset += page

    # ------------------------------------------------------------------ reading
    def query(self, vector: np.ndarray, k: int, *, where: dict[str, Any] | None = None) -> list[Hit]:
        """The visible hits among the top-``k`` sentences by cosine similarity.

        A plain read: fewer than ``k`` come back when some of the top ``k`` belong to a
        document being written (or the store holds fewer); a search that needs more asks
        again (``retrieve/search.py``).
        """
        return self.visible_hits(self.top(vector, k, where=where))

    def top(self, vector: np.ndarray, n: int, *, where: dict[str, Any] | None = None) -> list[Hit]:
        """The top-``n`` sentence records by cosine similarity, of every version (what a
        framework's own search reads; :meth:`visible_hits` keeps what readers may see).

        No ``count()`` first: Chroma returns fewer than ``n_results`` when it has fewer, so
        fewer than ``n`` records means the store has no more; a count is a read of its own
        on every query.
        """
        self._io.fresh()
        if n <= 0:
            return []
        got = self.collection.query(
            query_embeddings=[np.asarray(vector, dtype=np.float32)], n_results=int(n), where=where,
            include=["documents", "metadatas", "distances"],
        )
        # A record that another process deletes between Chroma's vector search and its read
        # of the rows comes back with no metadata. Only records readers no longer see are
        # deleted (a replaced version, a removed document), so it is dropped like a hidden
        # one (a search in that instant may return one hit fewer; it must never fail).
        return [
            Hit(sentence_from_metadata(text or "", md), self._similarity(float(dist)), dict(md))
            for text, md, dist in zip(got["documents"][0], got["metadatas"][0], got["distances"][0], strict=True)
            if md is not None
        ]

    def query_ids(self, vector: np.ndarray, n: int, *, where: dict[str, Any] | None = None) -> list[tuple[str, float]]:
        """Top-``n`` sentence keys ``doc_id:index`` with their cosine similarity, nothing else read.

        The cheap first stage of a hybrid search (ids and distances only: a tenth of the cost
        of reading 100 records' text and metadata); visibility is checked later, on the few
        records :meth:`hits_by_ids` reads.
        """
        n = int(n)  # Chroma clamps n_results to what it holds; no count() needed
        if n <= 0:
            return []
        with store_errors("searching"):
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
            with store_errors("reading sentences"):
                got = self.collection.get(ids=rest, where=where, include=include)
            texts = got.get("documents") or [""] * len(got["ids"])
            hits = [
                Hit(sentence_from_metadata(t or "", md or {}), 0.0, dict(md or {}))
                for t, md in zip(texts, got["metadatas"], strict=True)
            ]
            keep = {id(h) for h in self._manifest.visible(hits)}
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
        self._io.fresh()
        return self._manifest.visible(list(hits))

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
        self._io.fresh()
        records = self._manifest.records(docs)
        out: dict[tuple[str, int], tuple[str, str, dict[str, Any], Any]] = {}
        # A completely stored, versioned document: the ids of its visible records follow from
        # the manifest's version, and a read by id is a key lookup where the metadata filter
        # below scans the collection. Everything else (documents without a manifest entry,
        # written before versions existed, or being written) takes the filter.
        by_id = {d: str(records[d][VERSION]) for d in docs
                 if records.get(d, {}).get(STATE) == COMPLETE and records[d].get(VERSION)}
        if by_id:
            ids = [sentence_id(d, i, v) for d, v in by_id.items() for i in sorted(wanted[d])]
            with store_errors("reading sentences"):
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
        with store_errors("reading sentences"):
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
            if rec is not None and not is_visible(md, rec):
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
        self._io.fresh()
        with store_errors(f"reading document {doc_id!r}"):
            got = self.collection.get(where=where, include=include)
        mds = [dict(md or {}) for md in got["metadatas"]]
        rec: dict[str, Any] | None = None
        if any(VERSION in md for md in mds) and self._manifest.present:
            rec = self._manifest.records([doc_id]).get(doc_id)
        vecs = got.get("embeddings") if embeddings else None
        out = []
        for j, (rid, text, md) in enumerate(zip(got["ids"], got["documents"], mds, strict=True)):
            if rec is not None and not is_visible(md, rec):
                continue
            vec = np.asarray(vecs[j], dtype=np.float32) if vecs is not None else None
            out.append((rid, text or "", md, vec))
        return out


def _space(collection: Any) -> str:
    config = getattr(collection, "configuration_json", None) or {}
    hnsw = config.get("hnsw") or {}
    return str(hnsw.get("space") or (collection.metadata or {}).get("hnsw:space") or "l2")



__all__ = ["ChromaSentenceStore"]
