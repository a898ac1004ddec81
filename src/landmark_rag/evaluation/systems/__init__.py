"""The systems ``landmark-rag eval`` compares, one file each (the chunk baselines share
``chunk.py``), by registry name."""

from __future__ import annotations

from landmark_rag.evaluation.systems.base import DenseSystem, IndexStats, System, Workspace
from landmark_rag.evaluation.systems.bm25 import BM25System
from landmark_rag.evaluation.systems.chunk import Chunk200System, Chunk256System
from landmark_rag.evaluation.systems.hybrid import HybridSystem
from landmark_rag.evaluation.systems.landmark import LandmarkSystem
from landmark_rag.evaluation.systems.late_chunking import LateChunkingSystem
from landmark_rag.evaluation.systems.sentence import SentenceSystem
from landmark_rag.evaluation.systems.sentence_window import SentenceWindowSystem

#: name -> class, in report order
SYSTEMS: dict[str, type[System]] = {
    cls.name: cls
    for cls in (
        LandmarkSystem,
        SentenceSystem,
        Chunk200System,
        Chunk256System,
        SentenceWindowSystem,
        LateChunkingSystem,
        BM25System,
        HybridSystem,
    )
}


def make_system(name: str) -> System:
    """A fresh system by registry name (``ValueError`` listing the known ones otherwise)."""
    try:
        return SYSTEMS[name]()
    except KeyError:
        raise ValueError(f"unknown system {name!r}; known: {', '.join(SYSTEMS)}") from None


__all__ = ["SYSTEMS", "DenseSystem", "IndexStats", "System", "Workspace", "make_system"]
