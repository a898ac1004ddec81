"""``sentence``: every sentence embedded alone (the paper's sentence baseline).

Context-free vectors, so the hit is expanded symmetrically with the previous and the
next sentence, as in the paper's baseline setting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from landmark_rag.evaluation.systems.base import DenseSystem, SentenceWindowMixin, Workspace

if TYPE_CHECKING:
    from landmark_rag.encode.encoder import LandmarkEncoder


class SentenceSystem(SentenceWindowMixin, DenseSystem):
    name: ClassVar[str] = "sentence"
    description: ClassVar[str] = "each sentence embedded alone, hit +/- 1 sentence"
    sentence_units: ClassVar[bool] = True
    before: ClassVar[int] = 1
    after: ClassVar[int] = 1

    def make_encoder(self, workspace: Workspace) -> LandmarkEncoder:
        return workspace.standalone_encoder()
