"""Documents with random unit vectors: store and retrieval tests that need real sentences and
ids but no model (the store keeps whatever vectors it is given)."""

from __future__ import annotations

import numpy as np

from landmark_rag.segment import segment_sentences
from landmark_rag.types import EncodedDocument


def encode(text: str, doc_id: str, seed: int = 0, dim: int = 8) -> EncodedDocument:
    """``text`` segmented by the package's segmenter, one random unit vector per sentence."""
    sents = segment_sentences(text, doc_id=doc_id)
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(len(sents), dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return EncodedDocument(text, sents, vecs, doc_id)
