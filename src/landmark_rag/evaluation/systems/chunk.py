"""The chunk baselines: fixed-size chunks, each embedded alone; the passage is the chunk.

``chunk200``: 200-word chunks (the paper's chunk baseline). ``chunk256``: 256-token chunks
with a 32-token overlap, the common RAG default (token splitter with overlap), in tokens of
the base model, so a chunk is exactly what the encoder sees (the encoder's window holds 256
+ specials). Chunks have no notion of sentences, so gold-sentence recall does not apply and
only coverage compares them with the others.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from landmark_rag.evaluation.corpus import Corpus
from landmark_rag.evaluation.systems.base import ChunkUnitsMixin, DenseSystem
from landmark_rag.evaluation.systems.chunking import token_chunks, word_chunks
from landmark_rag.types import Sentence


class ChunkSystem(ChunkUnitsMixin, DenseSystem):
    """Chunks of ``size`` words (no overlap) or ``size`` base-model tokens, consecutive token
    chunks sharing ``overlap`` tokens; a registered system is one set of these class values."""

    unit: ClassVar[Literal["words", "tokens"]]
    size: ClassVar[int]
    overlap: ClassVar[int] = 0

    def units(self, corpus: Corpus) -> list[list[Sentence]]:
        if self.unit == "words":
            return [word_chunks(t, self.size, d) for t, d in zip(corpus.texts, corpus.doc_ids, strict=True)]
        return [
            token_chunks(t, tok, self.size, self.overlap, d)
            for t, tok, d in zip(corpus.texts, corpus.tokens, corpus.doc_ids, strict=True)
        ]


class Chunk200System(ChunkSystem):
    name: ClassVar[str] = "chunk200"
    description: ClassVar[str] = "200-word chunks embedded alone"
    unit_kind: ClassVar[str] = "chunk200"
    unit: ClassVar[Literal["words", "tokens"]] = "words"
    size: ClassVar[int] = 200


class Chunk256System(ChunkSystem):
    name: ClassVar[str] = "chunk256"
    description: ClassVar[str] = "256-token chunks, 32-token overlap, embedded alone"
    unit_kind: ClassVar[str] = "chunk256"
    unit: ClassVar[Literal["words", "tokens"]] = "tokens"
    size: ClassVar[int] = 256
    overlap: ClassVar[int] = 32


class Chunk512System(ChunkSystem):
    """512-token chunks: the long-evidence benchmark's larger chunk baseline, where a chunk
    can hold a whole multi-sentence evidence passage. Not in the default ``eval`` list (its
    figures on the SQuAD benchmark would only repeat chunk256's story at twice the size)."""

    name: ClassVar[str] = "chunk512"
    description: ClassVar[str] = "512-token chunks, 32-token overlap, embedded alone"
    unit_kind: ClassVar[str] = "chunk512"
    unit: ClassVar[Literal["words", "tokens"]] = "tokens"
    size: ClassVar[int] = 512
    overlap: ClassVar[int] = 32
