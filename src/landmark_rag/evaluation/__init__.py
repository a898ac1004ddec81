"""Retrieval-quality evaluation on SQuAD-format data (``landmark-rag eval``).

``evaluate(data, systems, budgets, model)`` compares the landmark pipeline with sentence,
chunk, sentence-window, late-chunking and BM25 baselines over one corpus made of all the
selected articles, by gold-sentence recall and by answer coverage at token budgets.
"""

from landmark_rag.evaluation.context import Context, Passage, TokenIndex, assemble_context
from landmark_rag.evaluation.corpus import Corpus, build_corpus
from landmark_rag.evaluation.data import cap_questions, choose_articles
from landmark_rag.evaluation.metrics import (
    answer_in_context,
    gold_rank,
    gold_units,
    mrr_at,
    normalize_answer,
    rank_order,
    recall_at,
)
from landmark_rag.evaluation.runner import DEFAULT_BUDGETS, evaluate, evaluate_system
from landmark_rag.evaluation.systems import SYSTEMS, make_system

__all__ = [
    "DEFAULT_BUDGETS",
    "SYSTEMS",
    "Context",
    "Corpus",
    "Passage",
    "TokenIndex",
    "answer_in_context",
    "assemble_context",
    "build_corpus",
    "cap_questions",
    "choose_articles",
    "evaluate",
    "evaluate_system",
    "gold_rank",
    "gold_units",
    "make_system",
    "mrr_at",
    "normalize_answer",
    "rank_order",
    "recall_at",
]


def __getattr__(name: str) -> object:
    # EvalArticle and EvalSet are documented names of releases before the one record type
    from landmark_rag.evaluation.data import _deprecated

    return _deprecated(name, __name__)
