"""Where the compressor reads a hit's neighbours when the sentences are not in Chroma.

Boundary expansion needs the sentences around a hit. A landmark Chroma collection holds them
(``ChromaSentenceStore``); with any other LangChain vector store they are wherever the user
kept :class:`~landmark_rag.langchain.LandmarkTextSplitter`'s output: the list itself, or a
store that returns ``Document`` objects by id (every LangChain ``VectorStore`` with
``get_by_ids``, such as ``InMemoryVectorStore`` and FAISS, or a ``BaseStore`` with ``mget``).
This module adapts both to the core ``SentenceSource`` protocol; it only moves fields.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from langchain_core.documents import Document

from landmark_rag.langchain.convert import has_sentence_metadata
from landmark_rag.store.schema import DOC_HASH, sentence_from_metadata, sentence_id
from landmark_rag.types import Hit, Sentence


class DocumentSentenceSource:
    """A ``SentenceSource`` over sentence ``Document`` objects (schema metadata, id ``doc_id:index``).

    ``documents``: the splitter's output (held in memory, by id); ``docstore``: anything
    that returns documents by id: ``get_by_ids(ids)`` (LangChain ``VectorStore``) or
    ``mget(ids)`` (LangChain ``BaseStore``). Sentences are read by their ids
    ``doc_id:index``, so the store must have been given the splitter's ids (``add_documents``
    and ``from_documents`` take ``Document.id``). Vectors are not read: such a store has no
    common way to return them, so hits keep their input scores and the adaptive strategy,
    which compares neighbours' vectors, is not available.

    One version per passage: such stores upsert by id, so a document split again after an
    edit under the same ids keeps the old version's sentences past the new end (``doc:3`` of
    four after a re-split into two). Each sentence carries its document's content hash, and
    a passage is built from sentences of its best hit's version only (:meth:`visible_hits`,
    :meth:`pinned_to`), so it stays an exact slice of one text. Which version is current no
    such store can say: delete the old ids before re-adding (or use LangChain's ``index()``
    with a record manager).
    """

    def __init__(self, documents: Sequence[Document] | None = None, docstore: Any = None) -> None:
        if documents is None and docstore is None:
            raise ValueError("pass documents= (the splitter's output) or docstore= (a store returning them by id)")
        if docstore is not None and not (callable(getattr(docstore, "get_by_ids", None))
                                         or callable(getattr(docstore, "mget", None))):
            raise TypeError(
                f"cannot read sentences by id from {type(docstore).__name__}: docstore= needs get_by_ids(ids) "
                "(a LangChain VectorStore) or mget(ids) (a LangChain BaseStore)"
            )
        self.docstore = docstore
        self._by_id: dict[str, Document] = {}
        for doc in documents or ():
            if doc.id is None or not has_sentence_metadata(doc):
                raise ValueError(
                    "documents= takes sentence Documents as LandmarkTextSplitter returns them (an id "
                    f"'doc_id:index' and the landmark-rag metadata); got id {doc.id!r} with metadata keys "
                    f"{sorted(doc.metadata)}"
                )
            self._by_id[str(doc.id)] = doc

    def lookup(self, ids: Sequence[str]) -> dict[str, Document]:
        """The sentence documents with these ids that exist (from the list, else the store)."""
        out = {i: self._by_id[i] for i in ids if i in self._by_id}
        rest = [i for i in ids if i not in out]
        if rest and self.docstore is not None:
            get_by_ids = getattr(self.docstore, "get_by_ids", None)
            if callable(get_by_ids):
                found = [d for d in get_by_ids(rest) if d is not None]
                out.update({str(d.id): d for d in found if d.id is not None and str(d.id) in set(rest)})
            else:
                for i, d in zip(rest, self.docstore.mget(rest), strict=True):
                    if d is not None:
                        out[i] = d
        return {i: d for i, d in out.items() if has_sentence_metadata(d)}

    def get_sentences(self, doc_id: str, indices: Iterable[int]) -> dict[int, Sentence]:
        return self._sentences(doc_id, indices, None)

    def _sentences(self, doc_id: str, indices: Iterable[int], version: str | None) -> dict[int, Sentence]:
        wanted = {sentence_id(doc_id, i): i for i in indices if i >= 0}
        found = self.lookup(list(wanted))
        return {
            wanted[sid]: sentence_from_metadata(d.page_content, d.metadata)
            for sid, d in found.items()
            if version is None or d.metadata.get(DOC_HASH) in (None, version)
        }

    def visible_hits(self, hits: Sequence[Hit]) -> list[Hit]:
        """``hits`` without those of another version of a document than its best hit's
        (hits in rank order; a hit without a content hash is kept)."""
        versions = _versions(hits)
        return [h for h in hits if h.metadata.get(DOC_HASH) in (None, versions.get(str(h.sentence.doc_id)))]

    def pinned_to(self, hits: Sequence[Hit]) -> _PinnedSource:
        """This source reading, for each document, only sentences of its best hit's version."""
        return _PinnedSource(self, _versions(hits))

    def get_embeddings(self, doc_id: str, indices: Iterable[int]) -> dict[int, np.ndarray]:
        return {}

    def describe(self) -> str:
        if self.docstore is not None:
            return f"the {type(self.docstore).__name__} given as docstore"
        return "the documents given"


class _PinnedSource:
    """A :class:`DocumentSentenceSource` that reads each document at one version (its hash)."""

    def __init__(self, source: DocumentSentenceSource, versions: dict[str, str]) -> None:
        self.source, self.versions = source, versions

    def get_sentences(self, doc_id: str, indices: Iterable[int]) -> dict[int, Sentence]:
        return self.source._sentences(doc_id, indices, self.versions.get(doc_id))

    def get_embeddings(self, doc_id: str, indices: Iterable[int]) -> dict[int, np.ndarray]:
        return {}


def _versions(hits: Sequence[Hit]) -> dict[str, str]:
    """Each document's version (content hash) as its best-ranked hit carrying one has it."""
    versions: dict[str, str] = {}
    for h in hits:
        found = h.metadata.get(DOC_HASH)
        if found is not None:
            versions.setdefault(str(h.sentence.doc_id), str(found))
    return versions
