"""What every evaluated system provides, and the shared workspace they build in.

A system is three things: units it ranks (sentences, windows or chunks), a scorer from
questions to one score per unit, and an expansion from a ranked unit to the passage a
reader gets. The runner owns everything else (ranking, metrics, budgets), so systems
differ only where the methods really differ.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from landmark_rag.evaluation.corpus import Corpus
from landmark_rag.types import Sentence

if TYPE_CHECKING:  # the harness measures this encoder itself: its weights identify a cached encoding
    from landmark_rag.encode.encoder import LandmarkEncoder
    from landmark_rag.index import LandmarkIndex


@dataclass(slots=True)
class IndexStats:
    """Cost of building a system's index.

    ``seconds`` is wall time to turn the corpus into the index (segmentation is shared and
    not charged); ``tokens`` the corpus size in base-model tokens, so ``tokens / seconds``
    is comparable across systems. ``vectors`` is ``None`` for a sparse (lexical) index.
    """

    seconds: float
    tokens: int
    units: int
    vectors: int | None
    bytes: int
    shared_with: str | None = None  # the system whose identical encoding was reused

    def cost_metrics(self, questions: int, query_seconds: float) -> dict[str, float]:
        """The cost columns of a result row (indexing speed and size, query speed); ``vectors``
        only for a dense index, ``queries_per_s`` only when queries were timed."""
        out: dict[str, float] = {
            "tokens_per_s": self.tokens / max(self.seconds, 1e-9), "index_s": self.seconds, "units": self.units,
        }
        if self.vectors is not None:
            out["vectors"] = self.vectors
        out["index_bytes"] = self.bytes
        if questions and query_seconds > 0:
            out["queries_per_s"] = questions / query_seconds
        return out


@dataclass
class Workspace:
    """Models and encodings shared by the systems of one run (in memory only).

    Loading a model once and reusing an encoding when two systems embed the same units
    the same way (``landmark`` and ``sentence`` with an untrained default model,
    ``sentence`` and ``sentence-window`` always) keeps a full run within budget; the
    reused index reports the cost measured when it was built.
    """

    model: str | None = None
    base_model: str | None = None
    device: str | None = None
    batch_size: int = 16
    show_progress: bool = False
    _encodings: dict[tuple, tuple[np.ndarray, float, str]] = field(default_factory=dict)
    _queries: dict[tuple, tuple[np.ndarray, float]] = field(default_factory=dict)

    def load(self, name: str | None) -> LandmarkEncoder:
        """A LandmarkEncoder for ``name`` with its own (saved or default) configuration."""
        from landmark_rag.encode.models.cache import load_encoder

        return load_encoder(name, device=self.device)

    def landmark_encoder(self) -> LandmarkEncoder:
        return self.load(self.model)

    def landmark_index(self, encoder: LandmarkEncoder | None = None) -> LandmarkIndex:
        """The package's pipeline for the evaluated model: a :class:`~landmark_rag.LandmarkIndex`
        with the model's own expansion. The harness ranks all sentences itself (one matrix
        product per question batch), so the index holds its vectors in memory, not in Chroma."""
        from landmark_rag.expand import InMemorySource
        from landmark_rag.index import LandmarkIndex

        return LandmarkIndex(InMemorySource(), encoder if encoder is not None else self.landmark_encoder())

    def base_name(self) -> str | None:
        """The base model of the baselines: ``base_model`` if given, else the landmark
        model's own base (an adapter directory names it), else the landmark model."""
        if self.base_model:
            return self.base_model
        return self.landmark_encoder().config.base_model or self.model

    def base_encoder(self, **overrides: Any) -> LandmarkEncoder:
        """The base model with config overrides (e.g. ``pooling="mean"``), sharing weights."""
        from landmark_rag.encode.models.cache import load_encoder

        return load_encoder(self.base_name(), device=self.device, **overrides)

    def standalone_encoder(self) -> LandmarkEncoder:
        """The base model as people use it today: each unit embedded alone, mean-pooled.

        Shared by every context-free baseline (sentence, sentence-window, chunks), so they
        encode the same way and identical units are encoded once.
        """
        return self.base_encoder(pooling="sentence", query_pooling="mean")

    @staticmethod
    def _identity(encoder: LandmarkEncoder) -> tuple:
        cfg = encoder.config
        return (id(encoder.model), cfg.pooling, cfg.query_pooling, cfg.lmk_token, encoder.max_length, encoder.overlap)

    def encode_units(
        self, encoder: LandmarkEncoder, corpus: Corpus, units: Sequence[Sequence[Sentence]], unit_kind: str, owner: str
    ) -> tuple[np.ndarray, float, str]:
        """Vectors ``[n_units, dim]`` for ``units`` (per document), the seconds it took and
        the system that paid for it. ``unit_kind`` names the unit layout for the cache."""
        key = (self._identity(encoder), unit_kind)
        if key not in self._encodings:
            t0 = time.perf_counter()
            docs = encoder.encode_documents(
                corpus.texts,
                corpus.doc_ids,
                sentences=[list(u) for u in units],
                batch_size=self.batch_size,
                show_progress=self.show_progress,
            )
            dim = encoder.dim
            emb = np.concatenate([d.embeddings for d in docs] or [np.zeros((0, dim), np.float32)], axis=0)
            self._encodings[key] = (np.ascontiguousarray(emb, dtype=np.float32), time.perf_counter() - t0, owner)
        return self._encodings[key]

    def encode_queries(self, encoder: LandmarkEncoder, queries: Sequence[str]) -> tuple[np.ndarray, float]:
        """Query vectors (cached per encoder identity) and the seconds they took."""
        cfg = encoder.config
        # document pooling does not touch queries: sentence/mean/chunk systems share them
        ident = (id(encoder.model), cfg.query_pooling, cfg.lmk_token, cfg.query_instruction, encoder.max_length)
        key = (ident, tuple(queries))
        if key not in self._queries:
            t0 = time.perf_counter()
            vecs = encoder.encode_queries(list(queries), show_progress=self.show_progress)
            self._queries[key] = (vecs, time.perf_counter() - t0)
        return self._queries[key]


