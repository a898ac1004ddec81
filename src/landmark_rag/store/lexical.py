"""Sentence-level BM25 beside the vector store (step 3 of the pipeline, lexical half).

Chroma 1.5 has no ranked full-text search outside Chroma Cloud: sparse-vector indexes and the
``Search``/``Rrf`` API are refused by ``PersistentClient`` *and* by a local ``chroma run``
server ("Sparse vector indexing is not enabled in local", "Search is not implemented for
Local Chroma"), and ``where_document={"$contains": ...}`` filters without ranking. So the
lexical index is BM25 as ``bm25s`` scores it (Lucene variant, k1 1.5, b 0.75; stop-word lists
from bm25s, Snowball stemming from PyStemmer), over exactly the stored sentence units, same
ids ``doc_id:index``; its matrix is built vectorised (see :class:`BM25Index`).

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
- a local store persists the cache in ``<db>/landmark_lexical/<collection>/`` (written to a
  temporary folder and renamed, so readers see an old or a new cache, never a torn one); a
  server store (``http://``) keeps it in memory, built from the server on first use, or in a
  ``cache_dir`` the caller names.

Writers need to know nothing about it: anything that writes through the store protocol (the
CLI, ``landmark_rag.ingest``, Ray workers, another process) is picked up by the next sync.
Each query checks two cheap counts (manifest and sentences) and syncs when they moved;
:meth:`StoreLexicalIndex.refresh` forces a full comparison (e.g. after a same-size replace).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from landmark_rag.store.analyzer import ANALYZER_VERSION, language_name, make_analyzer
from landmark_rag.store.manifest import is_complete, version_key
from landmark_rag.store.schema import DOC_ID, INDEX, N_SENTENCES, sentence_id
from landmark_rag.types import Hit

LEXICAL_DIR = "landmark_lexical"
_FORMAT = 1
_SCANNED = "scan:"  # key prefix of documents without a manifest record


class BM25Index:
    """BM25 over sentences given as term ids (pure, in memory): one row per sentence id.

    The Lucene variant with bm25s's defaults (k1 1.5, b 0.75), so scores equal the eval
    harness's ``bm25`` baseline (a test pins them to ``bm25s.BM25``). The score matrix is
    built with a few vectorised numpy operations instead of ``bm25s.BM25.index``, whose
    per-document Python loop took 9 s for 100k sentences on the shared CPU; this index is
    rebuilt whenever a reader notices that the store changed, so it must be cheap.

    ``flat`` holds every sentence's term ids back to back and ``lengths`` their counts.
    """

    def __init__(
        self, ids: Sequence[str], flat: np.ndarray, lengths: np.ndarray, vocab: dict[str, int],
        *, k1: float = 1.5, b: float = 0.75,
    ) -> None:
        self.ids = list(ids)
        self.vocab = vocab
        n, n_terms = len(self.ids), max(len(vocab), 1)
        lengths = np.asarray(lengths, dtype=np.int64)
        flat = np.asarray(flat, dtype=np.int64)
        if lengths.shape[0] != n or int(lengths.sum()) != flat.shape[0]:
            raise ValueError("ids, term ids and lengths disagree")
        doc = np.repeat(np.arange(n, dtype=np.int64), lengths)
        pairs, tf = np.unique(flat * max(n, 1) + doc, return_counts=True)  # sorted by term, then row
        term, row = pairs // max(n, 1), pairs % max(n, 1)
        df = np.bincount(term, minlength=n_terms)
        idf = np.log1p((n - df + 0.5) / (df + 0.5))
        avg = float(lengths.mean()) if n and lengths.sum() else 1.0
        norm = k1 * ((1.0 - b) + b * lengths[row] / avg)
        self._data = (idf[term] * tf / (norm + tf)).astype(np.float32)
        self._rows = row
        self._indptr = np.concatenate([[0], np.cumsum(df)])

    @classmethod
    def from_terms(cls, ids: Sequence[str], rows: Sequence[Sequence[int]], vocab: dict[str, int]) -> BM25Index:
        """From one list of term ids per sentence."""
        lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        flat = np.fromiter((t for r in rows for t in r), dtype=np.int64, count=int(lengths.sum()))
        return cls(ids, flat, lengths, vocab)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def nbytes(self) -> int:
        """Bytes of the score matrix (values, rows, term pointers)."""
        return int(self._data.nbytes + self._rows.nbytes + self._indptr.nbytes)

    def scores(self, terms: Sequence[str]) -> np.ndarray:
        """float32 BM25 score of every row for a query's terms (zeros when none is known).

        A term repeated in the query counts as often as it appears (as in bm25s).
        """
        out = np.zeros(len(self.ids), dtype=np.float32)
        for t in terms:
            j = self.vocab.get(t)
            if j is not None and j + 1 < self._indptr.shape[0]:
                lo, hi = self._indptr[j], self._indptr[j + 1]
                out[self._rows[lo:hi]] += self._data[lo:hi]  # rows are unique within a term
        return out

    def top(self, terms: Sequence[str], n: int) -> list[tuple[int, float]]:
        """Rows with a positive score, best first, at most ``n`` (ties: lower row first)."""
        if n <= 0 or not self.ids:
            return []
        return ranked_rows(self.scores(terms), n)


def ranked_rows(scores: np.ndarray, n: int) -> list[tuple[int, float]]:
    """The ``n`` best rows with a positive score, best first (ties: lower row first)."""
    pos = np.flatnonzero(scores > 0)
    if pos.size > n:
        pos = pos[np.argpartition(-scores[pos], n - 1)[:n]]
    order = pos[np.lexsort((pos, -scores[pos]))]
    return [(int(i), float(scores[i])) for i in order]


@dataclass
class _Doc:
    key: str  # the manifest's content hash (or a hash of the records for manifest-less docs)
    ids: list[str]
    flat: np.ndarray  # int32 term ids of all its sentences, back to back
    lengths: np.ndarray  # int64 number of terms per sentence


@dataclass
class _Snapshot:
    """An immutable state of the lexical index (queries read it without locking)."""

    docs: dict[str, _Doc]
    vocab: dict[str, int]
    counts: tuple[Any, ...]
    index: BM25Index = field(repr=False)

    @classmethod
    def build(cls, docs: dict[str, _Doc], vocab: dict[str, int], counts: tuple[Any, ...]) -> _Snapshot:
        ids = [i for d in docs.values() for i in d.ids]
        flat = np.concatenate([d.flat for d in docs.values()]) if docs else np.zeros(0, np.int32)
        lengths = np.concatenate([d.lengths for d in docs.values()]) if docs else np.zeros(0, np.int64)
        return cls(docs, vocab, counts, BM25Index(ids, flat, lengths, vocab))


class StoreLexicalIndex:
    """BM25 over the sentences of a :class:`~landmark_rag.store.ChromaSentenceStore`.

    ``language`` picks stemming and stop words (``english`` default; ISO codes accepted;
    ``none`` for neither); scripts without spaces are indexed as character uni- and bigrams
    in every language (see :mod:`landmark_rag.store.analyzer`). ``cache_dir``: where the
    cache lives; ``None`` -> beside a local store, in memory for a server; ``False`` -> in
    memory always.
    """

    def __init__(
        self,
        store: Any,
        *,
        language: str | None = "english",
        cache_dir: str | os.PathLike[str] | bool | None = None,
        show_progress: bool = False,
    ) -> None:
        self.store = store
        self.language = language_name(language)
        self.analyze = make_analyzer(self.language)
        self.show_progress = show_progress
        self.cache_dir = _cache_dir(store, cache_dir)
        self._snap: _Snapshot | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ state
    def _signature(self) -> dict[str, Any]:
        return {"format": _FORMAT, "analyzer": ANALYZER_VERSION, "language": self.language}

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

    def snapshot(self) -> _Snapshot:
        """The current state, syncing first when the store's counts moved since the last sync."""
        snap = self._snap
        if snap is None or snap.counts != self._counts():
            return self.sync()
        return snap

    def refresh(self) -> _Snapshot:
        """Compare every document with the manifest now (catches same-size replacements)."""
        return self.sync(force=True)

    def sync(self, *, force: bool = False) -> _Snapshot:
        """Bring the index in line with the store; re-reads only changed documents."""
        with self._lock:
            snap = self._snap
            if snap is None:
                snap = self._load()
            counts = self._counts()
            if snap is not None and snap.counts == counts and not force and self._snap is not None:
                return snap
            wanted = self._wanted()
            old = snap.docs if snap is not None else {}
            vocab = dict(snap.vocab) if snap is not None else {}
            docs = {d: doc for d, doc in old.items() if d in wanted and doc.key == wanted[d][0]}
            todo = [d for d in wanted if d not in docs]
            if todo or len(docs) != len(old) or snap is None:
                docs.update(self._read(todo, wanted, vocab))
                snap = _Snapshot.build(docs, vocab, counts)
                self._save(snap)
            elif snap.counts != counts:
                snap = _Snapshot(snap.docs, snap.vocab, counts, snap.index)
                self._save(snap)
            self._snap = snap
            return snap

    def _wanted(self) -> dict[str, tuple[str, int | None]]:
        """Documents the index should hold: ``doc_id -> (key, expected number of sentences)``.

        The key is the committed ``doc_version`` (records written before versions existed:
        the ``doc_hash``); only the sentences of that version are indexed.
        """
        manifest_docs = self.store.documents(include_incomplete=True)
        wanted = {
            d: (version_key(md), int(md[N_SENTENCES]) if N_SENTENCES in md else None)
            for d, md in manifest_docs.items()
            if is_complete(md)
        }
        expected = sum(n or 0 for _, n in wanted.values())
        writing = len(wanted) != len(manifest_docs)
        if not self.store.has_manifest or (not writing and self.store.count_sentences() != expected):
            # sentences written without a manifest (e.g. LlamaIndex's ChromaVectorStore): read
            # their metadata once and key each such document by a hash of its records
            for d, key in _scan_foreign(self.store.iter_metadata(), set(manifest_docs)).items():
                wanted[d] = (_SCANNED + key, None)
        return wanted

    def _read(
        self, doc_ids: Sequence[str], wanted: dict[str, tuple[str, int | None]], vocab: dict[str, int]
    ) -> dict[str, _Doc]:
        """Read and analyse the sentences of ``doc_ids`` from the store."""
        out: dict[str, _Doc] = {}
        if not doc_ids:
            return out
        from tqdm.auto import tqdm

        bar = tqdm(total=len(doc_ids), desc="lexical index", unit="doc", disable=not self.show_progress)
        step = 64
        for i in range(0, len(doc_ids), step):
            batch = list(doc_ids[i : i + step])
            per: dict[str, list[tuple[int, str, str]]] = {d: [] for d in batch}
            for sid, text, md in self.store.document_records(batch):
                d = str(md.get(DOC_ID))
                if d not in per:
                    continue
                key = wanted[d][0]
                if not key.startswith(_SCANNED):
                    # only the committed version (a replace in progress stores two): the
                    # store's visibility rule, see store/manifest.py
                    if version_key(md) != key:
                        continue
                    sid = sentence_id(d, int(md.get(INDEX, 0)))  # versioned record id -> sentence key
                per[d].append((int(md.get(INDEX, 0)), sid, text or ""))
            for d, sents in per.items():
                key = wanted[d][0]
                sents.sort()
                rows = [[vocab.setdefault(t, len(vocab)) for t in self.analyze(text)] for _, _, text in sents]
                out[d] = _Doc(
                    key, [sid for _, sid, _ in sents],
                    np.asarray([t for r in rows for t in r], dtype=np.int32),
                    np.asarray([len(r) for r in rows], dtype=np.int64),
                )
            bar.update(len(batch))
        bar.close()
        return out

    # ------------------------------------------------------------------ persistence
    def _load(self) -> _Snapshot | None:
        if self.cache_dir is None:
            return None
        try:
            meta = json.loads((self.cache_dir / "state.json").read_text())
            if meta.get("signature") != self._signature():
                return None
            arrays = np.load(self.cache_dir / "terms.npz")
            flat, lengths = arrays["flat"], arrays["lengths"]
        except (OSError, ValueError, KeyError):
            return None  # absent or unreadable: rebuilt from the store
        vocab = {t: i for i, t in enumerate(meta["vocab"])}
        bounds = np.concatenate([[0], np.cumsum(lengths)])
        docs: dict[str, _Doc] = {}
        row = 0
        for d, key, ids in meta["docs"]:
            n = len(ids)
            docs[d] = _Doc(key, list(ids), flat[bounds[row] : bounds[row + n]], lengths[row : row + n])
            row += n
        return _Snapshot.build(docs, vocab, tuple(meta["counts"]))

    def _save(self, snap: _Snapshot) -> None:
        if self.cache_dir is None:
            return
        vocab = [""] * len(snap.vocab)
        for t, i in snap.vocab.items():
            vocab[i] = t
        meta = {
            "signature": self._signature(),
            "counts": list(snap.counts),
            "vocab": vocab,
            "docs": [[d, doc.key, doc.ids] for d, doc in snap.docs.items()],
        }
        parent = self.cache_dir.parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{self.cache_dir.name}.", dir=parent))
        except OSError:
            return  # a read-only store: the index lives in memory for this process
        try:
            np.savez(
                tmp / "terms.npz",
                flat=np.concatenate([d.flat for d in snap.docs.values()]) if snap.docs else np.zeros(0, np.int32),
                lengths=(
                    np.concatenate([d.lengths for d in snap.docs.values()]) if snap.docs else np.zeros(0, np.int64)
                ),
            )
            (tmp / "state.json").write_text(json.dumps(meta))
            old = parent / f".{self.cache_dir.name}.old.{os.getpid()}.{threading.get_ident()}"
            if self.cache_dir.exists():
                os.replace(self.cache_dir, old)
            os.replace(tmp, self.cache_dir)
            shutil.rmtree(old, ignore_errors=True)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)  # a read-only or racing store: memory only

    # ------------------------------------------------------------------ reading
    def candidates(self, text: str, n: int, *, where: dict[str, Any] | None = None) -> list[tuple[str, float]]:
        """Top-``n`` ``(sentence id, BM25 score)`` with a positive score, no record read.

        With ``where``, candidates failing the metadata filter are dropped first (one id-only
        read from Chroma per batch), so they take no place in the list.
        """
        if n <= 0:
            return []
        snap = self.snapshot()
        scores = snap.index.scores(self.analyze(text))
        if where is None:
            return [(snap.index.ids[r], s) for r, s in ranked_rows(scores, n)]
        out: list[tuple[str, float]] = []
        done, limit = 0, n + max(8, n // 4)
        while len(out) < n:
            ranked = ranked_rows(scores, limit)[done:]
            if not ranked:
                break
            ids = [snap.index.ids[r] for r, _ in ranked]
            keep = self.store.keys_matching(ids, where)
            out.extend((i, s) for i, (_, s) in zip(ids, ranked, strict=True) if i in keep)
            done, limit = done + len(ranked), limit * 4
        return out[:n]

    def query(self, text: str, n: int, *, where: dict[str, Any] | None = None) -> list[Hit]:
        """Top-``n`` sentences by BM25 as :class:`Hit` (score = BM25), visible ones only.

        Sentences sharing no term with the query are not hits, so fewer than ``n`` come back
        when fewer match. ``where`` is applied by Chroma. A plain read, like the store's
        ``query``: a few more candidates than ``n`` are read so that a hidden one (a document
        being written) rarely leaves it short; a search that needs more asks again
        (``retrieve/search.py``).
        """
        if n <= 0:
            return []
        cands = self.candidates(text, n + max(8, n // 4), where=where)
        hits = self.store.hits_by_ids([i for i, _ in cands], [s for _, s in cands])
        if self.stale(hits):  # the index was out of date and has re-synced: rank again
            cands = self.candidates(text, n + max(8, n // 4), where=where)
            hits = self.store.hits_by_ids([i for i, _ in cands], [s for _, s in cands])
        return hits[:n]

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
        return snap.index.ids, snap.index.scores(self.analyze(text))

    @staticmethod
    def _stale(snap: _Snapshot, hit: Hit) -> bool:
        doc = snap.docs.get(str(hit.sentence.doc_id))
        stored = version_key(hit.metadata)
        return doc is not None and stored != "" and not doc.key.startswith(_SCANNED) and doc.key != stored


def _cache_dir(store: Any, cache_dir: str | os.PathLike[str] | bool | None) -> Path | None:
    if cache_dir is False:
        return None
    name = _safe(store.name)
    if cache_dir not in (None, True):
        return Path(os.fspath(cache_dir)) / name  # type: ignore[arg-type]
    if store.local_path is not None:
        return Path(store.local_path) / LEXICAL_DIR / name
    return None  # a server store: memory only unless the caller names a folder


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)


def _scan_foreign(records: Iterable[tuple[str, dict[str, Any]]], known: Iterable[str]) -> dict[str, str]:
    """``doc_id -> key`` for documents with sentences but no manifest record."""
    known = set(known)
    parts: dict[str, list[str]] = {}
    for sid, md in records:
        d = str(md.get(DOC_ID, sid.rsplit(":", 1)[0]))
        if d not in known:
            parts.setdefault(d, []).append(sid + "|" + json.dumps(md, sort_keys=True, default=str))
    return {d: hashlib.sha256("\n".join(sorted(p)).encode()).hexdigest() for d, p in parts.items()}


__all__ = ["LEXICAL_DIR", "BM25Index", "StoreLexicalIndex", "ranked_rows"]
