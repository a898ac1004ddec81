"""``late-chunking``: sentence spans mean-pooled in context (the jina recipe).

The whole document runs through the encoder in long windows and each sentence's vector is
the mean of its own token states, so it carries its surroundings without any training;
``pooling="mean"`` of the encoder is exactly this. Expansion as for ``sentence`` (+/- 1),
so the comparison isolates in-context pooling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from landmark_rag.evaluation.systems.base import DenseSystem, SentenceWindowMixin, Workspace

if TYPE_CHECKING:
    from landmark_rag.encode.encoder import LandmarkEncoder


class LateChunkingSystem(SentenceWindowMixin, DenseSystem):
    name: ClassVar[str] = "late-chunking"
    description: ClassVar[str] = "sentences mean-pooled in context over long windows, hit +/- 1"
    sentence_units: ClassVar[bool] = True
    before: ClassVar[int] = 1
    after: ClassVar[int] = 1

    def make_encoder(self, workspace: Workspace) -> LandmarkEncoder:
        return workspace.base_encoder(pooling="mean", query_pooling="mean")
