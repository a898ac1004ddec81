"""Sentence hits -> passages that fill a token budget (expansion when the caller counts tokens).

Without a budget a search returns ``k`` passages, each a hit's window, and windows that
touch merge (``expand.expand``). Under a budget that rule reads badly: a window merged with
a lower hit's window is paid for in full at the better hit's rank, so the budget goes to
the neighbours of lower hits before the windows of the second and third hits. Here a
budget is filled the way a reader would want it filled:

1. hits are taken best first, and each adds its window's sentences not read yet, the hit
   itself first, then the nearest ones (so a window cut by the budget keeps its hit); a
   sentence too long for what is left of the budget is passed over (with the sentences
   beyond it), and a shorter one further down the ranking may still fill the rest;
2. the best hit's window is first grown to the strategy's lead share of the budget
   (``Evidence``: the evidence around the place the search is most sure of is read as one
   passage, ``expand.grow``);
3. with ``Evidence.bridge``, a window joins a passage already read when the sentences
   between them are at most ``bridge``, filling the gap;
4. the sentences read form contiguous passages, each ranked by its best hit; their tokens
   add up to at most the budget, except that a first hit sentence longer than the whole
   budget is returned alone (a passage is never less than one sentence).

Pure over sentences already read: :func:`budget_requests` says which to read.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Literal

import numpy as np

from landmark_rag.expand.expand import hit_cosine, make_passage
from landmark_rag.expand.grow import grow_range, growth_reach, lead_target, lean
from landmark_rag.expand.headings import is_heading_line
from landmark_rag.expand.strategies import Strategy, join_limits
from landmark_rag.types import Hit, Passage, Sentence


def check_max_tokens(max_tokens: object) -> int:
    """``max_tokens`` as a whole number of at least 1, else a ``ValueError`` that says so
    (a bool or a float is refused: ``True`` or ``512.5`` tokens is a caller's mistake)."""
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int | np.integer) or max_tokens < 1:
        raise ValueError(f"max_tokens must be a whole number of at least 1, got {max_tokens!r}")
    return int(max_tokens)


def budget_requests(
    hits: Sequence[Hit], strategy: Strategy, max_tokens: int
) -> dict[str, set[int]]:
    """The sentence indices, by document, that :func:`fill_budget` may read: each hit's
    candidates, and around the best hit as far as its growth to the lead share may reach."""
    wanted: dict[str, set[int]] = defaultdict(set)
    for h in hits:
        d, z = _doc(h), h.sentence.index
        wanted[d].update(i for i in strategy.candidates(z) if i >= 0)
        wanted[d].add(z)
    content = [h for h in hits if not is_heading_line(h.sentence)]
    target = lead_target(strategy, max_tokens)
    if content and target > 0:
        z = content[0].sentence.index
        reach = growth_reach(target)
        cand = strategy.candidates(z)
        wanted[_doc(content[0])].update(range(max(0, cand.start - reach), cand.stop + reach))
    return dict(wanted)


@dataclass
class _Run:
    """Sentences read of one document, contiguous, with the hits inside them."""

    lo: int
    hi: int
    hits: list[Hit] = field(default_factory=list)


def fill_budget(
    hits: Sequence[Hit],
    sents: Mapping[str, Mapping[int, Sentence]],
    strategy: Strategy,
    max_tokens: int,
    count_tokens: Callable[[str], int],
    *,
    vectors: Mapping[str, Mapping[int, np.ndarray]] | None = None,
    query_vector: np.ndarray | None = None,
    max_passages: int | None = None,
    order: Literal["score", "document"] = "score",
) -> tuple[list[Passage], bool]:
    """Passages for ``hits`` (best first) within ``max_tokens`` (module docstring), and
    whether the budget is full (``False``: more hits could still add to it).

    ``sents`` holds the sentences read by document (:func:`budget_requests`); ``vectors``
    and ``query_vector`` are needed by ``Adaptive`` only. ``max_passages`` caps the number of
    passages: a hit that would start one more is skipped, one that joins a passage read grows
    it.
    """
    budget = check_max_tokens(max_tokens)
    bridge, cap = join_limits(strategy)
    w_before, w_after = lean(strategy)
    costs: dict[tuple[str, int], int] = {}
    docs: dict[str, dict[int, Sentence]] = {}  # the sentences read, and every hit's own

    def cost(d: str, i: int) -> int:
        # with the whitespace before it: a byte-level BPE tokenizer gives the blank line
        # between two sentences tokens of its own, so sentences counted bare would add up to
        # less than the passage that joins them (a passage's first sentence is counted with
        # its whitespace too, which can only keep the total lower)
        if (d, i) not in costs:
            s = docs[d][i]
            costs[(d, i)] = count_tokens(s.space_before + s.text)
        return costs[(d, i)]

    runs: dict[str, list[_Run]] = defaultdict(list)
    read: dict[str, set[int]] = defaultdict(set)
    used = 0
    full = False
    lead_pending = lead_target(strategy, budget)
    for h in hits:
        if is_heading_line(h.sentence):
            continue
        d, z = _doc(h), h.sentence.index
        doc = docs.setdefault(d, dict(sents.get(d, {})))
        doc.setdefault(z, h.sentence)
        lo, hi = strategy.span(z, h.score, doc, (vectors or {}).get(d, {}), query_vector, count_tokens)
        lo, hi = _trim_headings(lo, hi, z, doc)
        if lead_pending:
            lo, hi = grow_range(z, lo, hi, doc, lead_pending, partial(cost, d), (w_before, w_after))
            lead_pending = 0
        lo, hi = _bridged(lo, hi, runs[d], doc, bridge, cap, partial(cost, d))
        if max_passages is not None and _count_after(runs, d, z) > max_passages:
            continue
        if z in read[d] and all(i in read[d] for i in range(lo, hi + 1)):
            _run_of(runs[d], z).hits.append(h)
            continue
        # the hit first, then the nearest sentences (weighted as the window leans), so a
        # window the budget cuts keeps its hit and stays one contiguous run
        steps = sorted(
            (i for i in range(lo, hi + 1) if i not in read[d]),
            key=lambda i: ((z - i) / w_before if i < z else (i - z) / w_after, i),
        )
        for i in steps:
            if i != z and not _next_to(read[d], i, z):
                continue  # the gap to the hit is not read: taking it would split the run
            c = cost(d, i)
            if used + c > budget and not (used == 0 and i == z):
                # what is left of the budget is too small for this sentence; a shorter one
                # on the other side, or a lower hit's, may still fit, so reading goes on
                full = True
                continue
            read[d].add(i)
            used += c
        if z in read[d]:
            _rebuild(runs, d, read[d], h)
        if used >= budget:
            full = True
            break
    rank = {id(h): n for n, h in enumerate(hits)}
    ranked = [(min(rank[id(h)] for h in r.hits), _passage(d, r, docs[d])) for d, rs in runs.items() for r in rs]
    if order == "document":
        ranked.sort(key=lambda t: (t[1].doc_id, t[1].start))
    else:  # each passage at its best hit's rank
        ranked.sort(key=lambda t: t[0])
    return [p for _, p in ranked], full


