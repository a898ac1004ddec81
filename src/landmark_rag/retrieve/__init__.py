"""Retrieval (step 4 of the pipeline): sentence hits -> exactly ``k`` expanded passages."""

from landmark_rag.retrieve.rescore import cosine_rescore, unit_vector
from landmark_rag.retrieve.search import SearchableSource, collect_passages, search_passages

__all__ = ["SearchableSource", "collect_passages", "cosine_rescore", "search_passages", "unit_vector"]
