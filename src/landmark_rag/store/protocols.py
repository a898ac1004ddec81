"""What the rest of the package needs from a sentence store, as structural types.

:class:`~landmark_rag.store.ChromaSentenceStore` is the implementation. Retrieval and expansion
are written against :class:`SentenceReader` (the small read API of ``store/reads.py``), ingestion
and the index against :class:`SentenceStore` (those reads plus the manifest's writes), and a store
that can write a group of documents at once is a :class:`GroupWriter` as well. Naming the
seams this way keeps each caller honest about what it uses, lets a type checker verify every call,
and lets a test or another backend stand in without inheriting from the Chroma class.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from landmark_rag.types import EncodedDocument, Hit

#: A Chroma metadata filter over sentences (``{"source": "a.txt"}``, ``{"$and": [...]}``).
Where = dict[str, Any]


@runtime_checkable
class SentenceReader(Protocol):
    """The store's few reads; each shows only what the manifest makes visible."""

    def nearest(self, vector: np.ndarray, n: int, *, where: Where | None = None, hidden: bool = False) -> list[Hit]:
        """The top-``n`` sentences by cosine similarity, best first."""
        ...

    def nearest_ids(self, vector: np.ndarray, n: int, *, where: Where | None = None) -> list[tuple[str, float]]:
        """The top-``n`` sentence keys and cosines only (the first stage of a hybrid search)."""
        ...

    def visible_hits(self, hits: Sequence[Hit]) -> list[Hit]:
        """``hits`` less those of versions readers must not see yet."""
        ...

    def read_ids(
        self, ids: Sequence[str], scores: Sequence[float] | None = None, *,
        where: Where | None = None, hidden: bool = False,
    ) -> dict[str, Hit]:
        """The records ``ids`` name, by the id asked for, in the order of ``ids``."""
        ...

    def read_documents(
        self, requests: Mapping[str, Iterable[int] | None], *, embeddings: bool = False
    ) -> dict[str, EncodedDocument]:
        """Some or all sentences (and vectors) of several documents in one read."""
        ...

    def read_document(
        self, doc_id: str, indices: Iterable[int] | None = None, *, embeddings: bool = False
    ) -> EncodedDocument:
        """One document's sentences, as :meth:`read_documents` reads them."""
        ...


@runtime_checkable
class SentenceStore(SentenceReader, Protocol):
    """Reads plus what ingestion and the index write and check."""

    def identity(self) -> dict[str, Any]:
        """The model set-up recorded on the store (empty for a new one)."""
        ...

    def check_identity(self, identity: dict[str, Any], *, record: bool = True) -> None:
        """Refuse another model's vectors; a writer records its own on a new store."""
        ...

    def documents(self, *, include_incomplete: bool = False) -> dict[str, dict[str, Any]]:
        """The manifest: one record per document id."""
        ...

    def document_text(self, doc_id: str) -> str | None:
        """A document's full text when it was stored."""
        ...

    def count_sentences(self) -> int:
        """Records in the collection (every version)."""
        ...

    def add_document(
        self, encoded: EncodedDocument, *, metadata: dict[str, Any] | None = None,
        doc_hash: str | None = None, store_text: bool = True,
    ) -> int:
        """Insert or replace one document's sentences; returns the number stored."""
        ...

    def write_document(
        self, doc_id: str, write: Callable[[str], None], *, n_sentences: int, doc_hash: str,
        metadata: dict[str, Any] | None = None, text: str | None = None,
    ) -> str:
        """The manifest's write protocol around a caller's own write; returns the version."""
        ...

    def delete_document(self, doc_id: str) -> int:
        """Remove a document; returns the sentences removed."""
        ...

    def clean_document(self, doc_id: str) -> int:
        """Delete what an interrupted write left behind; returns the sentences removed."""
        ...


@runtime_checkable
class GroupWriter(Protocol):
    """A store that writes a group of documents with the manifest's protocol run once for the
    group (:meth:`ChromaSentenceStore.add_documents`). Optional: the write path checks for it
    and writes one document at a time (``add_document``) through a store without it."""

    def add_documents(
        self, documents: Sequence[EncodedDocument], *, metadatas: Sequence[dict[str, Any] | None] | None = None,
        doc_hashes: Sequence[str | None] | None = None, store_text: bool = True,
        on_committed: Callable[[int], None] | None = None,
    ) -> list[int]:
        """Insert or replace each document as ``add_document`` would; returns their sentence
        counts. ``on_committed(n)``: called once the first ``n`` documents are stored."""
        ...
