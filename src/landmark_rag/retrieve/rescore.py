"""Cosine re-scoring of hits and passages against a query, from the stored sentence vectors.

Scores that arrive from outside (a framework retriever's distance in its own scale, a
rank, a lexical score) are not comparable with the cosines the adaptive expansion and
the rest of the pipeline use; re-scoring reads each hit sentence's stored vector and
scores it as its cosine with the (unit) query vector. This is the only place that does it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from typing import TypeVar

import numpy as np

from landmark_rag.expand import AnySentenceSource, read_sentences
from landmark_rag.types import DENSE_SCORE, Hit, Passage

Scored = TypeVar("Scored", Hit, Passage)


def unit_vector(vector: object) -> np.ndarray:
    """``vector`` as float32 with unit length (so inner products are cosines)."""
    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    return v / max(float(np.linalg.norm(v)), 1e-12)


def cosine_rescore(items: Sequence[Scored], source: AnySentenceSource, query_vector: np.ndarray) -> list[Scored]:
    """Copies of ``items`` scored by cosine with ``query_vector``, in the same order.

    A :class:`~landmark_rag.types.Hit` scores as its sentence's stored vector; a
    :class:`~landmark_rag.types.Passage` as its best hit sentence. An item whose vectors the
    source does not hold keeps its score.
    """
    query = unit_vector(query_vector)
    wanted: dict[str, set[int]] = defaultdict(set)
    for item in items:
        doc_id, indices = _sentences_of(item)
        wanted[doc_id].update(indices)
    _, vectors = read_sentences(source, wanted, embeddings=True)
    out: list[Scored] = []
    for item in items:
        doc_id, indices = _sentences_of(item)
        doc_vecs = vectors.get(doc_id, {})
        scores = [float(doc_vecs[i] @ query) for i in indices if i in doc_vecs]
        if not scores:
            out.append(replace(item))
        elif isinstance(item, Hit):  # the cosine is known now: recorded for Passage.cosine
            out.append(replace(item, score=max(scores), metadata={**item.metadata, DENSE_SCORE: max(scores)}))
        else:
            out.append(replace(item, score=max(scores), cosine=max(scores)))
    return out


def _sentences_of(item: Hit | Passage) -> tuple[str, list[int]]:
    if isinstance(item, Hit):
        return str(item.sentence.doc_id), [item.sentence.index]
    return item.doc_id, list(item.hit_indices)
