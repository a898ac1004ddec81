"""The store's reads: nearest neighbours, records by id, sentences by document.

Every reader of a store goes through these few methods (search, expansion, re-scoring,
rendering, the framework adapters, the lexical index), so the one rule of what readers see
is applied in one place: a sentence is shown when the manifest makes it visible
(``store/manifest.py``), i.e. a document being written, or the replaced version of one, is
never returned. ``hidden=True`` (where offered) reads records as stored instead, every
version, as a framework reading the collection raw sees them; :meth:`visible_hits` applies
the rule to such reads afterwards.

Records come back as the package's own types: a :class:`~landmark_rag.types.Hit` (sentence,
score, stored metadata) for a record, an :class:`~landmark_rag.types.EncodedDocument`
(sentences and their vectors, what ``add_document`` writes) for a document read back.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from landmark_rag.store.client import Collections, store_errors
from landmark_rag.store.doc_metadata import DocumentTable
from landmark_rag.store.manifest import Manifest, is_visible
from landmark_rag.store.protocols import Where
from landmark_rag.store.schema import (
    COMPLETE,
    DOC_ID,
    INDEX,
    N_SENTENCES,
    STATE,
    VERSION,
    documents_named,
    parse_sentence_key,
    sentence_from_metadata,
    sentence_id,
    sentence_key,
)
from landmark_rag.types import EncodedDocument, Hit

#: Most sentence ids a vector search names instead of a ``doc_id`` filter: past a few thousand,
#: looking ids up costs about what Chroma's metadata filter does. (Hybrid search turns a metadata
#: filter into documents up to this many sentences: ``retrieve/ranking.py``.)
SCOPE_IDS = 10_000

#: Most sentence ids a vector search scores itself, their vectors read by id. Chroma's search
#: over a list of allowed ids walks its HNSW graph until enough of them turn up, so the fewer
#: there are, the more of the graph it walks: at 60,000 sentences 25 ms for 50 ids, 17 ms for
#: 200, 7 ms for 1,000, against 1 ms unfiltered. Reading vectors costs about 25 us each
#: (1.3 ms for 50, 6 ms for 200), so below a few hundred ids reading them is the cheaper.
_EXACT_IDS = 300

#: ``(doc_id, index) -> (record id, text, metadata, vector or None)``: records read by address.
_Found = dict[tuple[str, int], tuple[str, str, dict[str, Any], Any]]


class SentenceReads:
    """The read half of :class:`~landmark_rag.store.ChromaSentenceStore` (see the module docstring)."""

    _io: Collections
    _manifest: Manifest

    # ------------------------------------------------------------------ nearest neighbours
    def nearest(self, vector: np.ndarray, n: int, *, where: Where | None = None, hidden: bool = False) -> list[Hit]:
        """The top-``n`` sentences by cosine similarity as hits, best first, records included.

        A plain read: fewer than ``n`` come back when some of the top ``n`` belong to a
        document being written (or the store holds fewer); a search that needs more asks
        again (``retrieve/search.py``). With ``hidden`` every version is returned, so a
        caller can tell "the store has no more" (fewer than ``n``) from "some were hidden"
        and filter with :meth:`visible_hits` itself (a filter on ``doc_id`` reads the visible
        versions of its documents by id, so their hidden ones are not read: see :meth:`_query`).

        No ``count()`` first: Chroma returns fewer than ``n_results`` when it has fewer, and
        a count is a read of its own on every query.
        """
        self._io.fresh()
        if n <= 0:
            return []
        got, scoped = self._query(vector, n, where, ["documents", "metadatas", "distances"])
        # A record that another process deletes between Chroma's vector search and its read
        # of the rows comes back with no metadata. Only records readers no longer see are
        # deleted (a replaced version, a removed document), so it is dropped like a hidden
        # one (a search in that instant may return one hit fewer; it must never fail).
        hits = [
            Hit(sentence_from_metadata(text or "", md), self._similarity(float(dist)), dict(md))
            for text, md, dist in zip(got["documents"][0], got["metadatas"][0], got["distances"][0], strict=True)
            if md is not None
        ]
        if scoped:  # read by the ids of the versions the manifest named: every one was visible
            return _Visible(hits)
        return hits if hidden else self.visible_hits(hits)

    def nearest_ids(self, vector: np.ndarray, n: int, *, where: Where | None = None) -> list[tuple[str, float]]:
        """Top-``n`` sentence keys ``doc_id:index`` with their cosine similarity, nothing else read.

        The cheap first stage of a hybrid search (ids and distances only: a tenth of the cost
        of reading 100 records' text and metadata); visibility is checked later, on the few
        records :meth:`read_ids` reads. Pairs rather than hits: no record is read to make one.
        """
        n = int(n)  # Chroma clamps n_results to what it holds; no count() needed
        if n <= 0:
            return []
        with store_errors("searching"):
            got, _ = self._query(vector, n, where, ["distances"])
        out: list[tuple[str, float]] = []
        seen: set[str] = set()
        for rid, dist in zip(got["ids"][0], got["distances"][0], strict=True):
            key = sentence_key(rid)  # two versions of one sentence (mid-replace) are one candidate
            if key not in seen:
                seen.add(key)
                out.append((key, self._similarity(float(dist))))
        return out

    def _query(self, vector: np.ndarray, n: int, where: Where | None, include: list[str]) -> tuple[Any, bool]:
        """Chroma's top-``n`` vector search, a filter that names documents read by their ids;
        and whether it was read by ids (every record then of a version the manifest names).

        Chroma evaluates a metadata filter by scanning the metadata of the whole collection
        (about 15 ms at 60,000 sentences, against 2 ms for the unfiltered search); the ids of a
        document's visible sentences follow from its manifest record, and Chroma looks ids up
        by key. The answer is the same: those ids are exactly the sentences of the filter's
        documents a reader may see (the hidden ones a ``where`` would also return are dropped
        by every reader). A few ids (a document or two, :data:`_EXACT_IDS`) are scored here
        instead (:meth:`_exact_query`): Chroma's search over a list of ids is slowest for the
        shortest lists. A filter this cannot turn into ids alone (:meth:`_scope_ids`), or an id
        gone since the manifest was read (Chroma fails the whole query then), takes Chroma's
        filter.
        """
        args: dict[str, Any] = {
            "query_embeddings": [np.asarray(vector, dtype=np.float32)], "n_results": int(n), "include": include,
        }
        scoped = self._scope_ids(where)
        if scoped is not None:
            # any failure: the filter below answers the same query, or raises what is wrong
            with contextlib.suppress(Exception):
                if len(scoped) <= _EXACT_IDS:
                    return self._exact_query(vector, int(n), scoped, include), True
                return self._io.collection.query(**args, ids=scoped), True
        return self._io.collection.query(**args, where=where), False

    def _exact_query(self, vector: np.ndarray, n: int, ids: list[str], include: list[str]) -> Any:
        """:meth:`_query` over a few ids (:data:`_EXACT_IDS`), scored here: their vectors read
        by id, the distances Chroma's space gives, the ``n`` nearest read with what ``include``
        asks for; an answer shaped as ``collection.query``'s.

        Exact where Chroma's graph search is approximate; over a short list of allowed ids
        that search checks every one of them anyway, so the two agree (up to float rounding).
        An id gone since the manifest was read is simply not found, as Chroma's filter would
        not find it. Ties go to the earlier id of the list (document order).
        """
        got = self._io.collection.get(ids=ids, include=["embeddings"])
        found = list(got["ids"])
        vectors = np.asarray(got["embeddings"] if found else np.zeros((0, 0)), dtype=np.float32)
        dist = distances(vectors.reshape(len(found), -1), np.asarray(vector, dtype=np.float32), _space(self._io.collection))
        # Chroma answers in its own order; put the found ids back in the list's, for the ties
        position = {rid: i for i, rid in enumerate(ids)}
        listed = np.asarray([position.get(r, len(ids)) for r in found], dtype=np.int64)
        order = [int(i) for i in np.lexsort((listed, dist))[:n]]
        top = [found[i] for i in order]
        out: dict[str, Any] = {"ids": [top], "distances": [[float(dist[i]) for i in order]]}
        wanted = [part for part in ("documents", "metadatas") if part in include]
        if wanted:
            rows = self._io.collection.get(ids=top, include=wanted) if top else {"ids": []}
            at = {rid: j for j, rid in enumerate(rows["ids"])}
            for part in wanted:
                # a record deleted between the two reads has no metadata: callers drop it
                values = rows.get(part) or []
                out[part] = [[values[at[rid]] if rid in at else None for rid in top]]
        return out

    def _scope_ids(self, where: Where | None) -> list[str] | None:
        """The visible sentence ids of the documents ``where`` names through ``doc_id``, or of
        those a metadata filter selects (:class:`~landmark_rag.store.doc_metadata.DocumentTable`:
        a filter on metadata a document's sentences share); ``None`` when it selects none that
        way, or one whose ids the manifest does not give (no record, no version: another tool's
        or an old write), or more than :data:`SCOPE_IDS`. Never ids plus the rest of a filter:
        Chroma given both ids and a filter is slower than given the filter alone (at 60,000
        sentences, 150-450 ms against 20 ms)."""
        if not where or not self._manifest.present:
            return None
        docs, rest = documents_named(where)
        if not docs or rest is not None:
            # the documents a metadata filter selects, from the metadata their sentences share
            return self._documents_table().sentence_ids(where, most=SCOPE_IDS)
        records = self._manifest.records(docs)
        ids: list[str] = []
        for d in docs:
            rec = records.get(d)
            if rec is None or (rec.get(STATE) == COMPLETE and not (rec.get(VERSION) and isinstance(rec.get(N_SENTENCES), int))):
                return None
            if rec.get(STATE) == COMPLETE:  # a document being written for the first time shows nothing
                ids += [sentence_id(d, i, str(rec[VERSION])) for i in range(int(rec[N_SENTENCES]))]
            if len(ids) > SCOPE_IDS:
                return None
        return ids or None

    def _documents_table(self) -> DocumentTable:
        """The per-document metadata that turns a metadata filter into sentence ids, made on the
        first such filter (``store/doc_metadata.py``): an unfiltered search never pays for it."""
        table: DocumentTable | None = self.__dict__.get("_doc_table")
        if table is None:
            table = self.__dict__.setdefault("_doc_table", DocumentTable(self._io, self._manifest))
        return table

    def visible_hits(self, hits: Sequence[Hit]) -> list[Hit]:
        """The hits a reader may see, e.g. from a framework's own search or a ``hidden`` read.

        A framework retriever reads the collection raw: while a document is being replaced
        (or after a killed write, before the next run) it can return sentences of a version
        that is not the visible one. Hits :meth:`nearest` read by the ids of the versions the
        manifest named a moment before come back as they are (no second manifest read: they
        were what readers saw when the query was read, as a plain read's are when checked).
        """
        if isinstance(hits, _Visible):
            return list(hits)
        self._io.fresh()
        return self._manifest.visible(list(hits))

    # ------------------------------------------------------------------ by id
    def read_ids(
        self, ids: Sequence[str], scores: Sequence[float] | None = None, *,
        where: Where | None = None, hidden: bool = False,
    ) -> dict[str, Hit]:
        """The records ``ids`` name, as hits by the id asked for, in the order of ``ids``.

        ``ids`` are sentence keys ``doc_id:index`` (as :meth:`nearest_ids` and the lexical
        index give them: the record of the version readers see is read) or, for records
        written without that form (another tool) or a framework's versioned record ids, record
        ids as stored. Records that are gone, fail ``where`` or are hidden are left out. A hit
        scores ``scores[i]`` (``0.0`` without ``scores``): a ranking read back in one call.

        With ``hidden`` the ids are read as record ids only, of whatever version, as a
        framework that holds ids it read raw sees them (:meth:`visible_hits` drops the
        hidden ones afterwards).
        """
        ids = list(ids)
        if scores is not None and len(scores) != len(ids):
            raise ValueError("ids and scores differ in length")
        if not ids:
            return {}
        if hidden:
            self._io.fresh()
            with store_errors("reading sentences"):
                got = self._io.collection.get(ids=list(dict.fromkeys(ids)), where=where,
                                              include=["documents", "metadatas"])
            found = {rid: (text or "", dict(md or {}))
                     for rid, text, md in zip(got["ids"], got["documents"], got["metadatas"], strict=True)}
        else:
            found = self._visible_by_keys(ids, where)
        score = dict(zip(ids, scores, strict=True)) if scores is not None else {}
        return {
            k: Hit(sentence_from_metadata(found[k][0], found[k][1]), float(score.get(k, 0.0)), dict(found[k][1]))
            for k in ids if k in found
        }

    def _visible_by_keys(self, keys: Sequence[str], where: Where | None) -> dict[str, tuple[str, dict[str, Any]]]:
        """``key -> (text, metadata)`` of the visible records named by ``keys``."""
        wanted: dict[str, set[int]] = {}
        for key in keys:
            addr = parse_sentence_key(key)
            if addr is not None:
                wanted.setdefault(addr[0], set()).add(addr[1])
        out: dict[str, tuple[str, dict[str, Any]]] = {}
        include = ["documents", "metadatas"]
        for (d, i), (_, text, md, _) in self._read_addresses(wanted, include, False, where).items():
            out[sentence_id(d, i)] = (text, md)
        rest = [k for k in dict.fromkeys(keys) if k not in out]
        if rest:  # records of other tools, whose ids are not keys
            with store_errors("reading sentences"):
                got = self._io.collection.get(ids=rest, where=where, include=include)
            texts = got.get("documents") or [""] * len(got["ids"])
            hits = [
                Hit(sentence_from_metadata(t or "", md or {}), 0.0, dict(md or {}))
                for t, md in zip(texts, got["metadatas"], strict=True)
            ]
            keep = {id(h) for h in self._manifest.visible(hits)}
            for rid, t, h in zip(got["ids"], texts, hits, strict=True):
                if id(h) in keep:
                    out[rid] = (t or "", h.metadata)
        return out

    # ------------------------------------------------------------------ by document
    def read_documents(
        self, requests: Mapping[str, Iterable[int] | None], *, embeddings: bool = False
    ) -> dict[str, EncodedDocument]:
        """The visible sentences of several documents (and their vectors) in **one** read.

        ``requests`` maps a document id to the sentence indices wanted, or to ``None`` for all
        of them. Each answer is an :class:`EncodedDocument` of the sentences found, in index
        order (missing indices are simply absent), and with ``embeddings`` their stored
        vectors row by row (else a ``(n, 0)`` array); its ``text`` is ``""`` (the full text,
        when stored, is ``document_text``). The expansion of a query's hits reads all their
        neighbours through this, so a query costs one read however many documents its hits
        fall in (docs/benchmarks.md, "Query latency").
        """
        wanted: dict[str, set[int] | None] = {
            str(d): None if idx is None else {int(i) for i in idx if int(i) >= 0} for d, idx in requests.items()
        }
        include = ["documents", "metadatas"] + (["embeddings"] if embeddings else [])
        rows: dict[str, list[tuple[Any, Any]]] = {d: [] for d in wanted}
        for (d, _), (_, text, md, vec) in sorted(self._read_addresses(wanted, include, embeddings).items()):
            rows[d].append((sentence_from_metadata(text, md), vec))
        out: dict[str, EncodedDocument] = {}
        for d, found in rows.items():
            sentences = [s for s, _ in found]
            if embeddings and found:
                vecs = np.stack([v for _, v in found]).astype(np.float32, copy=False)
            else:
                vecs = np.zeros((len(found), 0), dtype=np.float32)
            out[d] = EncodedDocument("", sentences, vecs, d)
        return out

    def read_document(
        self, doc_id: str, indices: Iterable[int] | None = None, *, embeddings: bool = False
    ) -> EncodedDocument:
        """One document's visible sentences (``indices``, else all) as :meth:`read_documents` reads them."""
        return self.read_documents({doc_id: indices}, embeddings=embeddings)[str(doc_id)]

    def _read_addresses(
        self, wanted: Mapping[str, set[int] | None], include: list[str], embeddings: bool,
        where: Where | None = None,
    ) -> _Found:
        """Visible records at ``(doc_id, index)`` addresses (``None``: every index), all documents
        in **one** read of the sentences (plus one small manifest read).

        Record ids carry the write's version (``doc_id:index@VERSION``); the manifest says which
        version readers see (while a document is replaced both are stored), so a complete
        document's records are read by id. Records without that form, and whole documents
        (the manifest's count is not trusted to name every record), are found by metadata.
        """
        docs = sorted(d for d, idx in wanted.items() if idx is None or idx)
        if not docs:
            return {}
        self._io.fresh()
        records = self._manifest.records(docs)
        out: _Found = {}
        # A completely stored, versioned document: the ids of its visible records follow from
        # the manifest's version, and a read by id is a key lookup where the metadata filter
        # below scans the collection. Everything else (documents without a manifest entry,
        # written before versions existed, or being written) takes the filter.
        by_id = {d: str(records[d][VERSION]) for d in docs if wanted[d] is not None
                 and records.get(d, {}).get(STATE) == COMPLETE and records[d].get(VERSION)}
        if by_id:
            ids = [sentence_id(d, i, v) for d, v in by_id.items() for i in sorted(wanted[d] or ())]
            with store_errors("reading sentences"):
                got = self._io.collection.get(ids=ids, where=where, include=include)
            _collect(got, wanted, records, embeddings, out)
            for d in list(by_id):  # a record missing under its id (written outside the protocol,
                n = records[d].get(N_SENTENCES)  # ids kept, version changed): read by metadata
                if any((d, i) not in out for i in wanted[d] or () if not isinstance(n, int) or i < n):
                    del by_id[d]
        rest = [d for d in docs if d not in by_id]
        if not rest:
            return out
        parts: list[Where] = [{DOC_ID: rest[0]} if len(rest) == 1 else {DOC_ID: {"$in": rest}}]
        if all(wanted[d] is not None for d in rest):
            all_idx = sorted({i for d in rest for i in wanted[d] or ()})
            if len(all_idx) <= 256:
                parts.append({INDEX: {"$in": all_idx}})
        if where:
            parts.append(where)
        query = parts[0] if len(parts) == 1 else {"$and": parts}
        with store_errors("reading sentences"):
            got = self._io.collection.get(where=query, include=include)
        _collect(got, {d: wanted[d] for d in rest}, records, embeddings, out)
        return out

    # ------------------------------------------------------------------ raw, for derived indexes
    def scan(
        self, doc_ids: Sequence[str] | None = None, *, text: bool = False, page: int = 10_000
    ) -> Iterator[tuple[str, str, dict[str, Any]]]:
        """``(record id, text, metadata)`` of every stored record of ``doc_ids`` (``None``: of the
        whole store, ``page`` records per read), every version, exactly as stored.

        For an index derived from the store (``store/lexical.py``): it applies the visibility
        rule itself against the manifest it read earlier (its snapshot must match that one,
        not a newer one), keys documents of other tools by their record ids, and must not
        fail on a record that is no landmark sentence - so no :class:`Hit` is made here.
        ``text=False`` reads metadata only (``text`` is ``""``).
        """
        include = ["documents", "metadatas"] if text else ["metadatas"]
        self._io.fresh()
        if doc_ids is not None:
            if not doc_ids:
                return
            where = {DOC_ID: {"$in": list(doc_ids)}} if len(doc_ids) > 1 else {DOC_ID: doc_ids[0]}
            with store_errors("reading sentences"):
                got = self._io.collection.get(where=where, include=include)
            yield from _rows(got)
            return
        offset = 0
        while True:
            with store_errors("reading sentences"):
                got = self._io.collection.get(include=include, limit=page, offset=offset)
            yield from _rows(got)
            if len(got["ids"]) < page:
                return
            offset += page

    # ------------------------------------------------------------------ helpers
    def _similarity(self, distance: float) -> float:
        """Cosine similarity from Chroma's distance, whatever space the collection uses.

        Our collections use ``cosine``; LlamaIndex's ``ChromaVectorStore`` creates ``l2``
        (squared L2, which is ``2 - 2 cos`` for unit vectors) and others may use ``ip``.
        """
        if _space(self._io.collection) == "l2":
            return 1.0 - distance / 2.0
        return 1.0 - distance  # cosine and ip distances are both 1 - <a, b>


class _Visible(list[Hit]):
    """Hits :meth:`SentenceReads.nearest` read by the ids of the visible versions (a filter
    naming documents, or one the documents table decides): :meth:`SentenceReads.visible_hits`
    returns them without reading the manifest again (a search within a document saves a
    manifest read, about a millisecond, a tenth of its cost). A copy or a slice is a plain
    list, checked as any other."""


def _collect(
    got: Mapping[str, Any], wanted: Mapping[str, set[int] | None], records: Mapping[str, dict[str, Any]],
    embeddings: bool, out: _Found,
) -> None:
    """Add the visible records of a ``collection.get`` answer that ``wanted`` names to ``out``."""
    mds = [dict(md or {}) for md in got["metadatas"]]
    vecs = got.get("embeddings") if embeddings else None
    texts = got.get("documents") or [""] * len(got["ids"])
    for j, (rid, text, md) in enumerate(zip(got["ids"], texts, mds, strict=True)):
        d, i = str(md.get(DOC_ID)), int(md.get(INDEX, -1))
        if d not in wanted:
            continue
        indices = wanted[d]
        if indices is not None and i not in indices:
            continue
        rec = records.get(d)
        if rec is not None and not is_visible(md, rec):
            continue
        vec = np.asarray(vecs[j], dtype=np.float32) if vecs is not None else None
        out[(d, i)] = (rid, text or "", md, vec)


def _rows(got: Mapping[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    texts = got.get("documents") or [""] * len(got["ids"])
    for rid, text, md in zip(got["ids"], texts, got["metadatas"], strict=True):
        yield rid, text or "", dict(md or {})


def distances(vectors: np.ndarray, query: np.ndarray, space: str) -> np.ndarray:
    """Chroma's distance of each row of ``vectors`` from ``query`` in ``space``: ``cosine``
    ``1 - cos``, ``l2`` the squared Euclidean distance, ``ip`` ``1 - <a, b>`` (float32, as
    Chroma computes them)."""
    if vectors.size == 0:
        return np.zeros(len(vectors), dtype=np.float32)
    if space == "cosine":
        norms = np.linalg.norm(vectors, axis=1) * np.float32(np.linalg.norm(query))
        return np.float32(1) - (vectors @ query) / np.where(norms > 0, norms, np.float32(1))
    if space == "l2":
        diff = vectors - query
        return np.einsum("ij,ij->i", diff, diff)
    return np.float32(1) - vectors @ query


def _space(collection: Any) -> str:
    config = getattr(collection, "configuration_json", None) or {}
    hnsw = config.get("hnsw") or {}
    return str(hnsw.get("space") or (collection.metadata or {}).get("hnsw:space") or "l2")


__all__ = ["SCOPE_IDS", "SentenceReads", "Where", "distances"]
