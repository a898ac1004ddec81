"""A document as the store writes it: its sentence records, laid out before the first write.

:class:`~landmark_rag.store.ChromaSentenceStore` checks every document of a call and lays out
its rows here (ids, vectors, flat metadata, texts) before anything is written, so a document
that cannot be written fails the call with nothing stored. Only the version is left open: each
write chooses a fresh one (``store/manifest.py``), and the ids and metadata carry it. Writes of
several documents go in groups (:func:`write_groups`, :class:`GroupRows`): one manifest
protocol and one batched upsert per group instead of per document.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from landmark_rag.store.client import Collections
from landmark_rag.store.manifest import DocumentWrite, new_version
from landmark_rag.store.schema import content_hash, flat_metadata, sentence_id, sentence_metadata
from landmark_rag.types import EncodedDocument


@dataclass(frozen=True)
class DocumentRows:
    """One document as the store writes it: its sentence records less the version, which
    each write chooses afresh."""

    encoded: EncodedDocument
    doc_id: str
    doc_hash: str
    metadata: dict[str, Any]
    vectors: np.ndarray
    texts: list[str]
    text: str | None

    def ids(self, version: str) -> list[str]:
        return [sentence_id(self.doc_id, s.index, version) for s in self.encoded.sentences]

    def metadatas(self, version: str) -> list[dict[str, Any]]:
        return [sentence_metadata(s.with_doc_id(self.doc_id), self.doc_hash, self.metadata, version)
                for s in self.encoded.sentences]


def document_rows(encoded: EncodedDocument, metadata: dict[str, Any] | None, doc_hash: str | None, store_text: bool) -> DocumentRows:
    """Check one document and lay out its rows (the checks of :meth:`ChromaSentenceStore.add_document`)."""
    doc_id = encoded.doc_id
    if not doc_id:
        raise ValueError("add_document needs an EncodedDocument with a doc_id")
    if len(encoded.sentences) != len(encoded.embeddings):
        raise ValueError("sentences and embeddings differ in length")
    return DocumentRows(
        encoded, doc_id, doc_hash or content_hash(encoded.text), flat_metadata(metadata),
        np.asarray(encoded.embeddings, dtype=np.float32), [s.text for s in encoded.sentences],
        encoded.text if store_text else None,
    )


def write_groups(rows: list[DocumentRows], limit: int) -> Iterator[list[DocumentRows]]:
    """Consecutive documents in groups of at most ``limit`` in which every ``doc_id`` is once:
    a second write of a document starts a new group, so it lands after the first, as it
    would written one by one."""
    group: list[DocumentRows] = []
    ids: set[str] = set()
    for row in rows:
        if row.doc_id in ids or len(group) >= limit:
            yield group
            group, ids = [], set()
        group.append(row)
        ids.add(row.doc_id)
    if group:
        yield group


@dataclass(frozen=True)
class GroupRows:
    """A group's documents for the manifest (each with its fresh version) and its sentence
    records, all documents' rows in one list, for one batched upsert."""

    docs: list[DocumentWrite]
    ids: list[str]
    vectors: np.ndarray
    metadatas: list[dict[str, Any]]
    texts: list[str]

    @classmethod
    def of(cls, rows: list[DocumentRows]) -> GroupRows:
        docs, ids, metadatas, texts, vectors = [], [], [], [], []
        for r in rows:
            version = new_version()
            docs.append(DocumentWrite(r.doc_id, version, len(r.texts), r.doc_hash, r.metadata, r.text))
            ids += r.ids(version)
            metadatas += r.metadatas(version)
            texts += r.texts
            if r.texts:
                vectors.append(r.vectors)
        # one array for the group's upsert (add_documents checked the call has one width)
        stacked = np.concatenate(vectors) if vectors else np.zeros((0, 0), dtype=np.float32)
        return cls(docs, ids, stacked, metadatas, texts)

    def write(self, io: Collections) -> Callable[[], None]:
        """Step 2 of the protocol for the whole group: its sentences in the client's batches."""
        return lambda: io.upsert_sentences(self.ids, self.vectors, self.metadatas, self.texts)


__all__ = ["DocumentRows", "GroupRows", "document_rows", "write_groups"]
