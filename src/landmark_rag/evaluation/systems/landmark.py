"""``landmark``: the package's own pipeline, as a user gets it.

The model is loaded by name with whatever configuration it ships, and hits are expanded
the way the package expands them for that model: the expansion its ``landmark_config.json``
names (Front-3, the paper's default, when it names none), both taken from the
:class:`~landmark_rag.LandmarkIndex` a user would open; or the one named by ``expansion``
(``landmark-rag eval --expansion front,surround,adaptive``: one system per strategy over
the same encoding). Adaptive is query-dependent: it grows from the hit while neighbours
score within ``margin`` of the hit for THIS question (``passage_for``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

import numpy as np

from landmark_rag.evaluation.systems.base import DenseSystem, Workspace
from landmark_rag.evaluation.systems.expansion import strategy_passage
from landmark_rag.expand import Adaptive, choose_strategy
from landmark_rag.expand.strategies import StrategyName

if TYPE_CHECKING:
    from landmark_rag.encode.encoder import LandmarkEncoder


class LandmarkSystem(DenseSystem):
    name: ClassVar[str] = "landmark"
    description: ClassVar[str] = "the package's model, pooling and expansion"
    sentence_units: ClassVar[bool] = True

    def __init__(self, expansion: str | None = None) -> None:
        """``expansion``: ``front``/``surround``/``adaptive`` instead of the model's own
        (that strategy's parameters from the model config when it names the same one,
        else the strategy's defaults: Front-3, Surround 1/1, Adaptive <= 256 tokens)."""
        super().__init__()
        # a name from the command line: choose_strategy refuses an unknown one here, not mid-run
        self.expansion = cast("StrategyName | None", expansion)
        if self.expansion is not None:
            choose_strategy(self.expansion)
            self.name = f"landmark-{expansion}"  # type: ignore[misc]  # one report row per strategy

    def make_encoder(self, workspace: Workspace) -> LandmarkEncoder:
        encoder = workspace.landmark_encoder()
        index = workspace.landmark_index(encoder)
        self.strategy = index.strategy
        if self.expansion is not None and self.expansion != encoder.config.expansion:
            self.strategy = index.resolve_strategy(self.expansion)  # that strategy's defaults
        return encoder

    def passage(self, unit: int) -> tuple[int, int, int]:
        assert self.corpus is not None
        return strategy_passage(self.corpus, unit, self.strategy)

    def passage_for(self, unit: int, scores: np.ndarray) -> tuple[int, int, int]:
        """The passage for hit ``unit`` of a question whose scores over all units are
        ``scores`` (Adaptive reads its neighbours' scores; other strategies ignore them)."""
        if not isinstance(self.strategy, Adaptive):
            return self.passage(unit)
        corpus, encoder = self.corpus, self.encoder
        assert corpus is not None and encoder is not None, "build() first"
        doc = int(corpus.sent_doc[unit])
        first, stop = int(corpus.doc_first[doc]), int(corpus.doc_first[doc + 1])
        local = unit - first
        cand = self.strategy.candidates(local)
        near = range(max(0, cand.start), min(stop - first, cand.stop))
        texts = {j: corpus.sentence_text(first + j) for j in near}
        # inner products are the scores: a 1-d "query" of 1 against 1-d "vectors" of them
        vectors = {j: np.asarray([scores[first + j]], dtype=np.float32) for j in near}
        lo, hi = self.strategy.choose(
            local, float(scores[unit]), np.ones(1, dtype=np.float32), texts, vectors, encoder.count_tokens
        )
        return corpus.sentence_span(first + lo, first + hi)
