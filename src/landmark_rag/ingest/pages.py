"""Pages of one file, as framework loaders give them, joined into one document.

LangChain's PDF loaders (``PyPDFLoader``) and LlamaIndex's ``SimpleDirectoryReader`` give one
framework document per page. Landmark embedding encodes a whole document in one pass, so a
file's pages are written as ONE document here: joined in page order by the same rule as a
PDF's own text layer (:func:`~landmark_rag.extract.result.join_page_texts`), each sentence
keeping the page it starts on. Both adapters translate their documents into :class:`Page`
and call :func:`join_pages`; the rule lives only here:

* pages with the same ``doc_id`` and a ``number`` or a ``label`` are one document, sorted
  by number (:func:`page_numbers`); the same page given twice with the same text counts once;
* the joined document's metadata is what all its pages share (a page's own keys, such as
  its label, differ from page to page and are left out);
* a document without a page number stays as it is; two different texts under one id, the
  same page number with two texts, or pages mixed with a pageless document under one id,
  raise ``ValueError`` (one would silently replace the other).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from landmark_rag.extract import Extracted
from landmark_rag.extract.result import join_page_texts
from landmark_rag.ingest.sources import SourceDocument, no_text_error


@dataclass(frozen=True)
class Page:
    """A framework document: a page of a file (``number``, 1-based) or, without a number, a
    whole document. ``label``: the page's own name where it has one ("iv")."""

    doc_id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    number: int | None = None
    label: str | None = None


def _conflict(doc_id: str) -> str:
    return f"two different documents resolve to the id {doc_id!r}; give each a distinct id"


def join_pages(pages: Sequence[Page], conflict: Callable[[str], str] = _conflict) -> list[SourceDocument]:
    """The documents ``pages`` make, in the order each id first appears (see the module
    docstring for the rule). ``conflict(doc_id)``: the message of the ``ValueError`` for two
    different pageless texts under one id (each adapter names its own id rule)."""
    groups: dict[str, list[Page]] = {}
    for i, page in enumerate(pages):
        if page.number is None and page.label is None and not page.text.strip():
            raise no_text_error(i, page.doc_id)  # a blank page of a paged document is fine
        groups.setdefault(page.doc_id, []).append(page)
    return [_document(doc_id, group, conflict) for doc_id, group in groups.items()]


def _document(doc_id: str, group: list[Page], conflict: Callable[[str], str]) -> SourceDocument:
    paged = [p for p in group if p.number is not None or p.label is not None]
    if not paged:
        if any(p.text != group[0].text for p in group):
            raise ValueError(conflict(doc_id))
        return SourceDocument(doc_id, group[0].text, dict(group[0].metadata))
    if len(paged) != len(group):
        raise ValueError(f"document id {doc_id!r} is given both as pages and as a document without a page number")
    by_number: dict[int, Page] = {}
    for number, p in sorted(zip(page_numbers(group), group, strict=True), key=lambda t: t[0]):
        seen = by_number.setdefault(number, p)
        if seen.text != p.text:
            raise ValueError(f"page {number} of {doc_id!r} is given twice with different text")
    ordered = list(by_number.values())
    text, spans = join_page_texts([p.text for p in ordered], [p.label for p in ordered], list(by_number))
    if not text.strip():
        raise ValueError(f"document {doc_id!r} has no text on any of its pages")
    metadata = shared_metadata([p.metadata for p in ordered])
    return SourceDocument(doc_id, text, metadata, extracted=Extracted(text, "pages", pages=spans))


def page_numbers(pages: Sequence[Page]) -> list[int]:
    """Each page's number: its own where all have one, else its label where every label is a
    number ("12"), else its position in the order given (labels such as "iv", "A-3")."""
    if all(p.number is not None for p in pages):
        return [p.number or 0 for p in pages]
    labels = [(p.label or "").strip() for p in pages]
    if all(label.isdigit() for label in labels):
        return [int(label) for label in labels]
    return list(range(1, len(pages) + 1))


def shared_metadata(metadatas: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The keys every mapping has with one value (in the first one's order)."""
    first, rest = metadatas[0], metadatas[1:]
    return {k: v for k, v in first.items() if all(k in m and m[k] == v for m in rest)}


__all__ = ["Page", "join_pages", "page_numbers", "shared_metadata"]