class System(ABC):
    """One retrieval system under evaluation."""

    #: registry name (``--systems``)
    name: ClassVar[str]
    #: one-line description for reports and ``--help``
    description: ClassVar[str]
    #: True when the ranked units are the corpus sentences (gold-sentence recall applies)
    sentence_units: ClassVar[bool] = False

    @abstractmethod
    def build(self, corpus: Corpus, workspace: Workspace) -> IndexStats:
        """Index the corpus."""

    @abstractmethod
    def scores(self, queries: Sequence[str]) -> np.ndarray:
        """float32 ``[n_queries, n_units]``; higher is better."""

    @abstractmethod
    def passage(self, unit: int) -> tuple[int, int, int]:
        """``(doc, start, end)`` of the passage returned for ranked unit ``unit``."""

    #: seconds spent on query encoding in the last ``scores`` calls (for queries_per_s)
    query_seconds: float = 0.0


class DenseSystem(System):
    """A system whose units are embedded by a LandmarkEncoder and scored by inner product."""

    unit_kind: ClassVar[str] = "sentences"

    def __init__(self) -> None:
        self.encoder: LandmarkEncoder | None = None
        self.embeddings: np.ndarray | None = None
        self.corpus: Corpus | None = None
        self.workspace: Workspace | None = None
        self.query_seconds = 0.0

    @abstractmethod
    def make_encoder(self, workspace: Workspace) -> LandmarkEncoder:
        """The LandmarkEncoder (and pooling) this system embeds with."""

    def units(self, corpus: Corpus) -> list[list[Sentence]]:
        """Units per document; the corpus sentences unless a subclass chunks."""
        return corpus.sentences

    def build(self, corpus: Corpus, workspace: Workspace) -> IndexStats:
        self.corpus, self.workspace = corpus, workspace
        self.encoder = self.make_encoder(workspace)
        units = self.units(corpus)
        self.embeddings, seconds, owner = workspace.encode_units(self.encoder, corpus, units, self.unit_kind, self.name)
        self._after_build(units)
        return IndexStats(
            seconds=seconds,
            tokens=corpus.n_tokens,
            units=int(self.embeddings.shape[0]),
            vectors=int(self.embeddings.shape[0]),
            bytes=int(self.embeddings.nbytes),
            shared_with=None if owner == self.name else owner,
        )

    def _after_build(self, units: list[list[Sentence]]) -> None:
        """Hook for systems that keep unit spans (chunks)."""

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        assert self.embeddings is not None and self.workspace is not None and self.encoder is not None, "build() first"
        q, seconds = self.workspace.encode_queries(self.encoder, queries)
        t0 = time.perf_counter()
        out = q @ self.embeddings.T
        self.query_seconds += seconds + time.perf_counter() - t0
        return out


class SentenceWindowMixin:
    """Passage = the hit sentence with ``before``/``after`` neighbours of its document."""

    before: ClassVar[int] = 1
    after: ClassVar[int] = 1
    corpus: Corpus | None

    def passage(self, unit: int) -> tuple[int, int, int]:
        from landmark_rag.evaluation.systems.expansion import surround_passage

        assert self.corpus is not None
        return surround_passage(self.corpus, unit, self.before, self.after)


class ChunkUnitsMixin:
    """Passage = the chunk itself (chunks are what a chunking pipeline returns)."""

    _spans: np.ndarray  # int64 [n_units, 3]: doc, start, end

    def make_encoder(self, workspace: Workspace) -> LandmarkEncoder:
        """Chunks are embedded alone, as chunking pipelines embed them."""
        return workspace.standalone_encoder()

    def _after_build(self, units: list[list[Sentence]]) -> None:
        self._spans = np.asarray([(d, u.start, u.end) for d, us in enumerate(units) for u in us], dtype=np.int64)

    def passage(self, unit: int) -> tuple[int, int, int]:
        d, s, e = self._spans[unit]
        return int(d), int(s), int(e)
