"""What the rest of the package needs from an encoder, as structural types.

Ingestion, the index, retrieval and the evaluation harness call an encoder through these
Protocols rather than through :class:`~landmark_rag.encode.encoder.LandmarkEncoder` itself, for
two reasons: importing this module costs nothing (no torch, no transformers), so the seams can
be typed without making ``import landmark_rag`` pay for the model stack; and other encoders fit
the same seams without inheriting from anything, e.g. the ONNX query encoder a cold CLI query
uses (``encode/export/onnx_query.py``), which has the query half only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from landmark_rag.encode.config import LandmarkConfig
    from landmark_rag.encode.encoder import PreparedDocuments
    from landmark_rag.segment import Segmenter
    from landmark_rag.types import EncodedDocument, Sentence


@runtime_checkable
class QueryEncoder(Protocol):
    """Turns queries into unit vectors: all a search needs once the documents are stored."""

    @property
    def model_name(self) -> str:
        """The name stores record and check (``store.identity``)."""
        ...

    @property
    def config(self) -> LandmarkConfig:
        """Pooling, layout and expansion defaults: stores record it, searches follow it."""
        ...

    @property
    def dim(self) -> int:
        """Width of every vector this encoder returns."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` without special tokens (budgets, statistics)."""
        ...

    def encode_query(self, text: str) -> np.ndarray:
        """One L2-normalised float32 vector."""
        ...

    def encode_queries(self, texts: Sequence[str], *, batch_size: int = ..., show_progress: bool = ...) -> np.ndarray:
        """Queries as a float32 ``[n, dim]`` array, L2-normalised."""
        ...


@runtime_checkable
class SentenceEncoder(QueryEncoder, Protocol):
    """Encodes whole documents into one in-context vector per sentence, and queries.

    ``LandmarkEncoder`` is the implementation; ingestion (``ingest.write``) and the index's
    writes (``index.LandmarkIndex``) are written against this.
    """

    @property
    def tokenizer(self) -> Any:
        """The Hugging Face tokenizer (its fast backend counts and cuts sentences)."""
        ...

    def segment(self, text: str, doc_id: str | None = None, segmenter: Segmenter | None = None) -> list[Sentence]:
        """Sentences as this encoder sees them (long ones cut to fit a window)."""
        ...

    def encode_documents(
        self,
        texts: Sequence[str],
        doc_ids: Sequence[str | None] | None = None,
        *,
        batch_size: int = ...,
        show_progress: bool | None = ...,
        sentences: Sequence[Sequence[Sentence] | None] | None = ...,
        segmenter: Segmenter | None = ...,
        batch_tokens: int | None = ...,
    ) -> list[EncodedDocument]:
        """One :class:`~landmark_rag.types.EncodedDocument` per text, in order."""
        ...

    def encode_texts(self, texts: Sequence[str], *, batch_size: int = ..., show_progress: bool = ...) -> np.ndarray:
        """One vector per standalone text (what a framework asks for a bare string)."""
        ...


@runtime_checkable
class PreparingEncoder(SentenceEncoder, Protocol):
    """A :class:`SentenceEncoder` whose document encoding comes in two halves: the host work
    (segmentation, tokenisation, layout, padding) and the device work (forward, pooling).

    The write path (``ingest.write``) prepares its next group of documents on a producer
    thread while the current group runs on the device when the encoder has both halves; an
    encoder without them is called through ``encode_documents``, one group after another.
    """

    def prepare_documents(
        self,
        texts: Sequence[str],
        doc_ids: Sequence[str | None] | None = None,
        *,
        batch_size: int = ...,
        sentences: Sequence[Sequence[Sentence] | None] | None = ...,
        segmenter: Segmenter | None = ...,
        batch_tokens: int | None = ...,
    ) -> PreparedDocuments:
        """Documents ready for :meth:`encode_prepared` (host work only)."""
        ...

    def encode_prepared(self, prepared: PreparedDocuments) -> list[EncodedDocument]:
        """One :class:`~landmark_rag.types.EncodedDocument` per prepared text, in order."""
        ...
