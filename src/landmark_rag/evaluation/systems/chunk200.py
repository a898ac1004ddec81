"""``chunk200``: 200-word chunks, each embedded alone (the paper's chunk baseline).

The passage is the chunk; chunks have no notion of sentences, so gold-sentence recall does
not apply and only coverage compares it with the others.
"""

from __future__ import annotations

from typing import ClassVar

from landmark_rag.evaluation.corpus import Corpus
from landmark_rag.evaluation.systems.base import ChunkUnitsMixin, DenseSystem
from landmark_rag.evaluation.systems.chunking import word_chunks
from landmark_rag.types import Sentence

WORDS = 200


class Chunk200System(ChunkUnitsMixin, DenseSystem):
    name: ClassVar[str] = "chunk200"
    description: ClassVar[str] = "200-word chunks embedded alone"
    unit_kind: ClassVar[str] = "chunk200"

    def units(self, corpus: Corpus) -> list[list[Sentence]]:
        return [word_chunks(t, WORDS, d) for t, d in zip(corpus.texts, corpus.doc_ids, strict=True)]
