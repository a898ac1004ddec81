"""The official langchain-tests standard suites for the LangChain adapters.

``RetrieversIntegrationTests`` builds the retriever from constructor parameters that point
at an existing collection: three SQuAD articles ingested once per session by
``test_langchain.ingested_squad`` (real model, real persistent Chroma).
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain_core", reason="the langchain extra")
pytest.importorskip("langchain_chroma", reason="the langchain extra")
pytest.importorskip("langchain_tests", reason="langchain-tests (test extra)")

from langchain_tests.integration_tests import EmbeddingsIntegrationTests, RetrieversIntegrationTests
from langchain_tests.unit_tests import EmbeddingsUnitTests

from landmark_rag.langchain import LandmarkEmbeddings, LandmarkRetriever
from tests.langchain.test_langchain import ingested_squad


class TestLandmarkEmbeddingsUnit(EmbeddingsUnitTests):
    @property
    def embeddings_class(self) -> type[LandmarkEmbeddings]:
        return LandmarkEmbeddings

    @property
    def embedding_model_params(self) -> dict[str, Any]:
        return {"batch_size": 32}


class TestLandmarkEmbeddingsIntegration(EmbeddingsIntegrationTests):
    @property
    def embeddings_class(self) -> type[LandmarkEmbeddings]:
        return LandmarkEmbeddings

    @property
    def embedding_model_params(self) -> dict[str, Any]:
        return {}


class TestLandmarkRetrieverIntegration(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    def _collection(self) -> None:
        squad = ingested_squad()
        type(self).params = {"persist_directory": squad.persist_dir, "collection_name": squad.collection_name}

    @property
    def retriever_constructor(self) -> type[LandmarkRetriever]:
        return LandmarkRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {**self.params, "k": 2}

    @property
    def retriever_query_example(self) -> str:
        return "When was Jacksonville founded?"
