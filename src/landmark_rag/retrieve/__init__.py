"""Retrieval (step 4 of the pipeline): vector search plus expansion into passages."""

from landmark_rag.retrieve.search import SearchableSource, search_passages

__all__ = ["SearchableSource", "search_passages"]
