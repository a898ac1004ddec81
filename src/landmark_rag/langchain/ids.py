"""Which id a LangChain ``Document`` gets as a landmark-rag source document.

The id decides what "the same document" means: re-adding a document under the same id
replaces its sentences, and every sentence id (``doc_id:index``) is derived from it. The
rule, in order:

1. ``Document.id`` when set (the LangChain field meant for exactly this);
2. else ``metadata["source"]`` (what LangChain loaders set: a path or URL), so re-loading
   a file and ingesting it again replaces the old copy instead of duplicating it;
3. else a hash of the text (``ingest.hash_id``, the id ``LandmarkIndex.add_texts`` gives a
   text without one), so ingesting the same anonymous text twice is idempotent.

Loaders that emit several documents per source (PDF pages, CSV rows) share one
``source``; such documents must be given distinct ``Document.id`` values, and a batch in
which two different texts resolve to the same id is refused rather than letting one
silently overwrite the other.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.documents import Document

from landmark_rag.ingest import hash_id


def source_doc_id(document: Document) -> str:
    """The id of ``document`` by the rule in this module's docstring."""
    if document.id:
        return str(document.id)
    source = (document.metadata or {}).get("source")
    if source not in (None, ""):
        return str(source)
    return hash_id(document.page_content)


def resolve_doc_ids(documents: Sequence[Document], ids: Sequence[str] | None = None) -> list[str]:
    """Ids for a batch: explicit ``ids`` win, else :func:`source_doc_id` per document.

    Raises ``ValueError`` when two documents with different text end up with one id (one
    would replace the other); exact duplicates are allowed and collapse to one.
    """
    if ids is not None and len(ids) != len(documents):
        raise ValueError(f"got {len(ids)} ids for {len(documents)} documents")
    out = [str(ids[i]) if ids is not None and ids[i] else source_doc_id(d) for i, d in enumerate(documents)]
    seen: dict[str, str] = {}
    for doc_id, doc in zip(out, documents, strict=True):
        prior = seen.setdefault(doc_id, doc.page_content)
        if prior != doc.page_content:
            raise ValueError(
                f"two different documents resolve to the id {doc_id!r} (from Document.id, metadata['source'] "
                "or the content hash, in that order); give each a distinct Document.id, e.g. "
                'f"{source}#page={page}" for pages of one file'
            )
    return out
