"""``bm25``: BM25 over the corpus sentences (bm25s), the lexical anchor.

Sentences are the units so its gold-sentence recall sits next to the dense systems';
hits get the same +/- 1 expansion as ``sentence``. English stop words are removed and,
when PyStemmer is installed, words are Snowball-stemmed (bm25s's recommended setup;
without a stemmer BM25 misses every plural/tense variation and is an unfairly weak anchor).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from landmark_rag.evaluation.corpus import Corpus
from landmark_rag.evaluation.systems.base import IndexStats, SentenceWindowMixin, System, Workspace


def _stemmer() -> Any:
    try:
        import Stemmer
    except ImportError:
        return None
    return Stemmer.Stemmer("english")  # the Tokenizer uses its stemWord


class BM25System(SentenceWindowMixin, System):
    name: ClassVar[str] = "bm25"
    description: ClassVar[str] = "BM25 (bm25s, Lucene variant, stemmed) over sentences, hit +/- 1"
    sentence_units: ClassVar[bool] = True
    before: ClassVar[int] = 1
    after: ClassVar[int] = 1

    def __init__(self) -> None:
        self.corpus: Corpus | None = None
        self.retriever: Any = None
        self.tokenizer: Any = None
        self.query_seconds = 0.0

    def build(self, corpus: Corpus, workspace: Workspace) -> IndexStats:
        import bm25s
        from bm25s.tokenization import Tokenizer

        self.corpus = corpus
        texts = [corpus.sentence_text(g) for g in range(corpus.n_sentences)]
        t0 = time.perf_counter()
        self.tokenizer = Tokenizer(stopwords="en", stemmer=_stemmer())
        ids = self.tokenizer.tokenize(texts, show_progress=False, return_as="tuple")
        self.retriever = bm25s.BM25()  # Lucene BM25, k1=1.5, b=0.75
        self.retriever.index(ids, show_progress=False)
        seconds = time.perf_counter() - t0
        size = sum(np.asarray(v).nbytes for v in self.retriever.scores.values() if hasattr(v, "nbytes"))
        return IndexStats(seconds=seconds, tokens=corpus.n_tokens, units=len(texts), vectors=None, bytes=int(size))

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        assert self.retriever is not None and self.corpus is not None, "build() first"
        t0 = time.perf_counter()
        toks = self.tokenizer.tokenize(list(queries), update_vocab=False, show_progress=False, return_as="ids")
        out = np.zeros((len(queries), self.corpus.n_sentences), dtype=np.float32)
        for i, q in enumerate(toks):
            if q:
                out[i] = self.retriever.get_scores(q)
        self.query_seconds += time.perf_counter() - t0
        return out
