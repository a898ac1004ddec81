"""``landmark``: the package's own pipeline, as a user gets it.

The model is loaded by name with whatever configuration it ships, and hits are expanded the way the package expands them for that model: the
expansion its ``landmark_config.json`` names (Front-3, the paper's default, when it names
none), both taken from the :class:`~landmark_rag.LandmarkIndex` a user would open.
"""

from __future__ import annotations

from typing import Any, ClassVar

from landmark_rag.evaluation.systems.base import DenseSystem, Workspace
from landmark_rag.evaluation.systems.expansion import strategy_passage


class LandmarkSystem(DenseSystem):
    name: ClassVar[str] = "landmark"
    description: ClassVar[str] = "the package's model, pooling and expansion"
    sentence_units: ClassVar[bool] = True

    def make_encoder(self, workspace: Workspace) -> Any:
        index = workspace.landmark_index()
        self.strategy = index.strategy
        return index.encoder

    def passage(self, unit: int) -> tuple[int, int, int]:
        assert self.corpus is not None
        return strategy_passage(self.corpus, unit, self.strategy)
