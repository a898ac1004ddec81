"""``landmark``: the package's own pipeline, as a user gets it.

The model is ``LandmarkEncoder.from_pretrained(model)`` with whatever configuration it
ships (a trained landmark model pools at the LMK after each sentence, in context); hits
are expanded with the package's default expansion (``landmark_rag.expand``: Front-k,
k=3, the hit and the two sentences before it): position-aware training makes a hit the
*end* of the useful span, so the passage reaches back.
"""

from __future__ import annotations

from typing import Any, ClassVar

from landmark_rag.evaluation.systems.base import DenseSystem, Workspace
from landmark_rag.evaluation.systems.expansion import front_passage


class LandmarkSystem(DenseSystem):
    name: ClassVar[str] = "landmark"
    description: ClassVar[str] = "the package's model and pooling, Front-3 expansion"
    sentence_units: ClassVar[bool] = True

    def make_encoder(self, workspace: Workspace) -> Any:
        return workspace.landmark_encoder()

    def passage(self, unit: int) -> tuple[int, int, int]:
        assert self.corpus is not None
        return front_passage(self.corpus, unit)