def _doc(hit: Hit) -> str:
    if hit.sentence.doc_id is None:
        raise ValueError("hits need sentences with a doc_id")
    return hit.sentence.doc_id


def _trim_headings(lo: int, hi: int, z: int, doc: Mapping[int, Sentence]) -> tuple[int, int]:
    while lo < z and is_heading_line(doc[lo]):
        lo += 1
    while hi > z and is_heading_line(doc[hi]):
        hi -= 1
    return lo, hi


def _bridged(
    lo: int, hi: int, runs: list[_Run], doc: Mapping[int, Sentence], bridge: int, cap: int | None,
    cost: Callable[[int], int],
) -> tuple[int, int]:
    """``lo..hi`` extended over a gap of at most ``bridge`` sentences to a run read before."""
    if bridge <= 0:
        return lo, hi
    for r in runs:
        if r.hi < lo - 1 and lo - r.hi - 1 <= bridge:
            new = (r.hi + 1, hi)
        elif r.lo > hi + 1 and r.lo - hi - 1 <= bridge:
            new = (lo, r.lo - 1)
        else:
            continue
        gap = range(min(new[0], lo), max(new[1], hi) + 1)
        if any(i not in doc or is_heading_line(doc[i]) for i in gap):
            continue
        whole = range(min(r.lo, gap.start), max(r.hi, gap.stop - 1) + 1)
        if cap is None or sum(cost(i) for i in whole) <= cap:
            lo, hi = gap.start, gap.stop - 1
    return lo, hi


def _next_to(read: set[int], i: int, z: int) -> bool:
    """Whether ``i`` joins the run that holds ``z`` (every sentence between them is read)."""
    step = 1 if i < z else -1
    return all(j in read for j in range(i + step, z + step, step) if j != z) and z in read


def _run_of(runs: list[_Run], z: int) -> _Run:
    return next(r for r in runs if r.lo <= z <= r.hi)


def _count_after(runs: Mapping[str, list[_Run]], d: str, z: int) -> int:
    """How many passages there would be if hit ``z`` of ``d`` started or joined one (its
    window may touch a run, which it then joins)."""
    total = sum(len(rs) for rs in runs.values())
    joins = any(r.lo - 1 <= z <= r.hi + 1 for r in runs.get(d, []))
    return total if joins else total + 1


def _rebuild(runs: dict[str, list[_Run]], d: str, read: set[int], hit: Hit) -> None:
    """Regroup ``d``'s read sentences into contiguous runs, keeping every run's hits."""
    hits = [h for r in runs[d] for h in r.hits] + [hit]
    out: list[_Run] = []
    for i in sorted(read):
        if out and i == out[-1].hi + 1:
            out[-1].hi = i
        else:
            out.append(_Run(i, i))
    for h in hits:
        _run_of(out, h.sentence.index).hits.append(h)
    runs[d] = out


def _passage(doc_id: str, run: _Run, sents: Mapping[int, Sentence]) -> Passage:
    best = max(run.hits, key=lambda h: h.score)
    cosines = [c for c in (hit_cosine(h) for h in run.hits) if c is not None]
    return make_passage(
        doc_id, run.lo, run.hi, sents, (h.sentence.index for h in run.hits), best.score, best,
        max(cosines) if cosines else None,
    )
