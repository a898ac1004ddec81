"""``bm25``: BM25 over the corpus sentences, the lexical anchor.

Sentences are the units so its gold-sentence recall sits next to the dense systems';
hits get the same +/- 1 expansion as ``sentence``. The scoring and the terms are the
package's own, the ones its lexical search uses (``store/bm25.py``: Lucene BM25 as bm25s
scores it; ``store/analyzer.py``: stop words removed, Snowball-stemmed, in the default
language of the lexical index), so this figure and ``hybrid``'s lexical half come from one
implementation: a difference between them in a results table is the fusion, never a
second BM25.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import ClassVar

import numpy as np

from landmark_rag.evaluation.corpus import Corpus
from landmark_rag.evaluation.systems.base import IndexStats, SentenceWindowMixin, System, Workspace
from landmark_rag.retrieve.fusion import FusionConfig
from landmark_rag.store.analyzer import make_analyzer
from landmark_rag.store.bm25 import DEFAULT_B, DEFAULT_K1, BM25Index, check_parameters


class BM25System(SentenceWindowMixin, System):
    name: ClassVar[str] = "bm25"
    description: ClassVar[str] = "BM25 (the package's lexical index: Lucene variant, stemmed) over sentences, hit +/- 1"
    sentence_units: ClassVar[bool] = True
    before: ClassVar[int] = 1
    after: ClassVar[int] = 1

    def __init__(self, k1: float = DEFAULT_K1, b: float = DEFAULT_B) -> None:
        """``k1`` / ``b``: the BM25 parameters (bm25s's by default: the baseline readers know;
        ``benchmarks/hybrid_sweep.py --bm25`` scores BM25 alone with each pair it sweeps)."""
        check_parameters(k1, b)
        self.k1, self.b = float(k1), float(b)
        self.corpus: Corpus | None = None
        self.index: BM25Index | None = None
        self.analyze: Callable[[str], list[str]] | None = None
        self.query_seconds = 0.0

    def build(self, corpus: Corpus, workspace: Workspace) -> IndexStats:
        self.corpus = corpus
        texts = [corpus.sentence_text(g) for g in range(corpus.n_sentences)]
        t0 = time.perf_counter()
        self.analyze = make_analyzer(FusionConfig().language)  # the lexical index's default language
        self.index = BM25Index.from_texts([str(g) for g in range(len(texts))], texts, self.analyze, k1=self.k1, b=self.b)
        seconds = time.perf_counter() - t0
        return IndexStats(
            seconds=seconds, tokens=corpus.n_tokens, units=len(texts), vectors=None, bytes=self.index.nbytes
        )

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        assert self.index is not None and self.analyze is not None and self.corpus is not None, "build() first"
        t0 = time.perf_counter()
        out = np.zeros((len(queries), self.corpus.n_sentences), dtype=np.float32)
        for i, q in enumerate(queries):
            out[i] = self.index.scores(self.analyze(q))
        self.query_seconds += time.perf_counter() - t0
        return out
