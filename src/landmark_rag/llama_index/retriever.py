"""``LandmarkHybridRetriever``: sentence hits ranked by vectors fused with BM25, for LlamaIndex.

The usual LlamaIndex hybrid set-up (``QueryFusionRetriever`` over a vector retriever and a
``BM25Retriever``) fuses *chunks*; over landmark sentence nodes it would fuse sentences but
keep its own BM25 copy of the corpus in memory, with its own tokenisation, out of step with
the vector store. This retriever asks the package's own hybrid search instead: the landmark
vectors in the ``ChromaVectorStore`` and the sentence-level BM25 index kept beside that same
collection (``landmark_rag.store.lexical``, rebuilt from the stored sentences, so it needs no
docstore and follows re-ingestion), fused as the model's ``landmark_config.json`` says
(``landmark_rag.retrieve.fusion``).

It returns one ``NodeWithScore`` per *sentence* (score = the fused score), exactly what
``BoundaryExpansionPostprocessor`` expands, so::

    retriever = LandmarkHybridRetriever(vector_store=vector_store, embed_model=embed, similarity_top_k=8)
    engine = RetrieverQueryEngine.from_args(
        retriever, node_postprocessors=[BoundaryExpansionPostprocessor(vector_store=vector_store, top_n=3)]
    )

The query embedding is set on the ``QueryBundle``, so the adaptive expansion can reuse it.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import numpy as np
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeRelationship, NodeWithScore, QueryBundle, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores import MetadataFilters

from landmark_rag.expand import check_max_tokens
from landmark_rag.index import LandmarkIndex
from landmark_rag.llama_index.convert import HIDDEN_KEYS
from landmark_rag.llama_index.sources import chroma_collection
from landmark_rag.retrieve.fusion import FusionConfig, check_mode
from landmark_rag.retrieve.ranking import DENSE_SCORE, LEXICAL_SCORE
from landmark_rag.store import ChromaSentenceStore, sentence_id
from landmark_rag.store.identity import recorded_config
from landmark_rag.store.schema import VERSION
from landmark_rag.types import Hit


class LandmarkHybridRetriever(BaseRetriever):
    """Sentence nodes from a landmark ``ChromaVectorStore``, ranked dense, lexical or hybrid.

    - ``vector_store``: the ``ChromaVectorStore`` the ``LandmarkNodeParser`` +
      ``LandmarkEmbedding`` pipeline wrote into (any landmark-rag collection works);
    - ``embed_model``: the ``LandmarkEmbedding`` that wrote it (for query vectors and the
      model's fusion defaults); not needed for ``mode="lexical"``;
    - ``similarity_top_k``: sentence hits returned (the postprocessor merges them into
      passages, so ask for a few more than the passages you want);
    - ``max_tokens``: instead of a number of hits, a context budget in tokens: the hits a
      budgeted search reads (as many as it takes to fill the budget), so a
      ``BoundaryExpansionPostprocessor`` with the same ``max_tokens`` returns the passages
      ``LandmarkIndex.search(query, max_tokens=...)`` would;
    - ``mode``: ``hybrid``, ``dense`` or ``lexical``; ``None`` = the model's default;
    - ``fusion``: a ``FusionConfig`` or a dict of overrides (``method``, ``weight``, ``depth``,
      ``language``) on top of the model's;
    - ``filters``: LlamaIndex ``MetadataFilters``, translated as ``ChromaVectorStore`` translates
      them (so both retrievers select the same sentences); ``where``: a raw Chroma metadata
      filter; both given, a sentence must match both;
    - ``cache_dir``: where the lexical index is cached (default: beside a local store, in
      memory for a server; ``False``: memory only).
    """

    def __init__(
        self,
        vector_store: Any,
        embed_model: BaseEmbedding | None = None,
        *,
        similarity_top_k: int = 8,
        max_tokens: int | None = None,
        mode: Literal["hybrid", "dense", "lexical"] | None = None,
        fusion: FusionConfig | dict[str, Any] | None = None,
        where: dict[str, Any] | None = None,
        filters: MetadataFilters | None = None,
        cache_dir: Any = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        collection = chroma_collection(vector_store)
        if collection is None:
            raise TypeError(
                f"LandmarkHybridRetriever needs a ChromaVectorStore, not {type(vector_store).__name__}"
            )
        if similarity_top_k < 1:
            raise ValueError("similarity_top_k must be at least 1")
        if mode is not None:
            check_mode(mode)  # a clear error before anything is loaded
        self.embed_model = embed_model
        self.similarity_top_k = int(similarity_top_k)
        self.max_tokens = check_max_tokens(max_tokens) if max_tokens is not None else None
        encoder = embed_model.encoder if embed_model is not None and hasattr(embed_model, "encoder") else None
        overrides = fusion.to_dict() if isinstance(fusion, FusionConfig) else dict(fusion or {})
        if mode is not None:
            overrides["mode"] = mode
        # the core index does the work: same hits, fusion and lexical index as every other entry point;
        # with the collection's manifest, so both halves see the versions readers see (a
        # ReplaceDocuments collection keeps versioned records, mid-replace two versions)
        store = ChromaSentenceStore.for_collection(collection)
        # without an encoder the model's fusion (BM25 parameters, lexical context) comes from
        # the config of the model the store records, read without its weights
        config = recorded_config(store) if encoder is None else None
        self.index = LandmarkIndex(store, encoder, config=config, fusion=overrides, lexical_cache=cache_dir)
        self.mode = self.index.resolve_mode()
        if self.mode != "lexical" and embed_model is None:
            raise ValueError(f"mode {self.mode!r} needs the embed_model that wrote the vectors")
        self.filters = filters
        self.where = _combined_where(where, filters)
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @property
    def fusion(self) -> FusionConfig:
        """The fusion settings in use (the model's, with this retriever's overrides)."""
        return self.index.fusion

    @property
    def lexical(self) -> Any:
        """The sentence-level BM25 index beside the collection (``refresh()`` forces a re-sync)."""
        return self.index.lexical

    def _query_vector(self, query_bundle: QueryBundle) -> np.ndarray | None:
        if self.mode == "lexical":
            return None
        if query_bundle.embedding is None:
            assert self.embed_model is not None
            query_bundle.embedding = self.embed_model.get_query_embedding(query_bundle.query_str)
        return _unit(query_bundle.embedding)

    def _search(self, query_bundle: QueryBundle, vector: np.ndarray | None) -> list[NodeWithScore]:
        if self.max_tokens is not None:
            hits = self.index.hits(
                query_bundle.query_str, max_tokens=self.max_tokens, mode=self.mode, where=self.where,
                query_vector=vector,
            )
        else:
            hits = self.index.hits(
                query_bundle.query_str, self.similarity_top_k, mode=self.mode, where=self.where, query_vector=vector
            )
        return [NodeWithScore(node=_hit_node(h), score=float(h.score)) for h in hits]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._search(query_bundle, self._query_vector(query_bundle))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if self.mode != "lexical" and query_bundle.embedding is None:
            assert self.embed_model is not None
            query_bundle.embedding = await self.embed_model.aget_query_embedding(query_bundle.query_str)
        vector = self._query_vector(query_bundle)
        # Chroma reads and BM25 scoring are blocking: keep them off the event loop
        return await asyncio.to_thread(self._search, query_bundle, vector)

#: structural keys hidden from embeddings and prompts (offsets, ids, the halves' scores)
_HIDDEN = {*HIDDEN_KEYS, DENSE_SCORE, LEXICAL_SCORE, "document_id", "ref_doc_id", "doc_id"}


def _combined_where(where: dict[str, Any] | None, filters: MetadataFilters | None) -> dict[str, Any] | None:
    """``where`` and ``filters`` as one Chroma filter (a sentence must match both)."""
    if filters is None:
        return where
    if not isinstance(filters, MetadataFilters):
        raise TypeError(f"filters= takes llama_index MetadataFilters, not {type(filters).__name__} (where= takes a dict)")
    # ChromaVectorStore's own translation: the vector retriever and this one select alike
    from llama_index.vector_stores.chroma.base import _to_chroma_filter

    translated = _to_chroma_filter(filters)
    if not translated:
        return where
    return translated if where is None else {"$and": [where, translated]}


def _hit_node(hit: Hit) -> TextNode:
    """A sentence hit as the node stored for it (schema metadata; the stored id, versioned where
    the record is, so the vector retriever and this one name a sentence alike)."""
    s = hit.sentence
    metadata = {k: v for k, v in hit.metadata.items() if k not in ("_node_content", "_node_type")}
    hidden = [k for k in metadata if k in _HIDDEN]
    version = metadata.get(VERSION)
    return TextNode(
        id_=sentence_id(str(s.doc_id), s.index, str(version) if version else None), text=s.text, start_char_idx=s.start, end_char_idx=s.end,
        metadata=metadata, excluded_embed_metadata_keys=hidden, excluded_llm_metadata_keys=hidden,
        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=str(s.doc_id))},
    )


def _unit(vec: Any) -> np.ndarray:
    v = np.asarray(vec, dtype=np.float32)
    return v / max(float(np.linalg.norm(v)), 1e-12)


__all__ = ["LandmarkHybridRetriever"]
