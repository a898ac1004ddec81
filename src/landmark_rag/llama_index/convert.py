"""Translation between LlamaIndex nodes and the core record types (no algorithm here).

A sentence node is a ``TextNode`` whose id is ``sentence_id(doc_id, index)`` and whose
metadata carries the core schema keys (:mod:`landmark_rag.store.schema`). Keeping exactly
the core layout is what lets the core ``ChromaSentenceStore`` read (and expand from) a
collection that LlamaIndex's ``ChromaVectorStore`` wrote, and vice versa.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import BaseNode, Document, MetadataMode, NodeRelationship, RelatedNodeInfo, TextNode

from landmark_rag.extract import Extracted
from landmark_rag.ingest import Page, join_pages
from landmark_rag.store.schema import DOC_ID, END, INDEX, START, STORE_KEYS, sentence_from_metadata
from landmark_rag.types import Hit, Passage, Sentence

#: Keys of a passage's span metadata (``Passage.span_metadata()``).
SPAN_KEYS = ("doc_id", "start", "end", "first_sentence", "last_sentence", "hit_sentences", "score", "cosine")
#: Where a reader puts a page's file and label (``SimpleDirectoryReader``: ``file_path``, else
#: ``file_name``; ``page_label``).
FILE_KEYS = ("file_path", "file_name")
PAGE_LABEL = "page_label"

#: Structural keys an embedding model or an LLM prompt must never see: they are offsets and
#: ids, not content, and would only add noise to vectors and tokens to prompts.
HIDDEN_KEYS = tuple(dict.fromkeys((*STORE_KEYS, *SPAN_KEYS)))


def is_sentence_node(node: BaseNode) -> bool:
    """True for nodes written by :class:`~landmark_rag.llama_index.LandmarkNodeParser`: the
    document id, the sentence index and its span all present (``doc_id`` alone is a common
    user key, and a node without a span cannot be placed in its document)."""
    md = node.metadata or {}
    return isinstance(node, TextNode) and all(key in md for key in (DOC_ID, INDEX, START, END))


def node_text(node: BaseNode) -> str:
    """The node's own text, without any metadata rendered into it."""
    return node.get_content(metadata_mode=MetadataMode.NONE)


def node_to_sentence(node: BaseNode) -> Sentence:
    """The core ``Sentence`` a sentence node stands for."""
    return sentence_from_metadata(node_text(node), dict(node.metadata))


def node_doc_id(node: BaseNode) -> str:
    """The document a node belongs to: the schema's doc id, else LlamaIndex's ref doc id."""
    md = node.metadata or {}
    if DOC_ID in md:
        return str(md[DOC_ID])
    return str(node.ref_doc_id or node.node_id)


def duplicate_id_message(doc_id: str) -> str:
    """The error for two documents sharing one ``id_`` in a run (their sentence ids collide)."""
    return (
        f"document id {doc_id!r} is used by more than one document in this run; give every Document a "
        "unique id_ (nothing was written)"
    )


def node_to_hit(node: BaseNode, score: float | None) -> Hit:
    """A retrieved sentence node as a core ``Hit``."""
    return Hit(node_to_sentence(node), float(score if score is not None else 0.0), dict(node.metadata))


def passage_to_node(passage: Passage, excluded_keys: list[str] | None = None) -> TextNode:
    """A passage as a ``TextNode``: exact slice as text, span recorded in metadata.

    The id names the sentence range, so the same span retrieved twice is the same node.
    """
    metadata: dict[str, Any] = {**passage.metadata, **passage.span_metadata()}
    hidden = list(dict.fromkeys([*(excluded_keys or []), *HIDDEN_KEYS]))
    return TextNode(
        id_=passage.id,
        text=passage.text,
        start_char_idx=passage.start,
        end_char_idx=passage.end,
        metadata=metadata,
        excluded_embed_metadata_keys=hidden,
        excluded_llm_metadata_keys=hidden,
        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=passage.doc_id)},
    )


def node_page(node: BaseNode) -> Page | None:
    """A reader's page of a file as a core :class:`~landmark_rag.ingest.Page` (``None``: not one)."""
    md = node.metadata or {}
    key = next((str(md[k]) for k in FILE_KEYS if md.get(k) not in (None, "")), None)
    label = md.get(PAGE_LABEL)
    if key is None or label in (None, "") or is_sentence_node(node):
        return None
    own = {k: v for k, v in md.items() if k != PAGE_LABEL}
    return Page(key, node_text(node), own, label=str(label))


def join_page_nodes(nodes: Sequence[BaseNode]) -> list[tuple[BaseNode, Extracted | None]]:
    """The documents to split: the pages of one file joined into one ``Document`` (id: the
    file's path) with where its pages are; every other node as it is, in input order."""
    pages = {id(n): p for n in nodes if (p := node_page(n)) is not None}
    joined = {d.doc_id: d for d in join_pages(list(pages.values()))}
    out: list[tuple[BaseNode, Extracted | None]] = []
    for node in nodes:
        page = pages.get(id(node))
        if page is None:
            out.append((node, None))
        elif (doc := joined.pop(page.doc_id, None)) is not None:  # the file's first page stands for it
            out.append((_joined_document(node, doc.doc_id, doc.text, dict(doc.metadata)), doc.extracted))
    return out


def _joined_document(first: BaseNode, doc_id: str, text: str, metadata: dict[str, Any]) -> Document:
    """One ``Document`` for a file's joined pages, rendered like its first page."""
    hidden = [k for k in first.excluded_embed_metadata_keys or [] if k != PAGE_LABEL]
    hidden_llm = [k for k in first.excluded_llm_metadata_keys or [] if k != PAGE_LABEL]
    return Document(
        id_=doc_id, text=text, metadata=metadata, excluded_embed_metadata_keys=hidden,
        excluded_llm_metadata_keys=hidden_llm, metadata_template=first.metadata_template,
        metadata_separator=first.metadata_separator,
    )
