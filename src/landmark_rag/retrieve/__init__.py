"""Retrieval (step 4 of the pipeline): dense, lexical or hybrid hits, expanded into passages."""

from landmark_rag.retrieve.fusion import FusionConfig, fuse, model_fusion
from landmark_rag.retrieve.hybrid import mode_hits
from landmark_rag.retrieve.search import SearchableSource, search_passages

__all__ = ["FusionConfig", "SearchableSource", "fuse", "mode_hits", "model_fusion", "search_passages"]
