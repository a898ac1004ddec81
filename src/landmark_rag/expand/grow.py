"""Grow the best passage of a budgeted search into the evidence around its hit.

Under a token budget, the reader gets the passages in rank order until the budget is spent.
With one window per hit, a budget fills with short fragments of several places, and when the
evidence runs over many sentences only a fragment of it is read, while the sentences next
to the best hit (the place the search is most sure of) are left out for a lower-ranked
fragment elsewhere. Growing the best passage first to a share of the budget reads the
evidence around the best hit as one contiguous passage, and leaves the rest of the budget to
the next places in rank order, so a budget holds fewer, longer passages without giving up
the second and third guesses (docs/evaluation.md, the long-evidence benchmark).

The growth is symmetric about the hits for a window that is (``Surround``), and leans
backwards for one that does (``Front``: the hit marks the end of the evidence), in the
proportion of the strategy's own window. Pure functions over sentences already read; the
budget is filled in ``expand.budget``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from landmark_rag.expand.headings import is_heading_line
from landmark_rag.expand.strategies import Adaptive, Evidence, Front, Strategy, Surround
from landmark_rag.types import Sentence


def lean(strategy: Strategy) -> tuple[int, int]:
    """``(before, after)`` weights of growth: the strategy's window plus one each side, so
    Surround 1/1 grows evenly and Front-3 (``2, 0``) three sentences back for one forward."""
    if isinstance(strategy, Front):
        return strategy.k, 1
    if isinstance(strategy, Surround | Evidence):
        return strategy.before + 1, strategy.after + 1
    if isinstance(strategy, Adaptive):
        return strategy.max_before + 1, strategy.max_after + 1
    return 1, 1


def lead_target(strategy: Strategy, budget: int) -> int:
    """The tokens the best passage grows to under ``budget``: the strategy's lead share of
    it, at most the strategy's passage limit (``Evidence.max_tokens``), so a large budget
    still goes mostly to further places rather than to one ever longer passage."""
    if not isinstance(strategy, Evidence):
        return 0
    return min(int(strategy.lead * budget), strategy.max_tokens)


def growth_reach(target_tokens: int) -> int:
    """How many sentences either side of a passage may be needed to grow it by
    ``target_tokens``: a sentence is rarely under four tokens, so this many is enough to
    read in one request."""
    return max(1, target_tokens // 4)


def grow_range(
    hit: int,
    lo: int,
    hi: int,
    sents: Mapping[int, Sentence],
    target_tokens: int,
    cost: Callable[[int], int],
    weights: tuple[int, int] = (1, 1),
) -> tuple[int, int]:
    """The sentence range ``lo..hi`` around ``hit`` grown, a sentence at a time, to at least
    ``target_tokens`` (``cost(i)``: sentence ``i``'s tokens).

    The side that has grown less relative to its weight goes next (``lean``); a sentence not
    in ``sents`` (not read, or past the document's edge) or a heading line (another section
    starts there) stops growth on that side.
    """
    size = sum(cost(i) for i in range(lo, hi + 1))
    w_before, w_after = weights

    def ok(i: int) -> bool:
        return i in sents and not is_heading_line(sents[i])

    while size < target_tokens:
        back, fwd = ok(lo - 1), ok(hi + 1)
        if not back and not fwd:
            break
        j = lo - 1 if back and (not fwd or (hit - lo) / w_before <= (hi - hit) / w_after) else hi + 1
        size += cost(j)
        lo, hi = min(lo, j), max(hi, j)
    return lo, hi
