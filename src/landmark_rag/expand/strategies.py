"""Boundary strategies: which sentences around a hit form the passage.

Position-aware training makes a hit mark the *end* of the useful span (the information
boundary), so the paper's default looks backwards (``Front``). A strategy maps a hit to a
sentence range (``span``, given the sentences a store supplied); it never reads stores
itself, which keeps it testable and shared by every adapter.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import ClassVar, Literal, get_args

import numpy as np

from landmark_rag.types import Sentence

StrategyName = Literal["front", "surround", "adaptive", "evidence"]


class _Window:
    """A fixed window around the hit: the span is every candidate sentence the source
    supplied that is contiguous with the hit (none past a document's start or end)."""

    #: Whether ``span`` needs the stored sentence vectors and the query vector.
    needs_vectors: ClassVar[bool] = False

    def candidates(self, hit: int) -> range:
        raise NotImplementedError

    def window(self, hit: int) -> range:
        """The sentences a hit takes on its own (its candidates, unless a strategy reads
        further than it takes)."""
        return self.candidates(hit)

    def span(
        self,
        hit: int,
        score: float,
        sents: Mapping[int, Sentence],
        vectors: Mapping[int, np.ndarray],
        query: np.ndarray | None,
        count_tokens: Callable[[str], int],
    ) -> tuple[int, int]:
        """The inclusive sentence range ``(lo, hi)`` of the passage around ``hit``."""
        rng = self.window(hit)
        lo = hi = hit
        while lo - 1 >= rng.start and lo - 1 in sents:
            lo -= 1
        while hi + 1 < rng.stop and hi + 1 in sents:
            hi += 1
        return lo, hi


@dataclass(frozen=True)
class Front(_Window):
    """The hit and its ``k - 1`` predecessors (the paper's Front-k, k=3)."""

    k: int = 3

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError("Front.k must be >= 1")

    def candidates(self, hit: int) -> range:
        return range(hit - self.k + 1, hit + 1)


@dataclass(frozen=True)
class Surround(_Window):
    """``before`` sentences before and ``after`` after the hit (the sentence-window style)."""

    before: int = 1
    after: int = 1

    def __post_init__(self) -> None:
        if self.before < 0 or self.after < 0:
            raise ValueError("Surround.before/after must be >= 0")

    def candidates(self, hit: int) -> range:
        return range(hit - self.before, hit + self.after + 1)


@dataclass(frozen=True)
class Adaptive:
    """Grow from the hit while neighbours stay relevant to the query, within a token budget.

    Backwards first (the hit ends the span), up to ``max_before`` sentences, then forwards
    up to ``max_after``. A neighbour is relevant when its stored vector scores at least
    ``hit score - margin`` against the query; the first ``min_before`` predecessors are
    taken regardless (a bare boundary sentence rarely answers alone). Growth stops at the
    first irrelevant neighbour in each direction or when ``max_tokens`` would be exceeded.
    """

    max_tokens: int = 256
    margin: float = 0.15
    min_before: int = 1
    max_before: int = 8
    max_after: int = 2

    needs_vectors: ClassVar[bool] = True

    def candidates(self, hit: int) -> range:
        return range(hit - self.max_before, hit + self.max_after + 1)

    def span(
        self,
        hit: int,
        score: float,
        sents: Mapping[int, Sentence],
        vectors: Mapping[int, np.ndarray],
        query: np.ndarray | None,
        count_tokens: Callable[[str], int],
    ) -> tuple[int, int]:
        """The inclusive sentence range ``(lo, hi)`` of the passage around ``hit`` (:meth:`choose`)."""
        if query is None:
            raise ValueError("the adaptive strategy needs the query vector")
        q = np.asarray(query)
        # the hit's own cosine is the reference: equal to a vector hit's score, and the
        # only meaningful one for a fused or lexical hit (whose score is RRF or BM25)
        ref = float(np.asarray(vectors[hit]) @ q) if hit in vectors else score
        texts = {i: s.text for i, s in sents.items()}
        return self.choose(hit, ref, q, texts, vectors, count_tokens)

    def choose(
        self,
        hit: int,
        hit_score: float,
        query: np.ndarray,
        texts: Mapping[int, str],
        vectors: Mapping[int, np.ndarray],
        count_tokens: Callable[[str], int],
    ) -> tuple[int, int]:
        """Return the inclusive range ``(lo, hi)`` for one hit."""
        used = count_tokens(texts[hit])
        lo = hi = hit
        threshold = hit_score - self.margin
        for step, j in enumerate(range(hit - 1, hit - self.max_before - 1, -1)):
            if j not in texts:
                break
            cost = count_tokens(texts[j])
            relevant = step < self.min_before or (j in vectors and float(vectors[j] @ query) >= threshold)
            if not relevant or used + cost > self.max_tokens:
                break
            used += cost
            lo = j
        for j in range(hit + 1, hit + self.max_after + 1):
            if j not in texts or j not in vectors:
                break
            cost = count_tokens(texts[j])
            if float(vectors[j] @ query) < threshold or used + cost > self.max_tokens:
                break
            used += cost
            hi = j
        return lo, hi


@dataclass(frozen=True)
class Evidence(_Window):
    """Follow the evidence: a window around each hit, and hits of one document that lie
    close together joined into one passage with the sentences between them.

    When evidence runs over many sentences, a search hits several of them; a fixed window
    around each returns them as separate fragments and leaves out the sentences between.
    Here each hit takes ``before`` sentences before it and ``after`` after it (Surround's
    window; ``before=k-1, after=0`` reads like the paper's Front-k), and two windows of one
    document at most ``bridge`` sentences apart become one passage, as long as the joined
    passage stays within ``max_tokens`` (overlapping or touching windows always join, as
    with every strategy). The hits themselves are the relevance signal: a sentence the
    ranking put among the hits read for this query belongs to the answer's region, so the
    passage grows exactly as far as the evidence the search found, and no score scale has
    to be compared across modes (cosine, BM25 and fused scores all work alike).

    Under a token budget (``search(..., max_tokens=N)``), the best passage is first grown
    around its hits to ``lead * N`` tokens (``expand.grow``): the place the search is most
    sure of is read as one contiguous passage, and the rest of the budget goes to the next
    places in rank order. ``lead=0`` fills a budget with the windows as they are.

    The defaults are the ones chosen on the long-evidence validation split
    (docs/experiments/long-evidence.md): joins are off (``bridge=0``), since once the best
    passage grows they cost found evidence and added none; a lead of 0.35 of the budget.
    """

    before: int = 1
    after: int = 1
    bridge: int = 0
    max_tokens: int = 384
    lead: float = 0.35

    def __post_init__(self) -> None:
        if self.before < 0 or self.after < 0 or self.bridge < 0:
            raise ValueError("Evidence.before/after/bridge must be >= 0")
        if self.max_tokens < 1:
            raise ValueError("Evidence.max_tokens must be >= 1")
        if not 0.0 <= self.lead <= 1.0:
            raise ValueError("Evidence.lead must be between 0 and 1")

    def window(self, hit: int) -> range:
        """The sentences a hit takes on its own (before any join)."""
        return range(hit - self.before, hit + self.after + 1)

    def candidates(self, hit: int) -> range:
        # the window plus the gap a join may fill: sentences between two joined windows are
        # within ``bridge`` of one of them, so one read per search supplies them
        return range(hit - self.before - self.bridge, hit + self.after + self.bridge + 1)


Strategy = Front | Surround | Adaptive | Evidence


STRATEGIES: dict[str, type[Front | Surround | Adaptive | Evidence]] = {
    "front": Front,
    "surround": Surround,
    "adaptive": Adaptive,
    "evidence": Evidence,
}


def join_limits(strategy: Strategy) -> tuple[int, int | None]:
    """``(bridge, max_tokens)``: how far apart two spans of a document may be and still
    join, and the size the joined passage must stay within (``None``: no limit, for the
    strategies that join only overlapping or touching spans)."""
    if isinstance(strategy, Evidence):
        return strategy.bridge, strategy.max_tokens
    return 0, None


def choose_strategy(
    # any str: names are matched case-insensitively and an unknown one is a ValueError,
    # so names read from configs and command lines need no narrowing to StrategyName first
    strategy: str | Strategy | None = None,
    params: Mapping[str, int | float] | None = None,
    model: object | None = None,
) -> Strategy:
    """The one rule for which expansion a search uses (the index, every adapter and the CLI
    call it, so a name, its parameters and a model's default mean the same everywhere).

    A ready ``Front``/``Surround``/``Adaptive``/``Evidence`` object is used as is (``params``
    replace its fields); a name (``front``, ``surround``, ``adaptive``, ``evidence``) is built with ``params``; ``None``
    takes the strategy the ``model``'s ``landmark_config.json`` names (a ``LandmarkConfig``,
    an encoder, or ``None`` for the paper's Front-3), with ``params``, when given, replacing
    that strategy's configured parameters.
    """
    if isinstance(strategy, Front | Surround | Adaptive | Evidence):
        return replace(strategy, **params) if params else strategy  # type: ignore[arg-type]
    if strategy is not None:
        return _build(strategy, params or {})
    config = getattr(model, "config", model)
    name: str = getattr(config, "expansion", None) or "front"
    return _build(name, params or getattr(config, "expansion_params", None) or {})


def strategy_name(name: str) -> StrategyName:
    """``name`` (in any case) as the strategy name it spells; an unknown name is a
    ``ValueError``, as it is for :func:`choose_strategy`."""
    key = str(name).lower()
    for known in get_args(StrategyName):
        if key == known:
            return known
    raise ValueError(f"unknown expansion strategy {name!r}; choose one of {sorted(STRATEGIES)}")


def _build(name: str, params: Mapping[str, int | float]) -> Strategy:
    """The strategy called ``name`` with ``params``; unknown names and parameters are errors
    (a typo would otherwise silently fall back to a default)."""
    cls = STRATEGIES[strategy_name(name)]
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(params) - known)
    if unknown:
        raise ValueError(f"the {cls.__name__.lower()} strategy takes {sorted(known)}, not {unknown}")
    return cls(**params)  # type: ignore[arg-type]


def approx_tokens(text: str) -> int:
    """Cheap token estimate (about four characters a token) when no tokenizer is given."""
    return max(1, (len(text) + 3) // 4)
