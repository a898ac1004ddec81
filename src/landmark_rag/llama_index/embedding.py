"""``LandmarkEmbedding``: a LlamaIndex embedding model that never embeds a sentence alone.

LlamaIndex embeds nodes one string at a time (``get_text_embedding_batch``), which would
throw away exactly what landmark embedding is for: the sentence's surroundings. Used as a
*transformation* (``IngestionPipeline``, ``VectorStoreIndex.from_documents(transformations=
...)``) this class instead groups sentence nodes by document, rebuilds each document, and
encodes every document in one pass, so each node's vector is its in-context sentence
vector. Nodes then carry embeddings, and ``VectorStoreIndex`` does not re-embed them.

Bare strings (``get_text_embedding(s)``) have no document around them; each is treated as
its own document (``LandmarkEncoder.encode_texts``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import warnings
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.callbacks import CBEventType, EventPayload
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events.embedding import EmbeddingEndEvent, EmbeddingStartEvent
from llama_index.core.schema import BaseNode, MetadataMode

from landmark_rag.encode import LandmarkEncoder
from landmark_rag.encode.models.cache import load_encoder
from landmark_rag.encode.models.registry import default_model_name
from landmark_rag.index.handoff import OutOfContextWarning, recent_sentences
from landmark_rag.llama_index.convert import (
    duplicate_id_message,
    is_sentence_node,
    node_doc_id,
    node_text,
    node_to_sentence,
)
from landmark_rag.types import Sentence

logger = logging.getLogger(__name__)
dispatcher = get_dispatcher(__name__)


class LandmarkEmbedding(BaseEmbedding):
    """Landmark sentence embeddings for LlamaIndex.

    Build it from a ready encoder (``LandmarkEmbedding(encoder=enc)``) or from a model name
    or path (``LandmarkEmbedding("all-MiniLM-L6-v2", device="cpu", pooling="mean")``); in the
    second case the model is loaded on first use, so constructing one (e.g. in
    ``Settings``) costs nothing.

    ``embed_batch_size`` is the number of encoder windows per forward pass.
    """

    model_name: str = Field(
        default_factory=default_model_name, description="Model alias, directory or .gguf file (default: the package's)."
    )
    embed_batch_size: int = Field(default=16, gt=0, le=2048, description="Encoder windows per forward pass.")
    device: str | None = Field(default=None, description="torch device; None picks cuda/mps/cpu.")
    encoder_kwargs: dict[str, Any] = Field(
        default_factory=dict, description="LandmarkConfig overrides passed to LandmarkEncoder.from_pretrained."
    )
    show_progress: bool | None = Field(
        default=None,
        description="Progress bar while encoding documents: True always, False never, None once it runs a few seconds.",
    )

    _encoder: LandmarkEncoder | None = PrivateAttr(default=None)
    _load_lock: Any = PrivateAttr(default_factory=threading.Lock)
    _run_lock: Any = PrivateAttr(default_factory=threading.Lock)

    def __init__(
        self,
        model_name: str | None = None,
        *,
        encoder: LandmarkEncoder | None = None,
        device: str | None = None,
        encoder_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        overrides = dict(encoder_kwargs or {})
        for key in ("pooling", "query_pooling", "max_length", "window_overlap", "query_instruction", "dtype"):
            if key in kwargs:  # convenience: LandmarkEmbedding(..., pooling="mean")
                overrides[key] = kwargs.pop(key)
        if encoder is not None:
            model_name = model_name or encoder.model_name
            device = device or str(encoder.device)
        # pydantic's dataclass_transform gives super().__init__ the base's fields only, not these
        super().__init__(  # type: ignore[call-arg]
            model_name=model_name or default_model_name(), device=device, encoder_kwargs=overrides, **kwargs
        )
        self._encoder = encoder

    @classmethod
    def class_name(cls) -> str:
        return "LandmarkEmbedding"

    @classmethod
    def for_vector_store(cls, vector_store: Any, **kwargs: Any) -> LandmarkEmbedding:
        """The model a landmark Chroma collection records, set up as at indexing time.

        ``vector_store``: a ``ChromaVectorStore`` (or a ``ChromaSentenceStore``); an empty
        unmarked collection gets the package default, one holding vectors but no recorded
        model raises ``ModelNotRecordedError`` (name the model). The same rule and the same cached encoder as
        the CLI, :class:`~landmark_rag.LandmarkIndex` and the LangChain adapters.
        """
        from landmark_rag.llama_index.sources import chroma_collection
        from landmark_rag.store import ChromaSentenceStore
        from landmark_rag.store.identity import store_model

        store = vector_store
        if not isinstance(store, ChromaSentenceStore):
            collection = chroma_collection(vector_store)
            if collection is None:
                raise TypeError(f"cannot read a model identity from {type(vector_store).__name__}")
            store = ChromaSentenceStore(collection)
        source, overrides = store_model(store)
        return cls(source, encoder_kwargs=overrides, **kwargs)

    def model_stamp(self) -> dict[str, str | int]:
        """Metadata naming this model, put on every sentence node it embeds as a transformation.

        LlamaIndex's ``ChromaVectorStore`` stores it with the vector, so a collection written
        without any landmark-rag code at write time (``IngestionPipeline(vector_store=...)``,
        ``VectorStoreIndex(nodes, storage_context=...)``) still tells every landmark reader
        which model wrote it, and lets them refuse another (``landmark_rag.store.identity``).
        """
        from landmark_rag.encode.models.registry import default_model
        from landmark_rag.store.identity import model_source, model_stamp

        return model_stamp(self.encoder.config.identity(), model_source(self.model_name, default_model()))

    def __getstate__(self) -> dict[str, Any]:
        """Pickle the settings, not the model (``IngestionPipeline(num_workers=...)`` pickles
        transformations); a worker reloads the encoder from ``model_name`` on first use."""
        saved = (self._encoder, self._load_lock, self._run_lock)
        self._encoder = self._load_lock = self._run_lock = None
        try:
            return super().__getstate__()
        finally:
            self._encoder, self._load_lock, self._run_lock = saved

    @property
    def encoder(self) -> LandmarkEncoder:
        """The underlying encoder, loaded on first use."""
        if self._encoder is None:
            with self._load_lock:
                if self._encoder is None:
                    kwargs = dict(self.encoder_kwargs)
                    dtype = kwargs.pop("dtype", None)
                    # the process-wide cache: one copy of the weights for the CLI, the core and
                    # both framework adapters
                    self._encoder = load_encoder(self.model_name, device=self.device, dtype=dtype, **kwargs)
        return self._encoder

    # ------------------------------------------------------------------ queries
    def _get_query_embedding(self, query: str) -> Embedding:
        with self._run_lock:
            return self.encoder.encode_query(query).tolist()

    async def _aget_query_embedding(self, query: str) -> Embedding:
        return await asyncio.to_thread(self._get_query_embedding, query)

    # ------------------------------------------------------------------ bare texts
    def _get_text_embedding(self, text: str) -> Embedding:
        return self._get_text_embeddings([text])[0]

    async def _aget_text_embedding(self, text: str) -> Embedding:
        return await asyncio.to_thread(self._get_text_embedding, text)

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        """Each text is its own document: there is no context to put it in.

        When the texts are sentence nodes of ``LandmarkNodeParser`` (LlamaIndex hands over
        bare strings, e.g. ``VectorStoreIndex(nodes, embed_model=...)`` on nodes that carry no
        embedding yet), an :class:`~landmark_rag.index.handoff.OutOfContextWarning` says so
        and what to do.
        """
        sentences = recent_sentences.count(t for t in texts if t.strip())
        if sentences:
            warnings.warn(
                f"{sentences} of {len(texts)} texts are sentence nodes of LandmarkNodeParser, embedded as bare "
                "strings without their document (LlamaIndex passes the embedding model strings, e.g. in "
                "VectorStoreIndex(nodes, embed_model=...) when the nodes carry no embedding yet). Embed the nodes "
                "in context first: nodes = embed_model(nodes), or transformations=[parser, embed_model]; "
                "VectorStoreIndex keeps the vectors nodes carry (docs/llama_index.md).",
                OutOfContextWarning,
                stacklevel=2,
            )
        with self._run_lock:
            return self.encoder.encode_texts(texts, batch_size=self.embed_batch_size).tolist()

    async def _aget_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return await asyncio.to_thread(self._get_text_embeddings, texts)

    # ------------------------------------------------------------------ transformation
    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        """Set ``node.embedding`` on every node, encoding each document in one pass.

        Sentence nodes (from ``LandmarkNodeParser``) are grouped by document; the document
        is the one passed in ``source_documents=`` (or present among ``nodes``) when its text
        matches the nodes, otherwise it is rebuilt from the nodes' texts and offsets. Other
        nodes are embedded as standalone texts.
        """
        nodes = list(nodes)
        sentence_nodes = [n for n in nodes if is_sentence_node(n)]
        other = [n for n in nodes if not is_sentence_node(n)]
        sources = _source_texts(kwargs.get("source_documents"), nodes)
        by_doc: dict[str, list[BaseNode]] = defaultdict(list)
        for n in sentence_nodes:
            by_doc[node_doc_id(n)].append(n)
        sentence_ids = {id(n) for n in sentence_nodes}
        other = [n for n in other if id(n) not in sentence_ids and n.node_id not in by_doc]
        if by_doc:
            self._embed_documents(by_doc, sources)
        if other:
            texts = [n.get_content(metadata_mode=MetadataMode.EMBED) for n in other]
            for n, vec in zip(other, self.get_text_embedding_batch(texts), strict=True):
                n.embedding = vec
        return nodes

    async def acall(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        return await asyncio.to_thread(self.__call__, nodes, **kwargs)

    def _embed_documents(self, by_doc: dict[str, list[BaseNode]], sources: dict[str, str]) -> None:
        doc_ids, texts, sentence_lists, ordered = [], [], [], []
        for doc_id, doc_nodes in by_doc.items():
            pairs = sorted(((node_to_sentence(n), n) for n in doc_nodes), key=lambda p: p[0].index)
            sents = [p[0] for p in pairs]
            if len({s.index for s in sents}) != len(sents):  # two Documents with one id_
                raise ValueError(duplicate_id_message(doc_id))
            text = sources.get(doc_id)
            if text is None or any(text[s.start : s.end] != s.text for s in sents):
                text = rebuild_text(sents, doc_id)
            _warn_gaps(doc_id, sents)
            doc_ids.append(doc_id)
            texts.append(text)
            sentence_lists.append(sents)
            ordered.append([p[1] for p in pairs])
        model_dict = self.to_payload()
        dispatcher.event(EmbeddingStartEvent(model_dict=model_dict))
        with self.callback_manager.event(CBEventType.EMBEDDING, payload={EventPayload.SERIALIZED: model_dict}) as event:
            with self._run_lock:
                encoded = self.encoder.encode_documents(
                    texts,
                    doc_ids,
                    sentences=sentence_lists,
                    batch_size=self.embed_batch_size,
                    show_progress=self.show_progress,
                )
            chunks: list[str] = []
            vectors: list[list[float]] = []
            stamp = self.model_stamp()
            for doc, doc_nodes in zip(encoded, ordered, strict=True):
                for node, vec in zip(doc_nodes, np.asarray(doc.embeddings, dtype=np.float32), strict=True):
                    node.embedding = vec.tolist()
                    _stamp(node, stamp)
                    chunks.append(node_text(node))
                    vectors.append(node.embedding)
            event.on_end(payload={EventPayload.CHUNKS: chunks, EventPayload.EMBEDDINGS: vectors})
        dispatcher.event(EmbeddingEndEvent(chunks=chunks, embeddings=vectors))


def _stamp(node: BaseNode, stamp: dict[str, str | int]) -> None:
    """Put the model stamp on a node, hidden from embeddings and prompts like the schema keys."""
    node.metadata.update(stamp)
    for keys in (node.excluded_embed_metadata_keys, node.excluded_llm_metadata_keys):
        keys.extend(k for k in stamp if k not in keys)


def rebuild_text(sentences: Sequence[Sentence], doc_id: str | None = None) -> str:
    """The document text as far as its sentences cover it, from offsets and ``space_before``.

    Exact wherever the sentences are contiguous; a gap (a missing sentence) is filled with
    spaces so every offset still points at its sentence.
    """
    parts: list[str] = []
    length = 0
    for s in sorted(sentences, key=lambda x: x.index):
        gap = s.start - length
        if gap < 0 or s.end - s.start != len(s.text):
            raise ValueError(
                f"sentence {s.index} of document {doc_id!r} has offsets that overlap or do not match its text"
            )
        space = s.space_before[-gap:] if gap else ""
        parts.append(" " * (gap - len(space)) + space + s.text)
        length = s.end
    return "".join(parts)


def _source_texts(documents: Any, nodes: Sequence[BaseNode]) -> dict[str, str]:
    """Texts of whole documents that were handed in, by id."""
    out: dict[str, str] = {}
    if isinstance(documents, dict):
        documents = list(documents.values())
    for doc in [*(documents or []), *(n for n in nodes if not is_sentence_node(n))]:
        out.setdefault(doc.node_id, node_text(doc))
    return out


def _warn_gaps(doc_id: str, sentences: Sequence[Sentence]) -> None:
    indices = [s.index for s in sentences]
    if indices != list(range(len(indices))):  # a missing head or a hole (a missing tail is invisible)
        logger.warning(
            "document %r: only %d of its sentences were given together; the missing ones are not part of "
            "the context of the others. Pass all sentence nodes of a document in one call.",
            doc_id,
            len(indices),
        )
