"""The lexical index's state and where it is kept between processes (``store/lexical.py`` syncs it).

A state (:class:`Snapshot`) is the analysed terms of every indexed document, each keyed by
what the manifest said of the document when it was read, and the metadata its sentences share
(what metadata filters are evaluated on, ``store/lexical_filter.py``), plus the BM25 matrix
built from them. A local store persists it in ``<db>/landmark_lexical/<collection>/`` (written to a
temporary folder and renamed, so readers see an old or a new cache, never a torn one); a
server store (``http://``) keeps it in memory, or in a ``cache_dir`` the caller names. The
cache is only ever a copy: absent, unreadable, or written by another analyzer, it is rebuilt
from the store, so losing it costs time, never correctness.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from landmark_rag.staging import remove_leftovers, set_aside, staging_dir
from landmark_rag.store.bm25 import DEFAULT_B, DEFAULT_K1, BM25Index
from landmark_rag.store.lexical_filter import RowFilter

LEXICAL_DIR = "landmark_lexical"
#: bump when the cache's files change meaning, so caches of earlier releases rebuild
#: (2: each sentence's index within its document is kept, for the lexical context;
#: 3: each document's shared metadata and varying keys are kept, for metadata filters)
FORMAT = 3


@dataclass
class DocTerms:
    """One indexed document: its sentences' ids and analysed terms, and which write they are of."""

    key: str  # the manifest's content hash (or a hash of the records for manifest-less docs)
    ids: list[str]
    flat: np.ndarray  # int32 term ids of all its sentences, back to back
    lengths: np.ndarray  # int64 number of terms per sentence
    indices: np.ndarray  # int64 each sentence's index within its document, ascending
    #: metadata every indexed sentence carries alike, and the keys that differ between them
    #: (``lexical_filter.shared_metadata``): what a metadata filter is evaluated on
    shared: dict[str, Any] = field(default_factory=dict)
    varying: list[str] = field(default_factory=list)


@dataclass
class Snapshot:
    """An immutable state of the lexical index (queries read it without locking)."""

    docs: dict[str, DocTerms]
    vocab: dict[str, int]
    counts: tuple[Any, ...]
    index: BM25Index = field(repr=False)
    _filter: RowFilter | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def filter(self) -> RowFilter:
        """Metadata filters as masks over the index's rows (made on the first filtered query:
        an unfiltered search never pays for it)."""
        if self._filter is None:
            docs = list(self.docs.values())
            self._filter = RowFilter([d.shared for d in docs], [d.varying for d in docs], [len(d.ids) for d in docs])
        return self._filter

    @classmethod
    def build(
        cls, docs: dict[str, DocTerms], vocab: dict[str, int], counts: tuple[Any, ...], *,
        k1: float = DEFAULT_K1, b: float = DEFAULT_B,
    ) -> Snapshot:
        ids = [i for d in docs.values() for i in d.ids]
        flat = np.concatenate([d.flat for d in docs.values()]) if docs else np.zeros(0, np.int32)
        lengths = np.concatenate([d.lengths for d in docs.values()]) if docs else np.zeros(0, np.int64)
        # a document's rows are consecutive and in sentence order (``StoreLexicalIndex._read``);
        # their indices say which row really is the sentence before another (a gap breaks the chain)
        documents = np.repeat(np.arange(len(docs)), [len(d.ids) for d in docs.values()])
        positions = np.concatenate([d.indices for d in docs.values()]) if docs else np.zeros(0, np.int64)
        index = BM25Index(ids, flat, lengths, vocab, documents=documents, positions=positions, k1=k1, b=b)
        return cls(docs, vocab, counts, index)


