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

import chromadb
from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables.config import run_in_executor
from pydantic import ConfigDict, Field, PrivateAttr
from tqdm.auto import tqdm

from landmark_rag.expand import Adaptive, Strategy, make_strategy, model_strategy
from landmark_rag.langchain.convert import passage_document
from landmark_rag.langchain.embeddings import LandmarkEmbeddings, embeddings_for_identity
from landmark_rag.langchain.ids import resolve_doc_ids
from landmark_rag.retrieve import search_passages
from landmark_rag.store import DEFAULT_COLLECTION, ChromaSentenceStore, content_hash, flat_metadata, make_client
from landmark_rag.store.schema import DOC_HASH, MANIFEST_KEYS

#: Documents encoded per encoder call during ingestion (bounds memory; one progress step).
_INGEST_BATCH = 32
#: Manifest fields the store adds next to the user's metadata.
_MANIFEST_KEYS = set(MANIFEST_KEYS)
#: Keyword arguments ``BaseRetriever.invoke`` may forward that are not search options.
_IGNORED_KWARGS = {"verbose"}


class LandmarkRetriever(BaseRetriever):
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
    - ``strategy`` / ``strategy_params``: boundary expansion, ``front`` (hit and ``k-1``
      predecessors, the paper's default), ``surround`` or ``adaptive``; e.g.
      ``strategy_params={"k": 2}`` for Front-2. ``None`` (default): the expansion the
      model's ``landmark_config.json`` names (``surround`` for the shipped model).
    - ``where``: a Chroma metadata filter applied to the sentence search.
    - ``order``: ``score`` (best first) or ``document`` (reading order).
    - ``skip_unchanged``: re-adding a document whose text and metadata are unchanged does
      not re-encode it.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, protected_namespaces=())

    embeddings: LandmarkEmbeddings | None = None
    persist_directory: str | None = None
    collection_name: str = DEFAULT_COLLECTION
    client: Any = Field(default=None, exclude=True)
    k: int = Field(default=4, ge=1)
    strategy: Literal["front", "surround", "adaptive"] | None = None
    strategy_params: dict[str, int | float] = Field(default_factory=dict)
    where: dict[str, Any] | None = None
    order: Literal["score", "document"] = "score"
    skip_unchanged: bool = True
    show_progress: bool = False

    _store: ChromaSentenceStore | None = PrivateAttr(default=None)
    _identity_checked: bool = PrivateAttr(default=False)

    def model_post_init(self, context: Any, /) -> None:
        if self.strategy is not None:  # fail at construction on bad parameters
            make_strategy(self.strategy, **self.strategy_params)
        if self.client is None:
            self.client = (
                chromadb.EphemeralClient() if self.persist_directory is None else make_client(self.persist_directory)
            )
        self._store = ChromaSentenceStore.open(collection_name=self.collection_name, client=self.client, create=True)

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
    def store(self) -> ChromaSentenceStore:
        """The core store over the collection (for counts, manifests, deletion)."""
        assert self._store is not None
        return self._store

    def _embeddings(self, *, writing: bool) -> LandmarkEmbeddings:
        """The embeddings, resolved from the collection when not given, identity-checked once.

        Reading an unmarked collection does not mark it; the first write records the model,
        after which mixing in vectors of another model is refused (``StoreMismatchError``).
        """
        if self.embeddings is None:
            self.embeddings = embeddings_for_identity(self.store.identity())
        if not self._identity_checked:
            identity = self.embeddings.identity()
            if self.store.identity() or writing:
                self.store.check_identity(identity)
                self._identity_checked = True
        return self.embeddings

    def as_vectorstore(self) -> Any:
        """The same collection as a ``langchain_chroma.Chroma`` (sentence-level search).

        Useful for LangChain tools that need a VectorStore; its ``add_documents`` embeds
        texts without context, so ingest through this retriever instead.
        """
        from langchain_chroma import Chroma

        return Chroma(
            collection_name=self.collection_name,
            client=self.client,
            embedding_function=self._embeddings(writing=False),
            create_collection_if_not_exists=False,
        )

    # ------------------------------------------------------------------ ingestion
    def add_documents(self, documents: Sequence[Document], *, ids: Sequence[str] | None = None) -> list[str]:
        """Encode each document in one pass and store one vector per sentence.

        Returns the document ids (see :mod:`landmark_rag.langchain.ids` for the rule).
        Re-adding an id replaces all of that document's sentences; with ``skip_unchanged``
        an identical document (same text and metadata) is not encoded again.
        """
        docs = list(documents)
        doc_ids = resolve_doc_ids(docs, ids)
        for i, (doc_id, doc) in enumerate(zip(doc_ids, docs, strict=True)):
            if not doc.page_content.strip():  # checked for all before anything is written
                raise ValueError(
                    f"document {i} (id {doc_id!r}) has no text: a document without sentences cannot be "
                    "retrieved; drop empty documents before adding (nothing was written)"
                )
        embeddings = self._embeddings(writing=True)
        stored = self.store.documents() if self.skip_unchanged else {}  # one manifest read per call
        todo: dict[str, Document] = {}
        for doc_id, doc in zip(doc_ids, docs, strict=True):
            if doc_id in todo:
                continue
            if _unchanged(stored.get(doc_id), doc):
                if stored[doc_id].get("dirty"):  # an earlier write stopped before cleaning up
                    self.store.clean_document(doc_id)
                continue
            todo[doc_id] = doc
        items = list(todo.items())
        bar = tqdm(total=len(items), desc="ingesting", unit="doc", disable=not self.show_progress)
        for i in range(0, len(items), _INGEST_BATCH):
            batch = items[i : i + _INGEST_BATCH]
            encoded = embeddings.embed_documents_in_context([d for _, d in batch], [doc_id for doc_id, _ in batch])
            for (_, doc), enc in zip(batch, encoded, strict=True):
                self.store.add_document(enc, metadata=doc.metadata, doc_hash=content_hash(doc.page_content))
            bar.update(len(batch))
        bar.close()
        return doc_ids

    async def aadd_documents(self, documents: Sequence[Document], *, ids: Sequence[str] | None = None) -> list[str]:
        """Async :meth:`add_documents` (runs in an executor)."""
        return await run_in_executor(None, lambda: self.add_documents(documents, ids=ids))

    def delete(self, ids: Sequence[str]) -> int:
        """Remove documents (by document id) and all their sentences; returns sentences removed."""
        return sum(self.store.delete_document(str(doc_id)) for doc_id in ids)

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
        **kwargs: Any,
    ) -> list[Document]:
        unknown = set(kwargs) - _IGNORED_KWARGS
        if unknown:
            raise TypeError(f"unexpected retriever options {sorted(unknown)}; known: k, where (or filter), strategy")
        k = self.k if k is None else int(k)
        embeddings = self._embeddings(writing=False)
        if strategy is not None:
            strat = make_strategy(strategy)
        elif self.strategy is not None:
            strat = make_strategy(self.strategy, **self.strategy_params)
        else:  # what the model's config names
            strat = model_strategy(embeddings.encoder, self.strategy_params)
        vector = embeddings.encoder.encode_query(query)
        passages = search_passages(
            vector,
            self.store,
            k,
            strat,
            where=where or filter or self.where,
            order=self.order,
            count_tokens=embeddings.count_tokens if isinstance(strat, Adaptive) else None,
        )
        return [passage_document(p) for p in passages]


def _unchanged(record: dict[str, Any] | None, doc: Document) -> bool:
    """Whether a manifest record (of a completely stored document) matches ``doc`` exactly."""
    if record is None or record.get(DOC_HASH) != content_hash(doc.page_content):
        return False
    return {k: v for k, v in record.items() if k not in _MANIFEST_KEYS} == flat_metadata(doc.metadata)
