"""Gathering what a results view needs from a store: hit sentences, whole documents, scores.

Kept apart from the HTML so the page itself is a pure function of plain data (testable
without a store) and the store access is written once for every output format.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from landmark_rag.types import EncodedDocument, Passage, Sentence


class DocumentStore(Protocol):
    """What a results view reads from a store (``ChromaSentenceStore`` has it)."""

    def read_document(
        self, doc_id: str, indices: Iterable[int] | None = None, *, embeddings: bool = False
    ) -> EncodedDocument: ...

    def document_text(self, doc_id: str) -> str | None: ...

    def documents(self, *, include_incomplete: bool = False) -> dict[str, dict[str, Any]]: ...


@dataclass
class DocumentView:
    """One source document with every sentence's similarity to the question."""

    doc_id: str
    source: str
    text: str
    sentences: list[Sentence]
    scores: np.ndarray  # float32 [n_sentences], cosine similarity to the query
    passages: list[tuple[int, Passage]] = field(default_factory=list)  # (rank, passage), rank from 1


def passage_hits(store: DocumentStore, passages: list[Passage]) -> list[list[Sentence]]:
    """The hit sentences of each passage, in document order."""
    return [store.read_document(p.doc_id, p.hit_indices).sentences for p in passages]


def passage_source(passage: Passage) -> str:
    """The file a passage came from (the ``source`` metadata), else its document id."""
    src = passage.metadata.get("source") if passage.metadata else None
    return str(src) if src else passage.doc_id


def passage_location(passage: Passage) -> str:
    """Where a passage is, for people: ``p. 3``, ``pp. 11-12``, the heading it is under
    (``§ Installation``), both, or ``""`` for a document with neither."""
    parts = []
    if passage.pages:
        first, last = passage.pages[0], passage.pages[-1]
        parts.append(f"p. {first}" if first == last else f"pp. {first}-{last}")
    if passage.heading:
        parts.append(f"§ {passage.heading}")
    return "  ".join(parts)


def document_views(store: DocumentStore, passages: list[Passage], query_vector: np.ndarray) -> list[DocumentView]:
    """One view per document that holds a passage, ordered by its best passage's rank."""
    views: dict[str, DocumentView] = {}
    sources = {doc_id: md.get("source") for doc_id, md in store.documents(include_incomplete=False).items()}
    q = np.asarray(query_vector, dtype=np.float32)
    for rank, p in enumerate(passages, start=1):
        view = views.get(p.doc_id)
        if view is None:
            doc = store.read_document(p.doc_id, embeddings=True)
            sentences, vecs = doc.sentences, doc.embeddings
            text = store.document_text(p.doc_id) or _rebuild(sentences)
            scores = (vecs @ q).astype(np.float32) if len(sentences) else np.zeros(0, dtype=np.float32)
            source = str(sources.get(p.doc_id) or passage_source(p))
            view = views[p.doc_id] = DocumentView(p.doc_id, source, text, sentences, scores)
        view.passages.append((rank, p))
    return list(views.values())


def _rebuild(sentences: list[Sentence]) -> str:
    # A document stored without its text: sentences carry their offsets and the whitespace
    # before them, which is enough to rebuild the covered text at the right offsets.
    if not sentences:
        return ""
    parts = [" " * max(0, sentences[0].start - len(sentences[0].space_before)), sentences[0].space_before]
    parts.append(sentences[0].text)
    for s in sentences[1:]:
        parts.append(s.space_before + s.text)
    return "".join(parts)
