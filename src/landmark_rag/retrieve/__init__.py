"""Retrieval (step 4 of the pipeline): dense, lexical or fused sentence hits -> exactly ``k``
expanded passages."""

from landmark_rag.retrieve.fusion import FusionConfig, fuse, model_fusion
from landmark_rag.retrieve.hybrid import mode_hits
from landmark_rag.retrieve.rescore import cosine_rescore, unit_vector
from landmark_rag.retrieve.search import SearchableSource, collect_passages, search_passages

__all__ = [
    "FusionConfig",
    "SearchableSource",
    "collect_passages",
    "cosine_rescore",
    "fuse",
    "mode_hits",
    "model_fusion",
    "search_passages",
    "unit_vector",
]
