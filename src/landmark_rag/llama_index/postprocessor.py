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

from landmark_rag.expand import AnySentenceSource, Strategy, check_max_tokens, choose_strategy
from landmark_rag.index import LandmarkIndex
from landmark_rag.llama_index.convert import is_sentence_node, node_doc_id, node_to_hit, passage_to_node
from landmark_rag.llama_index.sources import sentence_source
from landmark_rag.retrieve import unit_vector
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
    - ``top_n``: at most this many nodes back, passages formed from the best hits first (nodes
      passed through unexpanded count too, as for any LlamaIndex postprocessor's ``top_n``).
    - ``max_tokens``: a context budget: the passages, best first, add up to at most this many
      tokens (``embed_model``'s tokenizer; without one, about four characters a token); a
      passage that does not fit whole is cut between sentences, never less than one sentence; ``top_n`` then caps
      their number (nodes passed through unexpanded are not counted against it).
      ``LandmarkHybridRetriever(max_tokens=...)`` reads enough hits to fill it.

    A passage scores as its best hit (the retriever's score, so scores stay comparable with
    the rest of the query engine). Nodes that were not written by ``LandmarkNodeParser``
    pass through unchanged. The adaptive strategy needs the query vector: it is taken from
    the ``QueryBundle`` (the retriever sets it) or computed with ``embed_model``.
    """

    strategy: Literal["front", "surround", "adaptive", "evidence"] = Field(default="front")  # resolved in __init__
    strategy_params: dict[str, int | float] = Field(default_factory=dict)
    order: Literal["score", "document"] = Field(default="score")
    top_n: int | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None)
    vector_store: Any = Field(default=None, exclude=True)
    docstore: Any = Field(default=None, exclude=True)
    embed_model: BaseEmbedding | None = Field(default=None, exclude=True)

    _index: LandmarkIndex = PrivateAttr()

    def __init__(
        self,
        *,
        vector_store: Any = None,
        docstore: Any = None,
        strategy: str | Strategy | None = None,
        strategy_params: dict[str, int | float] | None = None,
        count_tokens: Callable[[str], int] | None = None,
        source: AnySentenceSource | None = None,
        **kwargs: Any,
    ) -> None:
        # a name, a ready object, or None for what the model's landmark_config.json names;
        # kept as plain fields (name + parameters) so the postprocessor serialises
        chosen = choose_strategy(strategy, strategy_params, _model_config(kwargs.get("embed_model")))
        if kwargs.get("max_tokens") is not None:  # the budget's own message, not pydantic's coercion
            kwargs["max_tokens"] = check_max_tokens(kwargs["max_tokens"])
        # pydantic's dataclass_transform gives super().__init__ the base's fields only, not these
        super().__init__(  # type: ignore[call-arg]
            vector_store=vector_store,
            docstore=docstore,
            strategy=type(chosen).__name__.lower(),
            strategy_params=asdict(chosen),
            **kwargs,
        )
        embed_model = self.embed_model
        if count_tokens is None and embed_model is not None and hasattr(embed_model, "encoder"):
            count_tokens = lambda text: embed_model.encoder.count_tokens(text)
        # query vectors come from the query engine (QueryBundle) or embed_model, so the
        # index holds no encoder of its own
        self._index = LandmarkIndex(
            source if source is not None else sentence_source(vector_store, docstore),
            strategy=chosen,
            count_tokens=count_tokens,
        )

    @classmethod
    def class_name(cls) -> str:
        return "BoundaryExpansionPostprocessor"

    @property
    def source(self) -> AnySentenceSource:
        return self._index.store

    @property
    def index(self) -> LandmarkIndex:
        """The core :class:`~landmark_rag.LandmarkIndex` that expands and re-scores the hits."""
        return self._index

    # ------------------------------------------------------------------ sync / async
    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        query_vector = self._query_vector(query_bundle) if self._index.strategy.needs_vectors else None
        return self._expand(nodes, query_vector)

    async def _apostprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        query_vector = None
        if self._index.strategy.needs_vectors:
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
            return list(nodes)[: self.top_n] if self.top_n is not None else list(nodes)
        hits = [node_to_hit(n.node, n.score) for n in expandable]
        if query_vector is not None:
            # The adaptive threshold compares neighbours' cosine scores with the hit's, so the
            # hit needs a cosine score too (vector stores report distances in their own scale).
            hits = self._index.rescore(query_vector, hits)
        passages = self._index.expand(
            hits, query=query_vector, k=self.top_n, order=self.order, max_tokens=self.max_tokens
        )
        retriever_score: dict[tuple[str, int], float | None] = {}
        for n in expandable:  # a sentence given twice (a fusion of retrievers) keeps its best score
            key = (node_doc_id(n.node), int(n.node.metadata[INDEX]))
            kept = retriever_score.get(key)
            retriever_score[key] = n.score if kept is None or (n.score is not None and n.score > kept) else kept
        out = []
        for p in passages:
            found = [retriever_score.get((p.doc_id, i)) for i in p.hit_indices]
            scores = [s for s in found if s is not None]
            score = max(scores) if scores else p.score
            p.score = float(score)
            out.append(NodeWithScore(node=passage_to_node(p), score=float(score)))
        # top_n caps what comes back, passed-through nodes included; by score they rank among
        # the passages (a stable sort: ties keep passages first), in document order they follow
        merged = out + passthrough
        if self.order == "score":
            merged.sort(key=lambda n: -(n.score or 0.0))
        return merged[: self.top_n] if self.top_n is not None else merged

    def _query_vector(self, query_bundle: QueryBundle | None) -> np.ndarray:
        if query_bundle is not None and query_bundle.embedding is not None:
            return unit_vector(query_bundle.embedding)
        model = self._embedder()
        if model is None or query_bundle is None:
            raise ValueError(
                "the adaptive strategy needs the query embedding: pass a QueryBundle with .embedding "
                "or set embed_model on the postprocessor (LlamaIndex's async retriever does not hand "
                "the embedding on)"
            )
        return unit_vector(model.get_query_embedding(query_bundle.query_str))

    async def _aquery_vector(self, query_bundle: QueryBundle | None) -> np.ndarray:
        model = self._embedder()
        if query_bundle is not None and query_bundle.embedding is None and model is not None:
            return unit_vector(await model.aget_query_embedding(query_bundle.query_str))
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
    from landmark_rag.encode.models.registry import model_config

    encoder = getattr(embed_model, "_encoder", None)
    if encoder is not None:
        return encoder.config
    name = getattr(embed_model, "model_name", None) if embed_model is not None else None
    try:
        return model_config(name)
    except OSError:  # not a landmark model we can read: the paper's default
        return None
