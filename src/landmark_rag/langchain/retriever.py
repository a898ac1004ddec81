"""``LandmarkRetriever``: context-aware ingestion into Chroma and passage retrieval.

Why this exists instead of ``Chroma.from_documents(..., embedding=LandmarkEmbeddings())``:
LangChain's Chroma wrapper embeds every text on its own when documents are added, so
the vectors would lose the document context that makes landmark embeddings work. This
retriever encodes each whole document in one pass and writes the per-sentence vectors
itself, through the core :class:`~landmark_rag.store.ChromaSentenceStore` (same schema,
manifest and model-identity check as the CLI and the LlamaIndex adapter).

The collection it writes is an ordinary Chroma collection (cosine space; ``documents`` =
sentence text, ``metadatas`` = schema keys plus the user's metadata, ``ids`` =
``doc_id:index@version``), so ``langchain_chroma.Chroma(collection_name=..., persist_directory=...,
embedding_function=LandmarkEmbeddings())`` reads it and returns proper sentence Documents
(raw Chroma access does not consult the manifest, so while a document is being replaced it
may return both versions; this retriever never does, see docs/reliability.md).
Retrieval here goes one step further: the sentence hits are expanded into passages
(``Front``-k by default, see :mod:`landmark_rag.expand`) and exactly ``k`` non-overlapping
passages are returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables.config import run_in_executor
from pydantic import ConfigDict, Field, PrivateAttr, field_validator, model_validator

from landmark_rag.expand import Strategy, check_max_tokens
from landmark_rag.index import LandmarkIndex
from landmark_rag.langchain.collection import CollectionAdapter
from landmark_rag.langchain.convert import passage_document
from landmark_rag.langchain.embeddings import LandmarkEmbeddings
from landmark_rag.langchain.ids import source_documents
from landmark_rag.retrieve.fusion import FusionConfig
from landmark_rag.store import DEFAULT_COLLECTION, ChromaSentenceStore

#: Keyword arguments ``BaseRetriever.invoke`` may forward that are not search options.
_IGNORED_KWARGS = {"verbose"}


class LandmarkRetriever(CollectionAdapter, BaseRetriever):
    """Retrieve exactly ``k`` expanded passages from a landmark-ingested Chroma collection.

    Construct it over an existing collection (``LandmarkRetriever(persist_directory=...,
    collection_name=..., k=3)``), or ingest with :meth:`from_documents` /
    :meth:`add_documents`. Parameters:

    - ``embeddings``: a :class:`LandmarkEmbeddings`; ``None`` uses the model recorded on
      the collection (or the package default for a new one).
    - ``persist_directory``: a directory for a persistent Chroma, or ``http(s)://host:port``
      of a Chroma server; ``None`` (with no ``client``) keeps everything in memory.
    - ``client``: a ready ``chromadb`` client (wins over ``persist_directory``).
    - ``k``: passages per query (also ``invoke(query, k=...)``).
    - ``max_tokens``: a context budget instead: the passages, best first, add up to at most
      this many tokens of the model's tokenizer, a passage that does not fit whole cut between
      sentences around its hit (never less than one sentence); a ``k`` you set then caps their number. Also
      ``invoke(query, max_tokens=...)``.
    - ``strategy`` / ``strategy_params``: boundary expansion, ``front`` (hit and ``k-1``
      predecessors, the paper's default), ``surround``, ``adaptive`` or ``evidence``; e.g.
      ``strategy_params={"k": 2}`` for Front-2. ``None`` (default): the expansion the
      model's ``landmark_config.json`` names (``evidence`` for the shipped model).
    - ``mode``: ``hybrid`` (landmark vectors fused with BM25 over the same sentences),
      ``dense`` or ``lexical``; ``None`` (default): what the model's ``landmark_config.json``
      names (``hybrid`` for the shipped model). Also ``invoke(query, mode=...)``.
    - ``fusion``: overrides of the model's fusion settings, e.g. ``{"method": "rrf",
      "weight": 0.5, "language": "de"}`` (see ``landmark_rag.retrieve.fusion.FusionConfig``).
    - ``where``: a Chroma metadata filter applied to the sentence search (both halves).
      ``invoke(query, filter=...)`` (or ``where=``) replaces it for one call, as a
      ``VectorStoreRetriever``'s call-time ``search_kwargs`` replace its own.
    - ``search_kwargs``: accepted for ``as_retriever`` habits, ``{"k": ..., "filter": ...}``
      (or ``"where"``) set ``k`` and ``where``; other keys are refused. Unknown constructor
      arguments are refused too, never silently dropped.
    - ``order``: ``score`` (best first) or ``document`` (reading order).
    - ``skip_unchanged``: re-adding a document whose text and metadata are unchanged does
      not re-encode it.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, protected_namespaces=(), extra="forbid")

    embeddings: LandmarkEmbeddings | None = None
    persist_directory: str | None = None
    collection_name: str = DEFAULT_COLLECTION
    client: Any = Field(default=None, exclude=True)
    k: int = Field(default=4, ge=1)
    max_tokens: int | None = None
    strategy: Literal["front", "surround", "adaptive", "evidence"] | None = None
    strategy_params: dict[str, int | float] = Field(default_factory=dict)
    mode: Literal["hybrid", "dense", "lexical"] | None = None
    fusion: dict[str, Any] = Field(default_factory=dict)
    where: dict[str, Any] | None = None
    order: Literal["score", "document"] = "score"
    skip_unchanged: bool = True
    show_progress: bool | None = None  # None: a bar once an ingest has run a few seconds

    _store: ChromaSentenceStore | None = PrivateAttr(default=None)
    _index: LandmarkIndex | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _from_search_kwargs(cls, data: Any) -> Any:
        """``search_kwargs={"k": 3, "filter": {...}}`` (``VectorStore.as_retriever``'s spelling)
        set ``k`` and ``where``; anything else in it is refused, not dropped."""
        if not isinstance(data, dict) or "search_kwargs" not in data:
            return data
        data = dict(data)
        given = dict(data.pop("search_kwargs") or {})
        unknown = set(given) - {"k", "max_tokens", "filter", "where"}
        if unknown:
            raise ValueError(
                f"search_kwargs {sorted(unknown)} not supported; LandmarkRetriever takes k, max_tokens and filter (or where)"
            )
        if "filter" in given and "where" in given:
            raise ValueError("search_kwargs: give filter or where, not both")
        for key, field in (("k", "k"), ("max_tokens", "max_tokens"), ("filter", "where"), ("where", "where")):
            if key in given:
                if field in data and data[field] != given[key]:
                    raise ValueError(f"{field} given twice: as {field}= and in search_kwargs")
                data[field] = given[key]
        return data

    @field_validator("max_tokens", mode="before")
    @classmethod
    def _check_max_tokens(cls, value: Any) -> Any:
        """The budget's own message (a bool or ``512.5`` is refused, not coerced)."""
        return None if value is None else check_max_tokens(value)

    def model_post_init(self, context: Any, /) -> None:
        FusionConfig.from_dict(self._fusion_overrides())  # fail at construction on bad settings
        self._open_collection(create=True)

    def _fusion_overrides(self) -> dict[str, Any]:
        """The model's fusion settings this retriever overrides (``fusion``, then ``mode``)."""
        return {**self.fusion, **({"mode": self.mode} if self.mode else {})}

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_documents(
        cls,
        documents: Sequence[Document],
        *,
        embeddings: LandmarkEmbeddings | None = None,
        persist_directory: str | None = None,
        collection_name: str = DEFAULT_COLLECTION,
        client: Any = None,
        k: int = 4,
        ids: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> LandmarkRetriever:
        """Create (or open) the collection, ingest ``documents`` in context, return the retriever."""
        retriever = cls(
            embeddings=embeddings,
            persist_directory=persist_directory,
            collection_name=collection_name,
            client=client,
            k=k,
            **kwargs,
        )
        retriever.add_documents(documents, ids=ids)
        return retriever

    @property
    def index(self) -> LandmarkIndex:
        """The core :class:`~landmark_rag.LandmarkIndex` this retriever searches and writes through.

        Built on first use; a collection that records another model is refused then
        (``StoreMismatchError``), an unmarked one is marked by the first write.
        """
        if self._index is None:
            embeddings = self._embeddings()
            self._index = LandmarkIndex(
                self.store, embeddings.encoder, strategy=self.strategy, strategy_params=self.strategy_params,
                fusion=self._fusion_overrides() or None,
            )
        return self._index

    def as_vectorstore(self) -> Any:
        """The same collection as a ``langchain_chroma.Chroma`` (sentence-level search).

        Useful for LangChain tools that need a VectorStore; its ``add_documents`` embeds
        texts without context, so ingest through this retriever instead.
        """
        from langchain_chroma import Chroma

        return Chroma(
            collection_name=self.collection_name,
            client=self.client,
            embedding_function=self._embeddings(),
            create_collection_if_not_exists=False,
        )

    # ------------------------------------------------------------------ ingestion
    def add_documents(self, documents: Sequence[Document], *, ids: Sequence[str] | None = None) -> list[str]:
        """Encode each document in one pass and store one vector per sentence.

        Returns the document ids (see :mod:`landmark_rag.langchain.ids` for the rule): the
        pages of one file (``PyPDFLoader``) are one document, each sentence keeping its page.
        Re-adding an id replaces all of that document's sentences; with ``skip_unchanged``
        an identical document (same text and metadata) is not encoded again.
        """
        sources, doc_ids = source_documents(list(documents), ids)
        embeddings = self._embeddings()
        self.index.add_sources(
            sources,
            skip_unchanged=self.skip_unchanged,
            show_progress=self.show_progress,
            encode=embeddings.embed_documents_in_context,
        )
        return doc_ids

    async def aadd_documents(self, documents: Sequence[Document], *, ids: Sequence[str] | None = None) -> list[str]:
        """Async :meth:`add_documents` (runs in an executor)."""
        return await run_in_executor(None, lambda: self.add_documents(documents, ids=ids))

    def delete(self, ids: Sequence[str]) -> int:
        """Remove documents (by document id) and all their sentences; returns sentences removed."""
        return self.index.delete([str(doc_id) for doc_id in ids])

    # ------------------------------------------------------------------ retrieval
    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return self._search(query, **kwargs)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return await run_in_executor(None, lambda: self._search(query, **kwargs))

    def _search(
        self,
        query: str,
        k: int | None = None,
        where: dict[str, Any] | None = None,
        filter: dict[str, Any] | None = None,  # LangChain's name for a metadata filter
        strategy: str | Strategy | None = None,
        mode: str | None = None,
        max_tokens: int | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        unknown = set(kwargs) - _IGNORED_KWARGS
        if unknown:
            raise TypeError(
                f"unexpected retriever options {sorted(unknown)}; known: k, max_tokens, where (or filter), strategy, mode"
            )
        budget = self.max_tokens if max_tokens is None else check_max_tokens(max_tokens)
        if k is None:
            # with a budget, k caps the passages only when it was set; else the budget decides
            k = self.k if budget is None or "k" in self.model_fields_set else None
        if k is not None:
            k = int(k)
            if k < 1:
                raise ValueError(f"k must be at least 1, got {k}")
        passages = self.index.search(
            query, k, max_tokens=budget, strategy=strategy, where=where or filter or self.where,  # type: ignore[arg-type]
            order=self.order, mode=mode,  # type: ignore[arg-type]
        )
        return [passage_document(p) for p in passages]
