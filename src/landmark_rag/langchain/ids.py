"""Which id a LangChain ``Document`` gets as a landmark-rag source document.

The id decides what "the same document" means: re-adding a document under the same id
replaces its sentences, and every sentence id (``doc_id:index``) is derived from it. The
rule, in order:

1. ``Document.id`` when set (the LangChain field meant for exactly this);
2. else ``metadata["source"]`` (what LangChain loaders set: a path or URL), so re-loading
   a file and ingesting it again replaces the old copy instead of duplicating it;
3. else a hash of the text (``ingest.hash_id``, the id ``LandmarkIndex.add_texts`` gives a
   text without one), so ingesting the same anonymous text twice is idempotent.

Pages of one file are one document: documents without ``Document.id`` that share
``source`` and carry an int ``metadata["page"]`` (0-based, as ``PyPDFLoader`` and the other
LangChain PDF loaders set it) are joined in page order and encoded in one pass, each
sentence keeping its page (1-based: ``page + 1``); the rule is the core's
(:func:`landmark_rag.ingest.join_pages`). Other loaders that emit several documents per
source (CSV rows) must give them distinct ``Document.id`` values: a batch in which two
different texts without page numbers resolve to the same id is refused rather than letting
one silently overwrite the other.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.documents import Document

from landmark_rag.ingest import Page, SourceDocument, hash_id, join_pages

#: The metadata a LangChain PDF loader puts on each page: its 0-based number and its label.
PAGE_KEYS = ("page", "page_label")


def source_doc_id(document: Document) -> str:
    """The id of ``document`` by the rule in this module's docstring."""
    if document.id:
        return str(document.id)
    source = (document.metadata or {}).get("source")
    if source not in (None, ""):
        return str(source)
    return hash_id(document.page_content)


def document_page(document: Document, doc_id: str | None = None) -> Page:
    """``document`` as a core :class:`~landmark_rag.ingest.Page`: numbered when it is a page of
    its ``source`` (no ``Document.id`` or explicit id, an int ``metadata["page"]``)."""
    md = dict(document.metadata or {})
    page = md.get("page")
    if doc_id is None and not document.id and md.get("source") not in (None, "") \
            and isinstance(page, int) and not isinstance(page, bool):
        label = md.get("page_label")
        own = {k: v for k, v in md.items() if k not in PAGE_KEYS}
        return Page(str(md["source"]), document.page_content, own, page + 1, None if label is None else str(label))
    return Page(doc_id or source_doc_id(document), document.page_content, md)


def _conflict(doc_id: str) -> str:
    return (
        f"two different documents resolve to the id {doc_id!r} (from Document.id, metadata['source'] "
        "or the content hash, in that order); give each a distinct Document.id, or the pages of one "
        "file their int metadata['page']"
    )


def source_documents(
    documents: Sequence[Document], ids: Sequence[str] | None = None
) -> tuple[list[SourceDocument], list[str]]:
    """The core documents a batch makes (pages of one file joined) and each input's id.

    Raises ``ValueError`` when two documents with different text end up with one id (one
    would replace the other); exact duplicates are allowed and collapse to one.
    """
    if ids is not None and len(ids) != len(documents):
        raise ValueError(f"got {len(ids)} ids for {len(documents)} documents")
    pages = [document_page(d, str(ids[i]) if ids is not None and ids[i] else None) for i, d in enumerate(documents)]
    return join_pages(pages, _conflict), [p.doc_id for p in pages]
