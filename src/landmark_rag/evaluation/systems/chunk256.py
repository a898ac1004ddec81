"""``chunk256``: 256-token chunks with a 32-token overlap, each embedded alone.

The common RAG default (token splitter with overlap), in tokens of the base model, so a
chunk is exactly what the encoder sees (the encoder's window holds 256 + specials).
"""

from __future__ import annotations

from typing import ClassVar

from landmark_rag.evaluation.corpus import Corpus
from landmark_rag.evaluation.systems.base import ChunkUnitsMixin, DenseSystem
from landmark_rag.evaluation.systems.chunking import token_chunks
from landmark_rag.types import Sentence

SIZE = 256
OVERLAP = 32


class Chunk256System(ChunkUnitsMixin, DenseSystem):
    name: ClassVar[str] = "chunk256"
    description: ClassVar[str] = "256-token chunks, 32-token overlap, embedded alone"
    unit_kind: ClassVar[str] = "chunk256"

    def units(self, corpus: Corpus) -> list[list[Sentence]]:
        return [
            token_chunks(t, tok, SIZE, OVERLAP, d)
            for t, tok, d in zip(corpus.texts, corpus.tokens, corpus.doc_ids, strict=True)
        ]
