"""Retrieval (step 4 of the pipeline): dense, lexical or fused sentence hits -> exactly ``k``
expanded passages, or the passages that fill a token budget.

``ranking.read_best`` reads a mode's best sentences once; ``search.find_hits``,
``search.find_passages`` and ``search.find_budget_hits`` hold the loops that ask for more.
"""

from landmark_rag.retrieve.fusion import FusionConfig, fuse, model_fusion
from landmark_rag.retrieve.ranking import Ranked, Request, Sources, read_best
from landmark_rag.retrieve.rescore import cosine_rescore, unit_vector
from landmark_rag.retrieve.search import budget_passages, find_budget_hits, find_hits, find_passages

__all__ = [
    "FusionConfig",
    "Ranked",
    "Request",
    "Sources",
    "budget_passages",
    "cosine_rescore",
    "find_budget_hits",
    "find_hits",
    "find_passages",
    "fuse",
    "model_fusion",
    "read_best",
    "unit_vector",
]
