"""What the retriever and the compressor share: a landmark Chroma collection and its model.

Both are pydantic models with the fields ``embeddings``, ``persist_directory``, ``client``,
``collection_name``, ``strategy`` and ``strategy_params``; this mixin adds only methods,
so it composes with LangChain's own base classes.
"""

from __future__ import annotations

from typing import Any

from landmark_rag.expand import choose_strategy
from landmark_rag.langchain.embeddings import LandmarkEmbeddings, embeddings_for_store
from landmark_rag.store import MEMORY, ChromaSentenceStore, make_client


class CollectionAdapter:
    """Opening the collection (``store``) and resolving the model that wrote it."""

    embeddings: LandmarkEmbeddings | None
    persist_directory: str | None
    client: Any
    collection_name: str
    strategy: str | None
    strategy_params: dict[str, int | float]
    _store: ChromaSentenceStore | None

    def _open_collection(self, *, create: bool) -> None:
        """Check the strategy parameters (fail at construction), then connect and open."""
        if self.strategy is not None:
            choose_strategy(self.strategy, self.strategy_params)
        if self.client is None:
            self.client = make_client(MEMORY if self.persist_directory is None else self.persist_directory)
        self._store = ChromaSentenceStore.open(collection_name=self.collection_name, client=self.client, create=create)

    @property
    def store(self) -> ChromaSentenceStore:
        """The core store over the collection (for counts, manifests, deletion)."""
        assert self._store is not None
        return self._store

    def _embeddings(self) -> LandmarkEmbeddings:
        """The embeddings: given, else the model the collection records (or the default)."""
        if self.embeddings is None:
            self.embeddings = embeddings_for_store(self.store)
        return self.embeddings
