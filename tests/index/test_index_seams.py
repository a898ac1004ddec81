"""The typed seams hold at run time: the package's encoder and store satisfy the Protocols the
rest of the package is written against, and LandmarkIndex refuses what its parts cannot do with
an error that says why (not an AttributeError from deep inside a write)."""

from __future__ import annotations

import numpy as np
import pytest

from landmark_rag.encode.protocols import QueryEncoder, SentenceEncoder
from landmark_rag.expand import InMemorySource
from landmark_rag.index import LandmarkIndex
from landmark_rag.store import ChromaSentenceStore, make_client
from landmark_rag.store.protocols import SentenceReader, SentenceStore


class QueryOnly:
    """The query half of an encoder only, as the ONNX export a cold CLI query loads has."""

    def __init__(self, inner) -> None:
        self._inner = inner
        self.config = inner.config
        self.dim = inner.dim

    @property
    def model_name(self) -> str:
        return self._inner.model_name

    def count_tokens(self, text: str) -> int:
        return self._inner.count_tokens(text)

    def encode_query(self, text: str) -> np.ndarray:
        return self._inner.encode_query(text)

    def encode_queries(self, texts, *, batch_size: int = 64, show_progress: bool = False) -> np.ndarray:
        return self._inner.encode_queries(texts, batch_size=batch_size, show_progress=show_progress)


def test_the_package_parts_satisfy_the_protocols(tiny_encoder):
    encoder = tiny_encoder()
    assert isinstance(encoder, SentenceEncoder) and isinstance(encoder, QueryEncoder)
    assert isinstance(QueryOnly(encoder), QueryEncoder)
    assert not isinstance(QueryOnly(encoder), SentenceEncoder)  # no encode_documents
    store = ChromaSentenceStore.open(client=make_client(":memory:"), collection_name="seams")
    assert isinstance(store, SentenceStore) and isinstance(store, SentenceReader)
    assert not isinstance(InMemorySource(), SentenceStore)


def test_a_query_only_encoder_searches_but_does_not_write(tiny_encoder):
    encoder = tiny_encoder()
    store = ChromaSentenceStore.open(client=make_client(":memory:"), collection_name="seams-q")
    LandmarkIndex(store, encoder).add_texts(["Alpha is first. Beta is second."], ids=["d"])
    index = LandmarkIndex(store, QueryOnly(encoder))
    passages = index.search("Which is second?", k=1)
    assert passages and passages[0].doc_id == "d"
    with pytest.raises(TypeError, match="encodes queries only"):
        index.add_texts(["Gamma is third."], ids=["e"])
    assert store.documents().keys() == {"d"}  # nothing half-written


def test_an_index_over_a_plain_source_expands_but_does_not_write_or_search(tiny_encoder):
    index = LandmarkIndex(InMemorySource(), tiny_encoder())
    with pytest.raises(TypeError, match="expand and re-score hits but not be written or searched"):
        index.add_texts(["Alpha is first."], ids=["d"])
    with pytest.raises(TypeError, match="not be written or searched"):
        index.search("Alpha?", k=1)
