"""``BoundaryExpansionPostprocessor``: sentence hits -> exact passages, inside a query engine.

A landmark hit is one sentence, and position-aware training makes it the *end* of the
useful span. Handing the LLM bare sentences loses the lead-in that makes them answerable,
so this postprocessor expands each hit (``landmark_rag.expand.expand_hits``: Front-k by
default, or surround / adaptive), merges overlapping spans of a document, and returns one
node per passage whose text is the exact slice of the original document.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, Literal

import numpy as np
from llama_index.core import Settings
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from landmark_rag.expand import (
    Adaptive,
    Front,
    SentenceSource,
    Strategy,
    Surround,
    expand_hits,
    make_strategy,
    model_strategy,
)
from landmark_rag.llama_index.convert import is_sentence_node, node_doc_id, node_to_hit, passage_to_node
from landmark_rag.llama_index.sources import sentence_source
from landmark_rag.store.schema import INDEX

logger = logging.getLogger(__name__)


class BoundaryExpansionPostprocessor(BaseNodePostprocessor):
    """Expand retrieved sentence nodes into passages.

    Neighbours are read from ``vector_store`` (a ``ChromaVectorStore``: its collection is
    wrapped as a core ``ChromaSentenceStore``, no docstore needed) or from ``docstore``
    (sentence nodes by id; vectors for the adaptive strategy from the node or from
    ``vector_store.get(id)``).

    - ``strategy``: left out, the expansion the model's ``landmark_config.json`` names
      (``embed_model``'s model, else the package default: ``surround`` for the shipped
      landmark-minilm); or ``"front"`` (the hit and ``k - 1`` predecessors, ``k=3``),
      ``"surround"`` (``before``/``after``) or ``"adaptive"`` (grows while neighbours stay
      relevant to the query, within ``max_tokens``); parameters in ``strategy_params``, or
      pass a ready ``Front``/``Surround``/``Adaptive`` object as ``strategy``.
    - ``order``: ``"score"`` (best first) or ``"document"`` (by document, then position).
    - ``top_n``: at most this many passages, formed from the best hits first.

    A passage scores as its best hit (the retriever's score, so scores stay comparable with
    the rest of the query engine). Nodes that were not written by ``LandmarkNodeParser``
    pass through unchanged. The adaptive strategy needs the query vector: it is taken from
    the ``QueryBundle`` (the retriever sets it) or computed with ``embed_model``.
    """

    strategy: Literal["front", "surround", "adaptive"] = Field(default="front")  # resolved in __init__
    strategy_params: dict[str, int | float] = Field(default_factory=dict)
    order: Literal["score", "document"] = Field(default="score")
    top_n: int | None = Field(default=None, gt=0)
    vector_store: Any = Field(default=None, exclude=True)
    docstore: Any = Field(default=None, exclude=True)
    embed_model: BaseEmbedding | None = Field(default=None, exclude=True)

    _source: SentenceSource = PrivateAttr()
    _strategy: Strategy = PrivateAttr()
    _count_tokens: Callable[[str], int] | None = PrivateAttr(default=None)

    def __init__(
        self,
        *,
        vector_store: Any = None,
        docstore: Any = None,
        strategy: str | Strategy | None = None,
        strategy_params: dict[str, int | float] | None = None,
        count_tokens: Callable[[str], int] | None = None,
        source: SentenceSource | None = None,
        **kwargs: Any,
    ) -> None:
        if strategy is None:  # what the model's landmark_config.json names
            strategy = model_strategy(_model_config(kwargs.get("embed_model")))
        if isinstance(strategy, Front | Surround | Adaptive):  # a ready strategy object
            strategy_params = {**asdict(strategy), **(strategy_params or {})}
            strategy = type(strategy).__name__.lower()
        super().__init__(
            vector_store=vector_store,
            docstore=docstore,
            strategy=strategy,
            strategy_params=dict(strategy_params or {}),
            **kwargs,
        )
        self._strategy = make_strategy(self.strategy, **self.strategy_params)
        self._source = source if source is not None else sentence_source(vector_store, docstore)
        if count_tokens is None and self.embed_model is not None and hasattr(self.embed_model, "encoder"):
            count_tokens = lambda text: self.embed_model.encoder.count_tokens(text)  # noqa: E731
        self._count_tokens = count_tokens

    @classmethod
    def class_name(cls) -> str:
        return "BoundaryExpansionPostprocessor"

    @property
    def source(self) -> SentenceSource:
        return self._source

    # ------------------------------------------------------------------ sync / async
    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        query_vector = self._query_vector(query_bundle) if isinstance(self._strategy, Adaptive) else None
        return self._expand(nodes, query_vector)

    async def _apostprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        query_vector = None
        if isinstance(self._strategy, Adaptive):
            query_vector = await self._aquery_vector(query_bundle)
        # the reads from the store are blocking I/O: keep them off the event loop
        return await asyncio.to_thread(self._expand, nodes, query_vector)

    # ------------------------------------------------------------------ work
    def _expand(self, nodes: list[NodeWithScore], query_vector: np.ndarray | None) -> list[NodeWithScore]:
        expandable = [n for n in nodes if is_sentence_node(n.node)]
        passthrough = [n for n in nodes if not is_sentence_node(n.node)]
        if passthrough:
            logger.warning(
                "%d retrieved nodes carry no landmark sentence metadata and are passed through unexpanded",
                len(passthrough),
            )
        if not expandable:
            return list(nodes)
        hits = [node_to_hit(n.node, n.score) for n in expandable]
        if query_vector is not None:
            # The adaptive threshold compares neighbours' cosine scores with the hit's, so the
            # hit needs a cosine score too (vector stores report distances in their own scale).
            for hit in hits:
                vec = self._source.get_embeddings(hit.sentence.doc_id or "", [hit.sentence.index]).get(
                    hit.sentence.index
                )
                if vec is not None:
                    hit.score = float(vec @ query_vector)
        passages = expand_hits(
            hits,
            self._source,
            self._strategy,
            query_vector=query_vector,
            count_tokens=self._count_tokens,
            order=self.order,
            max_passages=self.top_n,
        )
        retriever_score = {(node_doc_id(n.node), int(n.node.metadata[INDEX])): n.score for n in expandable}
        out = []
        for p in passages:
            scores = [retriever_score.get((p.doc_id, i)) for i in p.hit_indices]
            scores = [s for s in scores if s is not None]
            score = max(scores) if scores else p.score
            p.score = float(score)
            out.append(NodeWithScore(node=passage_to_node(p), score=float(score)))
        if self.order == "score":
            out.sort(key=lambda n: -(n.score or 0.0))
        return out + passthrough

    def _query_vector(self, query_bundle: QueryBundle | None) -> np.ndarray:
        if query_bundle is not None and query_bundle.embedding is not None:
            return _unit(query_bundle.embedding)
        model = self._embedder()
        if model is None or query_bundle is None:
            raise ValueError(
                "the adaptive strategy needs the query embedding: pass a QueryBundle with .embedding "
                "or set embed_model on the postprocessor (LlamaIndex's async retriever does not hand "
                "the embedding on)"
            )
        return _unit(model.get_query_embedding(query_bundle.query_str))

    async def _aquery_vector(self, query_bundle: QueryBundle | None) -> np.ndarray:
        model = self._embedder()
        if query_bundle is not None and query_bundle.embedding is None and model is not None:
            return _unit(await model.aget_query_embedding(query_bundle.query_str))
        return self._query_vector(query_bundle)

    def _embedder(self) -> BaseEmbedding | None:
        """``embed_model``, else a ``Settings.embed_model`` the application set explicitly."""
        if self.embed_model is not None:
            return self.embed_model
        # Settings.embed_model would resolve (and try to build) LlamaIndex's default model;
        # only use one that was set on purpose.
        return getattr(Settings, "_embed_model", None)


def _model_config(embed_model: Any) -> Any:
    """Config of the model behind ``embed_model`` (or the package default), weights unloaded."""
    from landmark_rag.models import model_config

    encoder = getattr(embed_model, "_encoder", None)
    if encoder is not None:
        return encoder.config
    name = getattr(embed_model, "model_name", None) if embed_model is not None else None
    try:
        return model_config(name)
    except OSError:  # not a landmark model we can read: the paper's default
        return None


def _unit(vec: Any) -> np.ndarray:
    v = np.asarray(vec, dtype=np.float32)
    return v / max(float(np.linalg.norm(v)), 1e-12)
