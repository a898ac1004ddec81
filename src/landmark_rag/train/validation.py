"""Gold-sentence recall within an article: the periodic validation signal of training.

For each question, all sentences of its article are ranked by inner product with the query
vector; a hit at k means the answer's last sentence (the one the position-aware objective
targets) is among the top k. It needs no vector store and is cheap enough to run every few
hundred steps.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from landmark_rag.encode.encoder import LandmarkEncoder
from landmark_rag.train.documents import SegmentedArticle


def gold_sentence_ranks(
    encoder: LandmarkEncoder, articles: Sequence[SegmentedArticle], max_questions: int | None = None
) -> np.ndarray:
    """0-based rank of each question's gold sentence within its article."""
    ranks = []
    budget = max_questions
    for art in articles:
        questions = art.article.questions
        qs = questions if budget is None else questions[: max(0, budget)]
        if not qs:
            continue
        if budget is not None:
            budget -= len(qs)
        doc = encoder.encode_document(art.article.text, art.article.title, sentences=list(art.sentences))
        q = encoder.encode_queries([x.question for x in qs])
        scores = q @ doc.embeddings.T
        for j, question in enumerate(qs):
            gold = art.answer_span(question)[-1]
            ranks.append(int((scores[j] > scores[j, gold]).sum()))
    return np.asarray(ranks, dtype=np.int64)


def recall_metrics(ranks: np.ndarray, ks: Sequence[int] = (1, 5, 10)) -> dict[str, float]:
    if len(ranks) == 0:
        return {}
    out = {f"R@{k}": float((ranks < k).mean()) for k in ks}
    out["MRR"] = float((1.0 / (ranks + 1)).mean())
    out["questions"] = float(len(ranks))
    return out


def validate(
    encoder: LandmarkEncoder, articles: Sequence[SegmentedArticle], max_questions: int | None = None
) -> dict[str, float]:
    """Recall@1/5/10 and MRR of the gold sentence; the model is put in eval mode for it.

    Documents are encoded as the weights are loaded, without the CPU's bf16 autocast
    (``encode.runtime.precision``), so a seeded training run logs the same figures on every CPU;
    the encoder's setting is restored afterwards."""
    was_training, autocast = encoder.model.training, encoder.document_autocast
    encoder.model.eval()
    encoder.document_autocast = None
    try:
        return recall_metrics(gold_sentence_ranks(encoder, articles, max_questions))
    finally:
        encoder.model.train(was_training)
        encoder.document_autocast = autocast
