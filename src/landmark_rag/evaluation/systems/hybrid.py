"""``hybrid``: the package's landmark vectors fused with sentence-level BM25.

The same units, vectors and expansion as ``landmark`` (the encoding is shared, not redone),
plus the BM25 the package keeps beside a store (``landmark_rag.store.bm25``, the same one
the ``bm25`` system reports, over the same sentences, analysed by
``landmark_rag.store.analyzer``), fused the way
``LandmarkIndex.search(mode="hybrid")`` fuses them (``landmark_rag.retrieve.fusion``: top
``depth`` of each half; BM25 with the fusion's ``lexical_context``, the corpus's documents
telling which sentence precedes which). The fusion settings are the model's ``landmark_config.json``
``fusion`` entry; a model that names none (dense only) is fused with the package defaults,
since this system measures hybrid search by definition. ``fusion`` can be set on an instance
(the validation sweep in ``benchmarks/hybrid_sweep.py`` does).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from landmark_rag.evaluation.corpus import Corpus
from landmark_rag.evaluation.systems.base import IndexStats, Workspace
from landmark_rag.evaluation.systems.landmark import LandmarkSystem
from landmark_rag.retrieve.fusion import FusionConfig, fuse_arrays
from landmark_rag.store.analyzer import make_analyzer
from landmark_rag.store.bm25 import BM25Index


class HybridSystem(LandmarkSystem):
    name: ClassVar[str] = "hybrid"
    description: ClassVar[str] = "landmark vectors fused with sentence BM25 (the model's fusion), its expansion"
    sentence_units: ClassVar[bool] = True

    def __init__(self, fusion: FusionConfig | None = None, expansion: str | None = None) -> None:
        super().__init__(expansion)
        self.fusion = fusion
        self.lexical: BM25Index | None = None
        self.analyze: Any = None

    def build(self, corpus: Corpus, workspace: Workspace) -> IndexStats:
        stats = super().build(corpus, workspace)
        if self.fusion is None:  # the fusion a user's LandmarkIndex of this model searches with
            self.fusion = workspace.landmark_index().fusion
            if self.fusion.mode != "hybrid":  # a dense-only model: measured with the default fusion
                self.fusion = FusionConfig(mode="hybrid", language=self.fusion.language)
        t0 = time.perf_counter()
        self.analyze = make_analyzer(self.fusion.language)
        texts = [corpus.sentence_text(g) for g in range(corpus.n_sentences)]
        self.lexical = BM25Index.from_texts(
            [str(g) for g in range(corpus.n_sentences)], texts, self.analyze, documents=corpus.sent_doc,
            k1=self.fusion.bm25_k1, b=self.fusion.bm25_b,
        )
        seconds = time.perf_counter() - t0
        lex_bytes = self.lexical.nbytes
        # charged both halves: a shared dense encoding is still this system's cost
        return IndexStats(
            seconds=stats.seconds + seconds, tokens=stats.tokens, units=stats.units, vectors=stats.vectors,
            bytes=stats.bytes + int(lex_bytes), shared_with=None,
        )

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        assert self.lexical is not None and self.fusion is not None, "build() first"
        dense = super().scores(queries)
        t0 = time.perf_counter()
        out = np.empty_like(dense)
        for i, q in enumerate(queries):
            lexical = self.lexical.scores(self.analyze(q), context=self.fusion.lexical_context)
            out[i] = fuse_arrays(dense[i], lexical, self.fusion)
        self.query_seconds += time.perf_counter() - t0
        return out
