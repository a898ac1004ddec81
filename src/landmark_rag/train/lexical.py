"""BM25 of a training batch, for a contrastive loss that knows hybrid search adds it back.

A shipped model searches in hybrid mode: its vectors' scores are fused with sentence-level
BM25. Trained alone, the vectors spend their capacity on questions BM25 already answers
(a rare name shared by the question and its sentence) as much as on the ones it misses. With
``lexical_prior`` set, each query's BM25 over the batch's units, scaled to 0-1 as hybrid
search scales it (min-max over the candidates), is added to the query's contrastive logits:
a question BM25 already ranks right costs little, and the gradient goes to the questions the
vectors must answer on their own. This is the residual idea of CLEAR (Gao et al., 2021,
"Complement Lexical Retrieval Model with Semantic Residual Embeddings"), here as a fixed
additive prior in the softmax rather than a margin.

The batch is the BM25 corpus (its term statistics come from the batch's units), the same
scoring, analyser and parameters as the package's lexical index (``store.bm25``,
``store.analyzer``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from landmark_rag.store.bm25 import BM25Index
from landmark_rag.train.examples import TrainExample


def lexical_prior(
    batch: Sequence[TrainExample], analyze: Callable[[str], list[str]], *, k1: float, b: float, weight: float
) -> torch.Tensor:
    """``[queries, units]``: ``weight`` times each query's BM25 over all units of ``batch``,
    min-max scaled per query to 0-1 (all zeros when no unit shares a term with it).

    Rows follow the batch's queries and columns its units, each example's in order, as the
    trainer concatenates them for the loss.
    """
    texts = [u for ex in batch for u in ex.units]
    queries = [q for ex in batch for q in ex.queries]
    out = np.zeros((len(queries), len(texts)), dtype=np.float32)
    if not texts or not queries:
        return torch.from_numpy(out)
    index = BM25Index.from_texts([str(i) for i in range(len(texts))], texts, analyze, k1=k1, b=b)
    for j, q in enumerate(queries):
        s = index.scores(analyze(q))
        lo, hi = float(s.min()), float(s.max())
        if hi - lo > 1e-12:
            out[j] = (s - lo) / (hi - lo)
    return torch.from_numpy(out * np.float32(weight))


__all__ = ["lexical_prior"]
