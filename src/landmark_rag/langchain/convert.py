"""Translations between landmark-rag records and LangChain ``Document`` objects.

Adapters hold no algorithm: these functions only move fields. Sentence documents carry the
core schema (``landmark_rag.store.schema``) so a collection or list written here is readable
by every other part of the package, and passage documents carry ``Passage.span_metadata()``.
"""

from __future__ import annotations

import copy
from typing import Any

from langchain_core.documents import Document

from landmark_rag.store.schema import DOC_ID, INDEX, sentence_from_metadata, sentence_id, sentence_metadata
from landmark_rag.types import Hit, Passage, Sentence


def sentence_document(
    sentence: Sentence, *, doc_hash: str | None = None, metadata: dict[str, Any] | None = None
) -> Document:
    """One sentence as a ``Document``: exact text, schema metadata, id ``doc_id:index``.

    The input document's own metadata is copied unchanged (LangChain splitters keep it),
    and the schema keys are added on top; the schema keys win on a name clash because the
    rest of the package locates the sentence by them.
    """
    schema = sentence_metadata(sentence, doc_hash)
    md = {**copy.deepcopy(metadata or {}), **schema}
    return Document(page_content=sentence.text, metadata=md, id=sentence_id(str(sentence.doc_id), sentence.index))


def passage_document(passage: Passage) -> Document:
    """A retrieved passage: exact text of the span, the span's metadata and its score.

    The id ``doc_id:first-last`` names the sentence range, so the same span retrieved twice
    has the same id (useful for de-duplication in ensembles).
    """
    md = {**passage.metadata, **passage.span_metadata()}
    return Document(
        page_content=passage.text, metadata=md, id=passage.id
    )


def has_sentence_metadata(document: Document) -> bool:
    """Whether ``document`` carries enough of the schema to be located in its source document."""
    md = document.metadata or {}
    return DOC_ID in md and INDEX in md and "start" in md and "end" in md


def hit_from_document(document: Document, score: float) -> Hit:
    """A sentence ``Document`` (schema metadata) as a core ``Hit`` with ``score``."""
    md = dict(document.metadata or {})
    return Hit(sentence_from_metadata(document.page_content, md), float(score), md)
