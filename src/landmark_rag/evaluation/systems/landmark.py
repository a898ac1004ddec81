"""``landmark``: the package's own pipeline, as a user gets it.

The model is loaded by name with whatever configuration it ships, and hits are expanded
the way the package expands them for that model: the expansion its ``landmark_config.json``
names (Front-3, the paper's default, when it names none), both taken from the
:class:`~landmark_rag.LandmarkIndex` a user would open; or the one named by ``expansion``
(``landmark-rag eval --expansion front,surround,adaptive``: one system per strategy over
the same encoding). Adaptive is query-dependent: it grows from the hit while neighbours
score within ``margin`` of the hit for THIS question (``passage_for``). Evidence depends on
the question and on the budget: its passages for one budget come from the package's own
expansion (``budgeted``), exactly as a budgeted search forms them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, ClassVar, cast

import numpy as np

from landmark_rag.evaluation.context import Passage as Read
from landmark_rag.evaluation.metrics import rank_order
from landmark_rag.evaluation.systems.base import DenseSystem, Workspace
from landmark_rag.evaluation.systems.expansion import strategy_passage
from landmark_rag.expand import Adaptive, Evidence, choose_strategy
from landmark_rag.expand.budget import budget_requests, fill_budget
from landmark_rag.expand.strategies import StrategyName
from landmark_rag.types import Hit, Sentence

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
        self._sentences: dict[int, list[Sentence]] = {}
        self._tokens: dict[str, int] = {}
        # a name from the command line: choose_strategy refuses an unknown one here, not mid-run
        self.expansion = cast("StrategyName | None", expansion)
        if self.expansion is not None:
            choose_strategy(self.expansion)
            self.name = f"{type(self).name}-{expansion}"  # type: ignore[misc]  # one report row per strategy

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

    @property
    def budget_dependent(self) -> bool:
        """Whether the passages read depend on the budget (``Evidence`` grows its best passage
        to a share of it), so each budget is read from its own search (:meth:`budgeted`)."""
        return isinstance(getattr(self, "strategy", None), Evidence)

    def budgeted(self, units: np.ndarray, scores: np.ndarray, budget: int) -> Iterator[Read] | None:
        """The passages a budgeted search over ``units`` (global sentence ids: one document's
        for a search within it, or all) returns, in rank order, for a strategy whose passages
        depend on the budget (``Evidence``); ``None`` for the others (their passages are one
        per ranked unit, whatever the budget).

        As ``LandmarkIndex.search(max_tokens=budget)`` does: the best 8, 16, 32, ... hits
        are expanded until their passages fill the budget, then the best passage is grown
        to the strategy's lead share of it.
        """
        if not self.budget_dependent:
            return None
        corpus = self.corpus
        assert corpus is not None, "build() first"
        units = np.asarray(units, dtype=np.int64)
        if not len(units):
            return iter(())
        count = self._count
        n = 8
        while True:
            top = [int(units[int(i)]) for i in rank_order(scores[units], top=min(n, len(units)))]
            hits = [Hit(self._sentence(u), float(scores[u])) for u in top]
            wanted = budget_requests(hits, self.strategy, budget)
            sents = {d: {i: self._doc_sentences(int(d))[i] for i in idx if i < len(self._doc_sentences(int(d)))}
                     for d, idx in wanted.items()}
            passages, full = fill_budget(hits, sents, self.strategy, budget, count)
            if full or n >= len(units):
                break
            n *= 2
        out = []
        for p in passages:
            first = int(corpus.doc_first[int(p.doc_id)])
            # a cut at the budget keeps the text that ends at the passage's best hit
            best = max((first + i for i in p.hit_indices), key=lambda u: (float(scores[u]), -u))
            out.append(Read(int(p.doc_id), p.start, p.end, int(corpus.sent_end[best])))
        return iter(out)

    def _sentence(self, unit: int) -> Sentence:
        assert self.corpus is not None
        doc = int(self.corpus.sent_doc[unit])
        return self._doc_sentences(doc)[unit - int(self.corpus.doc_first[doc])]

    def _doc_sentences(self, doc: int) -> list[Sentence]:
        if doc not in self._sentences:
            assert self.corpus is not None
            self._sentences[doc] = [s.with_doc_id(str(doc)) for s in self.corpus.sentences[doc]]
        return self._sentences[doc]

    def _count(self, text: str) -> int:
        if text not in self._tokens:  # passages repeat across budgets and reads: count once
            assert self.encoder is not None
            self._tokens[text] = self.encoder.count_tokens(text)
        return self._tokens[text]

