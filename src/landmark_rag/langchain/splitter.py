"""``LandmarkTextSplitter``: documents -> one ``Document`` per sentence, with exact offsets.

Landmark retrieval is chunking-free: the unit it indexes is the sentence, and the passage
returned to the user is assembled at query time. This splitter exposes that unit to
LangChain pipelines that want to see or store the sentences themselves (e.g. a custom
vector store feeding :class:`~landmark_rag.langchain.BoundaryExpansionCompressor`).

Built with ``embeddings=``, it is also where the in-context vectors are made for such a
store: it sees whole documents, so it encodes each one in one pass and hands the sentence
vectors to the embeddings (``landmark_rag.index.handoff``), whose ``embed_documents``
returns them when any ``VectorStore`` adds the sentences.

Every output ``Document`` has ``page_content == source_text[start:end]``, the core schema
metadata (``doc_id``, ``sentence_index``, ``start``, ``end``, ``space_before``,
``doc_hash``) on top of a copy of the input's metadata, and ``id == "doc_id:index"``.
``doc_id`` follows :mod:`landmark_rag.langchain.ids` (``Document.id``, else
``metadata["source"]``, else a content hash).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from langchain_core.documents import BaseDocumentTransformer, Document
from langchain_core.runnables.config import run_in_executor

from landmark_rag.index.handoff import recent_sentences, vectors_for
from landmark_rag.langchain.convert import sentence_document
from landmark_rag.langchain.embeddings import LandmarkEmbeddings
from landmark_rag.langchain.ids import source_documents
from landmark_rag.segment import Segmenter, segment_sentences
from landmark_rag.store.schema import DOC_ID
from landmark_rag.types import Sentence


class LandmarkTextSplitter(BaseDocumentTransformer):
    """Split documents into sentence ``Document`` objects (a LangChain document transformer).

    ``embeddings``: when given, sentences are cut exactly as that model's encoder cuts them
    (over-long sentences split to fit a window), so the output lines up one-to-one with the
    vectors :class:`~landmark_rag.langchain.LandmarkRetriever` stores. Without it, plain
    sentence segmentation is used and no model is loaded.
    ``segmenter``: any callable from text to ``(start, end)`` spans (default: sentencex).
    ``in_context``: with ``embeddings``, also encode every document in one pass and hand the
    sentence vectors to ``embeddings`` (default ``True``), so that a vector store adding the
    output through those embeddings stores the in-context vectors; ``False`` only cuts.
    """

    def __init__(
        self,
        *,
        embeddings: LandmarkEmbeddings | None = None,
        segmenter: Segmenter | None = None,
        in_context: bool = True,
    ) -> None:
        self.embeddings = embeddings
        self.segmenter = segmenter
        self.in_context = in_context

    def _sentences(self, text: str, doc_id: str | None) -> list[Sentence]:
        if self.embeddings is not None:
            return self.embeddings.encoder.segment(text, doc_id, self.segmenter)
        return segment_sentences(text, segmenter=self.segmenter, doc_id=doc_id)

    def split_text(self, text: str) -> list[str]:
        """The sentences of ``text`` as strings (exact slices; whitespace between them dropped)."""
        return [s.text for s in self._sentences(text, None)]

    def split_documents(self, documents: Iterable[Document], ids: Sequence[str] | None = None) -> list[Document]:
        """One ``Document`` per sentence of every input document, in order.

        ``ids`` overrides the document-id rule per input document; the pages of one file
        (an int ``metadata["page"]``, as ``PyPDFLoader`` gives) are split as one document.
        With ``embeddings`` (and ``in_context``), every document is encoded here, once, and
        the vectors wait in the embeddings for a vector store to add these sentences.
        """
        out: list[Document] = []
        sources = source_documents(list(documents), ids)[0]
        per_doc = [self._sentences(doc.text, doc.doc_id) for doc in sources]
        vectors = self._encode(sources, per_doc)
        for doc, sentences in zip(sources, per_doc, strict=True):
            if doc.extracted is not None:  # pages of one file, joined: each sentence keeps its page
                sentences = doc.extracted.locate(sentences)
            for sentence in sentences:
                out.append(sentence_document(sentence, doc_hash=doc.doc_hash, metadata=dict(doc.metadata)))
        texts = [d.page_content for d in out]
        recent_sentences.add(texts)
        if vectors is not None:
            if self.embeddings is None:  # _encode returns vectors only when there are embeddings
                raise RuntimeError("sentence vectors were encoded without embeddings to hold them")
            owners = [str(d.metadata[DOC_ID]) for d in out]
            vectors_for(self.embeddings.encoder).put(texts, vectors, owners)
        return out

    def _encode(self, sources: list[Any], per_doc: list[list[Sentence]]) -> Any:
        """Every document encoded in one pass over its sentences (rows in output order), or
        ``None`` when this splitter only cuts."""
        if self.embeddings is None or not self.in_context:
            return None
        encoded = self.embeddings.encoder.encode_documents(
            [d.text for d in sources],
            [d.doc_id for d in sources],
            sentences=per_doc,
            batch_size=self.embeddings._batch_size(),
            show_progress=self.embeddings.show_progress,
        )
        rows = [e.embeddings for e in encoded if len(e)]
        return np.concatenate(rows) if rows else np.zeros((0, self.embeddings.encoder.dim), dtype=np.float32)

    def create_documents(
        self, texts: Sequence[str], metadatas: Sequence[dict[str, Any]] | None = None, ids: Sequence[str] | None = None
    ) -> list[Document]:
        """Like ``TextSplitter.create_documents``: raw texts (and metadata) -> sentence documents."""
        metas = list(metadatas) if metadatas is not None else [{}] * len(texts)
        if len(metas) != len(texts):
            raise ValueError(f"got {len(metas)} metadatas for {len(texts)} texts")
        return self.split_documents(
            [Document(page_content=t, metadata=dict(m)) for t, m in zip(texts, metas, strict=True)], ids
        )

    def transform_documents(self, documents: Sequence[Document], **kwargs: Any) -> Sequence[Document]:
        """The ``BaseDocumentTransformer`` entry point; same as :meth:`split_documents`."""
        return self.split_documents(documents, kwargs.get("ids"))

    async def atransform_documents(self, documents: Sequence[Document], **kwargs: Any) -> Sequence[Document]:
        """Async :meth:`transform_documents` (segmentation is CPU-bound, so an executor)."""
        return await run_in_executor(None, self.transform_documents, documents, **kwargs)