class LexicalCache:
    """Where a lexical index's :class:`Snapshot` is kept: ``folder`` (``None``: memory only).

    ``signature`` names what produced the terms (format, analyzer version, language); a
    cache with another signature is ignored and overwritten. ``k1`` / ``b``: the BM25
    parameters a loaded state's matrix is built with (the cache keeps terms, not scores, so
    indexes with other parameters share it).
    """

    def __init__(self, folder: Path | None, signature: dict[str, Any], *, k1: float = DEFAULT_K1, b: float = DEFAULT_B) -> None:
        self.folder = folder
        self.signature = signature
        self.k1, self.b = k1, b

    def load(self) -> Snapshot | None:
        """The cached state, or ``None`` (no folder, nothing cached, another signature, unreadable)."""
        if self.folder is None:
            return None
        try:
            meta = json.loads((self.folder / "state.json").read_text())
            if meta.get("signature") != self.signature:
                return None
            arrays = np.load(self.folder / "terms.npz")
            flat, lengths, indices = arrays["flat"], arrays["lengths"], arrays["indices"]
        except (OSError, ValueError, KeyError):
            return None  # absent or unreadable: rebuilt from the store
        vocab = {t: i for i, t in enumerate(meta["vocab"])}
        bounds = np.concatenate([[0], np.cumsum(lengths)])
        docs: dict[str, DocTerms] = {}
        row = 0
        for d, key, ids, shared, varying in meta["docs"]:
            n = len(ids)
            docs[d] = DocTerms(
                key, list(ids), flat[bounds[row] : bounds[row + n]], lengths[row : row + n], indices[row : row + n],
                dict(shared), list(varying),
            )
            row += n
        return Snapshot.build(docs, vocab, tuple(meta["counts"]), k1=self.k1, b=self.b)

    def save(self, snap: Snapshot) -> None:
        """Replace the cached state with ``snap`` at once; a folder that cannot be written keeps
        the index in memory (never an error: the cache is only a copy)."""
        if self.folder is None:
            return
        vocab = [""] * len(snap.vocab)
        for t, i in snap.vocab.items():
            vocab[i] = t
        meta = {
            "signature": self.signature,
            "counts": list(snap.counts),
            "vocab": vocab,
            "docs": [[d, doc.key, doc.ids, doc.shared, doc.varying] for d, doc in snap.docs.items()],
        }
        parent = self.folder.parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
            tmp = staging_dir(parent, prefix=f".{self.folder.name}.tmp-")
        except OSError:
            return  # a read-only store: the index lives in memory for this process
        try:
            np.savez(
                tmp / "terms.npz",
                flat=np.concatenate([d.flat for d in snap.docs.values()]) if snap.docs else np.zeros(0, np.int32),
                lengths=(
                    np.concatenate([d.lengths for d in snap.docs.values()]) if snap.docs else np.zeros(0, np.int64)
                ),
                indices=(
                    np.concatenate([d.indices for d in snap.docs.values()]) if snap.docs else np.zeros(0, np.int64)
                ),
            )
            (tmp / "state.json").write_text(json.dumps(meta))
            old = set_aside(self.folder, f".{self.folder.name}.old.")  # None: there was none
            os.replace(tmp, self.folder)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
            remove_leftovers(parent, (f".{self.folder.name}.tmp-", f".{self.folder.name}.old."))
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)  # a read-only or racing store: memory only


def cache_folder(store: Any, cache_dir: str | os.PathLike[str] | bool | None) -> Path | None:
    """The folder of ``store``'s cache: in ``cache_dir`` when named, else beside a local store;
    ``None`` (memory) for a server store or ``cache_dir=False``."""
    if cache_dir is False:
        return None
    name = safe_name(store.name)
    if cache_dir not in (None, True):
        return Path(os.fspath(cache_dir)) / name  # type: ignore[arg-type]
    if store.local_path is not None:
        return Path(store.local_path) / LEXICAL_DIR / name
    return None  # a server store: memory only unless the caller names a folder


def safe_name(name: str) -> str:
    """``name`` (a collection's) as a file name: anything but letters, digits, ``.``, ``_`` and
    ``-`` becomes ``_`` (Chroma's own rules allow little else, so names rarely change)."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)


__all__ = ["FORMAT", "LEXICAL_DIR", "DocTerms", "LexicalCache", "Snapshot", "cache_folder", "safe_name"]
