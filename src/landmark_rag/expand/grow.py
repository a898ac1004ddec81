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
proportion of the strategy's own window. Pure functions over sentences already read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from landmark_rag.expand.headings import is_heading_line
from landmark_rag.expand.strategies import Adaptive, Evidence, Front, Strategy, Surround
from landmark_rag.types import Passage, Sentence, passage_pages


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


def lead_share(strategy: Strategy) -> float:
    """The share of a budget the best passage grows to (``0``: no growth; only ``Evidence``
    grows, so the other strategies fill a budget exactly as they read without one)."""
    return strategy.lead if isinstance(strategy, Evidence) else 0.0


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


def grow_lead(
    passages: Sequence[Passage],
    sents: Mapping[int, Sentence],
    target_tokens: int,
    count_tokens: Callable[[str], int],
    weights: tuple[int, int] = (1, 1),
) -> list[Passage]:
    """``passages`` with the first grown, sentence by sentence, to at least ``target_tokens``.

    ``sents`` are the sentences of the first passage's document that may be added (a
    missing index, a heading line or the document's edge stops growth on that side). A
    passage of the same document that growth reaches is taken into the first (with its
    hits), so passages never overlap; the rest keep their order.
    """
    if not passages or target_tokens <= 0:
        return list(passages)
    first, rest = passages[0], list(passages[1:])
    lo, hi = first.first_index, first.last_index
    if any(i not in sents for i in range(lo, hi + 1)):
        return list(passages)  # the passage itself was not read: leave it as it is
    hits = set(first.hit_indices)
    size = sum(count_tokens(sents[i].text) for i in range(lo, hi + 1))
    others = {i: p for p in rest if p.doc_id == first.doc_id for i in range(p.first_index, p.last_index + 1)}
    w_before, w_after = weights
    taken: list[Passage] = []

    def can(i: int) -> bool:
        return i in sents and not is_heading_line(sents[i])

    def take(j: int) -> bool:
        """Take in the passage that holds sentence ``j`` (``False``: it was not read whole)."""
        nonlocal lo, hi, size
        absorbed = others[j]
        span = range(absorbed.first_index, absorbed.last_index + 1)
        if any(i not in sents for i in span):
            return False
        size += sum(count_tokens(sents[i].text) for i in span if not lo <= i <= hi)
        lo, hi = min(lo, span.start), max(hi, span.stop - 1)
        hits.update(absorbed.hit_indices)
        taken.append(absorbed)
        for i in span:
            others.pop(i, None)
        return True

    while size < target_tokens:
        back, fwd = can(lo - 1), can(hi + 1)
        if not back and not fwd:
            break
        # the side that has grown less, relative to its weight, goes next
        grown_before = (min(hits) - lo) / w_before
        grown_after = (hi - max(hits)) / w_after
        j = lo - 1 if back and (not fwd or grown_before <= grown_after) else hi + 1
        if j in others:  # the evidence reaches another passage: one passage now
            if not take(j):
                break
            continue
        size += count_tokens(sents[j].text)
        lo, hi = min(lo, j), max(hi, j)
    # a passage left just touching the grown one joins it, as touching windows always do
    for j in (lo - 1, hi + 1):
        if j in others:
            take(j)
    if (lo, hi) == (first.first_index, first.last_index):
        return list(passages)
    run = [sents[i] for i in range(lo, hi + 1)]
    text = run[0].text + "".join(s.space_before + s.text for s in run[1:])
    grown = Passage(
        doc_id=first.doc_id,
        start=run[0].start,
        end=run[-1].end,
        first_index=lo,
        last_index=hi,
        hit_indices=sorted(hits),
        score=first.score,
        text=text,
        metadata=first.metadata,
        pages=passage_pages(run),
        heading=run[0].heading,
        cosine=_best(first.cosine, *(p.cosine for p in taken)),
    )
    return [grown, *(p for p in rest if not any(p is t for t in taken))]


def _best(*values: float | None) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None
