"""Retrieval (step 4 of the pipeline): dense, lexical or fused sentence hits -> exactly ``k``
expanded passages.

``ranking.read_best`` reads a mode's best sentences once; ``search.find_hits`` and
``search.find_passages`` hold the one loop that asks for more.
"""

from landmark_rag.retrieve.fusion import FusionConfig, fuse, model_fusion
from landmark_rag.retrieve.ranking import Ranked, Request, Sources, read_best
from landmark_rag.retrieve.rescore import cosine_rescore, unit_vector
from landmark_rag.retrieve.search import find_hits, find_passages

__all__ = [
    "FusionConfig",
    "Ranked",
    "Request",
    "Sources",
    "cosine_rescore",
    "find_hits",
    "find_passages",
    "fuse",
    "model_fusion",
    "read_best",
    "unit_vector",
]
