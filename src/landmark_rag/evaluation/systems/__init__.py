"""The systems ``landmark-rag eval`` compares, one file each (the chunk baselines share
``chunk.py``), by registry name."""

from __future__ import annotations

from collections.abc import Sequence

from landmark_rag.evaluation.systems.base import DenseSystem, IndexStats, System, Workspace
from landmark_rag.evaluation.systems.bm25 import BM25System
from landmark_rag.evaluation.systems.chunk import Chunk200System, Chunk256System, Chunk512System
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


#: systems that can be asked for by name but are not in the default run (``SYSTEMS``): the
#: long-evidence benchmark's 512-token chunks
EXTRA_SYSTEMS: dict[str, type[System]] = {Chunk512System.name: Chunk512System}


def per_expansion(systems: list[System], expansions: list[str]) -> list[System]:
    """``systems`` with each that expands hits (``landmark``, ``hybrid``) replaced by one
    per boundary expansion (rows ``landmark-front``, ``hybrid-evidence``, ...); they share
    one encoding through the workspace. A list without such a system is a ``ValueError``."""
    out: list[System] = []
    for system in systems:
        if isinstance(system, LandmarkSystem):
            out.extend(type(system)(expansion=e) for e in expansions)
        else:
            out.append(system)
    if len(out) == len(systems) and not any(isinstance(s, LandmarkSystem) for s in systems):
        raise ValueError("expansions apply to the landmark and hybrid systems; add one to systems")
    return out


def make_system(name: str) -> System:
    """A fresh system by registry name (``ValueError`` listing the known ones otherwise)."""
    cls = SYSTEMS.get(name) or EXTRA_SYSTEMS.get(name)
    if cls is None:
        known = ", ".join([*SYSTEMS, *EXTRA_SYSTEMS])
        raise ValueError(f"unknown system {name!r}; known: {known}")
    return cls()


def choose_systems(names: Sequence[str], expansions: Sequence[str] | None = None) -> list[System]:
    """The systems a run compares: one fresh system per name, and with ``expansions`` the
    expanding ones once per expansion (:func:`per_expansion`). Made before any data is read,
    so an unknown name fails the run at once."""
    chosen = [make_system(s) for s in names]
    return per_expansion(chosen, list(expansions)) if expansions else chosen


__all__ = [
    "EXTRA_SYSTEMS", "SYSTEMS", "DenseSystem", "IndexStats", "System", "Workspace", "choose_systems", "make_system",
    "per_expansion",
]
