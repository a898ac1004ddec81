"""Sentence-level BM25 beside the vector store (step 3 of the pipeline, lexical half).

Chroma 1.5 has no ranked full-text search outside Chroma Cloud: sparse-vector indexes and the
``Search``/``Rrf`` API are refused by ``PersistentClient`` *and* by a local ``chroma run``
server ("Sparse vector indexing is not enabled in local", "Search is not implemented for
Local Chroma"), and ``where_document={"$contains": ...}`` filters without ranking. So the
lexical index is the package's BM25 (``store/bm25.py``: Lucene variant, k1 1.5 and b 0.75
unless the model's fusion sets others) over
terms from ``store/analyzer.py`` (stop-word lists from bm25s, Snowball stemming from
PyStemmer), over exactly the stored sentence units, same ids ``doc_id:index``.

It is a **derived cache of the store, keyed by the manifest**, never a second source of truth:

- it indexes the sentences of documents the manifest marks ``complete`` (their content hash
  recorded per document); a document being written is therefore invisible to both halves;
- :meth:`StoreLexicalIndex.sync` compares the manifest with the cached hashes and re-reads only
  the documents that were added, replaced or deleted, then re-builds the BM25 matrix from the
  cached terms (about a second at 100k sentences); any crash just leaves an older cache that
  the next sync repairs, so nothing is ever half-updated;
- every lexical hit is re-read from Chroma by id and passes the same visibility check as a
  vector hit (manifest ``complete`` and same content hash), so a stale cache can miss a fresh
  document but can never return text the store does not hold;
- a local store persists the cache beside it, a server store keeps it in memory
  (``store/lexical_cache.py``).

Writers need to know nothing about it: anything that writes through the store protocol (the
CLI, ``landmark_rag.ingest``, Ray workers, another process) is picked up by the next sync.
Each query checks two cheap counts (manifest and sentences) and syncs when they moved;
:meth:`StoreLexicalIndex.refresh` forces a full comparison (e.g. after a same-size replace).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from landmark_rag.store.analyzer import ANALYZER_VERSION, language_name, make_analyzer
from landmark_rag.store.bm25 import DEFAULT_B, DEFAULT_K1, BM25Index, check_parameters, ranked_rows
from landmark_rag.store.lexical_cache import FORMAT, LEXICAL_DIR, DocTerms, LexicalCache, Snapshot, cache_folder
from landmark_rag.store.lexical_filter import shared_metadata
from landmark_rag.store.manifest import is_complete, is_current, version_key
from landmark_rag.store.schema import DOC_ID, INDEX, N_SENTENCES, VERSION, chroma_where, sentence_id
from landmark_rag.types import Hit

_SCANNED = "scan:"  # key prefix of documents without a manifest record


class StoreLexicalIndex:
    """BM25 over the sentences of a :class:`~landmark_rag.store.ChromaSentenceStore`.

    ``language`` picks stemming and stop words (``english`` default; ISO codes accepted;
    ``none`` for neither); scripts without spaces are indexed as character uni- and bigrams
    in every language (see :mod:`landmark_rag.store.analyzer`). ``context``: the share of the
    preceding sentence's score each sentence adds to its own (``BM25Index.scores``; 0: each
    sentence alone); it changes scores, not the cache. ``k1`` / ``b``: the BM25 parameters
    (``store.bm25``), which shape the matrix built from the cached terms, not the cache. ``cache_dir``: where the
    cache lives; ``None`` -> beside a local store, in memory for a server; ``False`` -> in
    memory always.
    """

    def __init__(
        self,
        store: Any,
        *,
        language: str | None = "english",
        context: float = 0.0,
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
        cache_dir: str | os.PathLike[str] | bool | None = None,
        show_progress: bool = False,
    ) -> None:
        if not 0.0 <= float(context) <= 1.0:
            raise ValueError(f"lexical context must lie in [0, 1], not {context!r}")
        check_parameters(k1, b)
        self.k1, self.b = float(k1), float(b)
        self.store = store
        self.language = language_name(language)
        self.context = float(context)
        self.analyze = make_analyzer(self.language)
        self.show_progress = show_progress
        self.cache_dir = cache_folder(store, cache_dir)
        self._cache = LexicalCache(self.cache_dir, self._signature(), k1=self.k1, b=self.b)
        self._snap: Snapshot | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ state
    def _signature(self) -> dict[str, Any]:
        return {"format": FORMAT, "analyzer": ANALYZER_VERSION, "language": self.language}

    def _counts(self) -> tuple[Any, ...]:
        """What tells that the store changed: the manifest's generation token (bumped by every
        completed or deleted document); for a store without one (written without a manifest,
        or before generations existed), the manifest and sentence counts."""
        generation = self.store.generation()
        if generation is not None:
            return (generation,)
        documents = self.store.count_documents()
        return (None, documents if documents is not None else -1, int(self.store.count_sentences()))

    def __len__(self) -> int:
        return len(self.snapshot().index)

    def snapshot(self) -> Snapshot:
        """The current state, syncing first when the store's counts moved since the last sync."""
        snap = self._snap
        if snap is None or snap.counts != self._counts():
            return self.sync()
        return snap

    def refresh(self) -> Snapshot:
        """Compare every document with the manifest now (catches same-size replacements)."""
        return self.sync(force=True)

    def sync(self, *, force: bool = False) -> Snapshot:
        """Bring the index in line with the store; re-reads only changed documents."""
        with self._lock:
            snap = self._snap
            if snap is None:
                snap = self._cache.load()
            counts = self._counts()
            if snap is not None and snap.counts == counts and not force and self._snap is not None:
                return snap
            wanted = self._wanted()
            old = snap.docs if snap is not None else {}
            vocab = dict(snap.vocab) if snap is not None else {}
            docs = {d: doc for d, doc in old.items() if d in wanted and doc.key == wanted[d].key}
            todo = [d for d in wanted if d not in docs]
            if todo or len(docs) != len(old) or snap is None:
                docs.update(self._read(todo, wanted, vocab))
                snap = Snapshot.build(docs, vocab, counts, k1=self.k1, b=self.b)
                self._cache.save(snap)
            elif snap.counts != counts:
                snap = Snapshot(snap.docs, snap.vocab, counts, snap.index)
                self._cache.save(snap)
            self._snap = snap
            return snap

    def _wanted(self) -> dict[str, _Wanted]:
        """Documents the index should hold: ``doc_id -> (key, expected number of sentences,
        manifest record)``.

        The key is the committed ``doc_version`` (records written before versions existed,
        and sentences adopted without one: the ``doc_hash``); only the sentences of that
        version are indexed.
        """
        manifest_docs = self.store.documents(include_incomplete=True)
        wanted = {
            d: _Wanted(version_key(md), int(md[N_SENTENCES]) if N_SENTENCES in md else None, md)
            for d, md in manifest_docs.items()
            if is_complete(md)
        }
        expected = sum(w.sentences or 0 for w in wanted.values())
        writing = len(wanted) != len(manifest_docs)
        if not self.store.has_manifest or (not writing and self.store.count_sentences() != expected):
            # sentences written without a manifest (e.g. LlamaIndex's ChromaVectorStore): read
            # their metadata once and key each such document by a hash of its records
            for d, key in _scan_foreign(self.store.scan(), set(manifest_docs)).items():
                wanted[d] = _Wanted(_SCANNED + key, None, None)
        return wanted

    def _read(
        self, doc_ids: Sequence[str], wanted: dict[str, _Wanted], vocab: dict[str, int]
    ) -> dict[str, DocTerms]:
        """Read and analyse the sentences of ``doc_ids`` from the store."""
        out: dict[str, DocTerms] = {}
        if not doc_ids:
            return out
        from tqdm.auto import tqdm

        bar = tqdm(total=len(doc_ids), desc="lexical index", unit="doc", disable=not self.show_progress)
        step = 64
        for i in range(0, len(doc_ids), step):
            batch = list(doc_ids[i : i + step])
            per: dict[str, list[tuple[int, str, str, dict[str, Any]]]] = {d: [] for d in batch}
            for sid, text, md in self.store.scan(batch, text=True):
                d = str(md.get(DOC_ID))
                if d not in per:
                    continue
                record = wanted[d].record
                if record is not None:
                    # only the committed version (a replace in progress stores two): the
                    # store's own visibility rule, as readers apply it
                    if not is_current(md, record, record.get(VERSION)):
                        continue
                    sid = sentence_id(d, int(md.get(INDEX, 0)))  # versioned record id -> sentence key
                per[d].append((int(md.get(INDEX, 0)), sid, text or "", md))
            for d, sents in per.items():
                key = wanted[d].key
                sents.sort(key=lambda s: s[:3])
                rows = [[vocab.setdefault(t, len(vocab)) for t in self.analyze(text)] for _, _, text, _ in sents]
                out[d] = DocTerms(
                    key, [sid for _, sid, _, _ in sents],
                    np.asarray([t for r in rows for t in r], dtype=np.int32),
                    np.asarray([len(r) for r in rows], dtype=np.int64),
                    np.asarray([i for i, _, _, _ in sents], dtype=np.int64),
                    *shared_metadata([md for _, _, _, md in sents]),
                )
            bar.update(len(batch))
        bar.close()
        return out

    # ------------------------------------------------------------------ reading
    def candidates(self, text: str, n: int, *, where: dict[str, Any] | None = None) -> list[tuple[str, float]]:
        """Top-``n`` ``(sentence id, BM25 score)`` with a positive score, no record read.

        With ``where``, candidates failing the metadata filter are dropped first, so they take
        no place in the list. What the index can tell from the metadata its documents' sentences
        share (``doc_id``, a document's own metadata: ``store/lexical_filter.py``) masks the
        scores before ranking, so a search within one document costs what a search of the
        whole store does; the rest of a filter (``$gt``, a key that differs within a document)
        is asked of Chroma for the best candidates, batch after batch, until ``n`` pass. The
        filter applies to the candidates, not to the context they were scored with: a sentence
        that passes keeps the share of its predecessor's score even when the predecessor would
        not pass (it is still the text before it in the same document).
        """
        if n <= 0:
            return []
        snap = self.snapshot()
        scores = snap.index.scores(self.analyze(text), context=self.context)
        if where is not None:
            mask, where = snap.filter.split(chroma_where(where) or where)
            if mask is not None:
                scores = np.where(mask, scores, np.float32(0))  # a zero score is never a candidate
        if where is None:
            return [(snap.index.ids[r], s) for r, s in ranked_rows(scores, n)]
        out: list[tuple[str, float]] = []
        done, limit = 0, n + max(8, n // 4)
        while len(out) < n:
            ranked = ranked_rows(scores, limit)[done:]
            if not ranked:
                break
            ids = [snap.index.ids[r] for r, _ in ranked]
            keep = self.store.read_ids(ids, where=where)  # the visible ones passing the filter
            out.extend((i, s) for i, (_, s) in zip(ids, ranked, strict=True) if i in keep)
            done, limit = done + len(ranked), limit * 4
        return out[:n]

    def documents_passing(self, where: dict[str, Any], *, most: int) -> list[str] | None:
        """The documents whose indexed sentences pass ``where``, when the metadata the index
        keeps decides it whole (``store/lexical_filter.py``) and they hold at most ``most``
        sentences; ``None`` otherwise.

        What lets a hybrid search give its dense half ``doc_id``s, which the store reads by
        id, instead of a filter Chroma evaluates over the whole collection. It is the index's
        view of the store, as fresh as the lexical half's own candidates (same sync).
        """
        snap = self.snapshot()
        mask = snap.filter.documents(chroma_where(where) or where)
        if mask is None:
            return None
        chosen = [d for d, ok in zip(snap.docs, mask.tolist(), strict=True) if ok]
        if sum(len(snap.docs[d].ids) for d in chosen) > most:
            return None
        return chosen

    def query(self, text: str, n: int, *, where: dict[str, Any] | None = None) -> list[Hit]:
        """Top-``n`` sentences by BM25 as :class:`Hit` (score = BM25), visible ones only.

        Sentences sharing no term with the query (and, with a ``context``, following no
        sentence that does) are not hits, so fewer than ``n`` come back when fewer match.
        ``where`` filters as Chroma's metadata filter does (:meth:`candidates`). A plain read,
        like the store's ``nearest``: a few more candidates than ``n`` are read so that a hidden
        one (a document being written) rarely leaves it short; a search that needs more asks
        again (``retrieve/search.py``).
        """
        if n <= 0:
            return []
        hits = self._hits(self.candidates(text, n + max(8, n // 4), where=where))
        if self.stale(hits):  # the index was out of date and has re-synced: rank again
            hits = self._hits(self.candidates(text, n + max(8, n // 4), where=where))
        return hits[:n]

    def _hits(self, ranking: Sequence[tuple[str, float]]) -> list[Hit]:
        """The visible records of a ranking's ids, scored and ordered as ranked."""
        return list(self.store.read_ids([i for i, _ in ranking], [s for _, s in ranking]).values())

    def stale(self, hits: Sequence[Hit]) -> bool:
        """Whether a hit shows that the index is out of date; if so, re-syncs it.

        A hit's stored content hash that differs from the indexed one means its document was
        replaced without moving the store's generation (a writer that bypassed the store
        protocol): the index re-reads the store, and the caller should rank again.
        """
        snap = self._snap
        if snap is None or not any(self._stale(snap, h) for h in hits):
            return False
        self.sync(force=True)
        return True

    def scores(self, text: str) -> tuple[list[str], np.ndarray]:
        """BM25 score of every indexed sentence (ids, scores), e.g. for evaluation."""
        snap = self.snapshot()
        return snap.index.ids, snap.index.scores(self.analyze(text), context=self.context)

    @staticmethod
    def _stale(snap: Snapshot, hit: Hit) -> bool:
        doc = snap.docs.get(str(hit.sentence.doc_id))
        stored = version_key(hit.metadata)
        return doc is not None and stored != "" and not doc.key.startswith(_SCANNED) and doc.key != stored


class _Wanted(NamedTuple):
    """What the index should hold of one document."""

    key: str  # the committed version (or hash) it is indexed under
    sentences: int | None  # how many the record says (None: not known)
    record: dict[str, Any] | None  # its manifest record (None: sentences without one, scanned)


def _scan_foreign(records: Iterable[tuple[str, str, dict[str, Any]]], known: Iterable[str]) -> dict[str, str]:
    """``doc_id -> key`` for documents with sentences but no manifest record (``records``:
    ``(id, text, metadata)`` as the store's ``scan`` gives them; the text is not keyed)."""
    known = set(known)
    parts: dict[str, list[str]] = {}
    for sid, _, md in records:
        d = str(md.get(DOC_ID, sid.rsplit(":", 1)[0]))
        if d not in known:
            parts.setdefault(d, []).append(sid + "|" + json.dumps(md, sort_keys=True, default=str))
    return {d: hashlib.sha256("\n".join(sorted(p)).encode()).hexdigest() for d, p in parts.items()}


# BM25Index and ranked_rows were defined here before store/bm25.py; their old import path stays
__all__ = ["LEXICAL_DIR", "BM25Index", "StoreLexicalIndex", "ranked_rows"]
