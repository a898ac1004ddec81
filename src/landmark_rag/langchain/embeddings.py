"""``LandmarkEmbeddings``: the landmark encoder behind LangChain's ``Embeddings`` interface.

LangChain's interface embeds bare strings: ``embed_documents`` cannot know that its texts
are sentences of one document, so on its own a text gets no context. The context-aware
vectors come from one encoder pass over a whole document
(:meth:`LandmarkEmbeddings.embed_document_in_context`), which
:class:`~landmark_rag.langchain.LandmarkRetriever` uses for ingestion and
:class:`~landmark_rag.langchain.LandmarkTextSplitter` (built with these embeddings) runs for
any other vector store, handing the vectors over (``landmark_rag.index.handoff``) so that
``embed_documents`` returns them when the store adds the splitter's sentences. A splitter's
sentence embedded alone warns (``OutOfContextWarning``). Queries are embedded the same way on
every path, so a collection ingested in context is searched correctly through any of them.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.runnables.config import run_in_executor
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from landmark_rag.encode import LandmarkEncoder
from landmark_rag.encode.models.cache import load_encoder
from landmark_rag.index.handoff import OutOfContextWarning, recent_sentences, vectors_for
from landmark_rag.types import EncodedDocument


class LandmarkEmbeddings(BaseModel, Embeddings):
    """Landmark Embedding for LangChain.

    Configuration follows the partner packages (``HuggingFaceEmbeddings`` and friends):

    - ``model_name``: a local model directory, a ``.gguf`` file, an alias of a pip-packaged
      model (``all-MiniLM-L6-v2``, ``SmolLM2-135M-Instruct``) or a hub name; ``None`` is the
      package default.
    - ``device`` / ``dtype``: where and in which precision to run (``None``: automatic).
    - ``batch_size``: encoder inputs per forward pass for documents (``None``: 64 for
      ``sentence`` pooling, whose inputs are single sentences, else 16 windows; measured
      about 2x faster than 16 for single sentences on CPU); ``query_batch_size`` for queries.
    - ``model_kwargs``: overrides of ``LandmarkConfig`` (e.g. ``{"pooling": "landmark"}``).
    - ``show_progress``: progress bars while encoding documents (``None``, the default: only
      once a call has run a few seconds; ``True`` always; ``False`` never).

    The model loads on first use and is shared by instances with the same settings.
    """

    model_config = ConfigDict(extra="forbid", protected_namespaces=(), arbitrary_types_allowed=True)

    model_name: str | None = None
    device: str | None = None
    dtype: str | None = None
    batch_size: int | None = Field(default=None, ge=1)
    query_batch_size: int = Field(default=64, ge=1)
    model_kwargs: dict[str, Any] = Field(default_factory=dict)
    show_progress: bool | None = None

    _encoder: LandmarkEncoder | None = PrivateAttr(default=None)

    @classmethod
    def from_encoder(cls, encoder: LandmarkEncoder, **kwargs: Any) -> LandmarkEmbeddings:
        """Wrap an already-loaded encoder (e.g. one just trained) instead of loading one."""
        out = cls(model_name=encoder.model_name, **kwargs)
        out._encoder = encoder
        return out

    # ------------------------------------------------------------------ the model
    @property
    def encoder(self) -> LandmarkEncoder:
        """The underlying :class:`~landmark_rag.LandmarkEncoder` (loaded on first access)."""
        if self._encoder is None:
            self._encoder = load_encoder(self.model_name, device=self.device, dtype=self.dtype, **self.model_kwargs)
        return self._encoder

    def _batch_size(self) -> int:
        from landmark_rag.ingest.write import encoder_batch_size

        return encoder_batch_size(self.encoder, self.batch_size)

    def identity(self) -> dict[str, Any]:
        """What a vector store must match to mix these vectors with stored ones."""
        return self.encoder.config.identity()

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` under this model's tokenizer (for token budgets)."""
        return self.encoder.count_tokens(text)

    # ------------------------------------------------------------------ LangChain interface
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """The vectors of ``texts``, in context wherever a splitter computed them.

        A text that :class:`~landmark_rag.langchain.LandmarkTextSplitter` (built with these
        embeddings, or others over the same model) produced gets its sentence's in-context
        vector, which the splitter computed in one pass over the whole document: this is how
        any LangChain ``VectorStore`` (``InMemoryVectorStore``, FAISS, pgvector, ...) receives
        landmark vectors through its ordinary ``add_documents``/``from_documents``. Each such
        vector is handed out once, in the order the splitter produced them.

        Any other text is embedded on its own (no shared context): a text of several sentences
        gets the mean of its sentence vectors; a blank text the vector of the text itself as a
        query (never a zero vector). When such a text is a sentence a splitter produced (split
        without ``embeddings=``, or embedded a second time), an :class:`OutOfContextWarning`
        says so and what to do.
        """
        texts = list(texts)
        if not texts:
            return []
        found = vectors_for(self.encoder).take(texts)
        alone = [i for i, v in enumerate(found) if v is None]
        out = np.zeros((len(texts), self.encoder.dim), dtype=np.float32)
        for i, vec in enumerate(found):
            if vec is not None:
                out[i] = vec
        if alone:
            bare = [texts[i] for i in alone]
            sentences = recent_sentences.count(t for t in bare if t.strip())
            if sentences:
                warnings.warn(
                    f"{sentences} of {len(texts)} texts are sentences from LandmarkTextSplitter embedded alone, "
                    "without the document around them (the vectors landmark retrieval is for are computed in "
                    "context). Split with LandmarkTextSplitter(embeddings=<these embeddings>) right before adding "
                    "the sentences to the store: the splitter then encodes each document once and this call "
                    "returns those vectors (docs/langchain.md, 'Any vector store').",
                    OutOfContextWarning,
                    stacklevel=2,
                )
            out[alone] = self._embed_alone(bare)
        return out.astype(float).tolist()

    def _embed_alone(self, texts: list[str]) -> np.ndarray:
        # a blank text gets the model's vector of the text itself, never a zero vector (encode_texts)
        return self.encoder.encode_texts(texts, batch_size=self._batch_size(), show_progress=self.show_progress)

    def embed_query(self, text: str) -> list[float]:
        """Embed a query (``query + LMK`` for landmark-trained models)."""
        return self.encoder.encode_query(text).astype(float).tolist()

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed many queries in batches."""
        texts = list(texts)
        if not texts:
            return []
        return self.encoder.encode_queries(texts, batch_size=self.query_batch_size).astype(float).tolist()

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Async :meth:`embed_documents` (runs in an executor: the encoder is CPU/GPU-bound)."""
        return await run_in_executor(None, self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        """Async :meth:`embed_query`."""
        return await run_in_executor(None, self.embed_query, text)

    # ------------------------------------------------------------------ in context
    def embed_document_in_context(self, document: str | Document, doc_id: str | None = None) -> EncodedDocument:
        """Segment a whole document and embed every sentence in its context (one pass).

        Returns the core ``EncodedDocument``: ``.sentences`` (exact offsets, ``doc_id`` set)
        and ``.embeddings`` (float32 ``[n_sentences, dim]``, L2-normalised), row ``i``
        belonging to sentence ``i``.
        """
        return self.embed_documents_in_context([document], None if doc_id is None else [doc_id])[0]

    def embed_documents_in_context(
        self, documents: Sequence[str | Document], doc_ids: Sequence[str | None] | None = None
    ) -> list[EncodedDocument]:
        """:meth:`embed_document_in_context` for many documents, windows batched together."""
        texts = [d.page_content if isinstance(d, Document) else d for d in documents]
        return self.encoder.encode_documents(
            texts, doc_ids=doc_ids, batch_size=self._batch_size(), show_progress=self.show_progress
        )

    async def aembed_documents_in_context(
        self, documents: Sequence[str | Document], doc_ids: Sequence[str | None] | None = None
    ) -> list[EncodedDocument]:
        """Async :meth:`embed_documents_in_context`."""
        return await run_in_executor(None, self.embed_documents_in_context, documents, doc_ids)


def embeddings_for_store(store: Any) -> LandmarkEmbeddings:
    """Embeddings for the model ``store`` records, set up as at indexing time (default model
    for an unmarked store): the same rule, and the same cached encoder, as the CLI and
    :class:`~landmark_rag.LandmarkIndex` (``store.identity.store_model``)."""
    from landmark_rag.store.identity import store_model

    source, overrides = store_model(store)
    return LandmarkEmbeddings(model_name=source, model_kwargs=overrides)
