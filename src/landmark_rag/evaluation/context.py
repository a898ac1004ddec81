"""Assemble the context a reader would get from ranked passages, cut at a token budget.

This is what makes systems with different units comparable: whatever a system returns
(sentences, windows, chunks), its passages are laid out in rank order, text already
shown is not paid for twice, and the result is cut at ``B`` tokens of one tokenizer.

A passage grown from a hit sentence (every sentence-unit system's) records where that
sentence ends; if it is the passage that crosses the budget, the tokens kept are the ones
that end at the hit, not the passage's first ones. A Front-k passage ends with its hit,
and cutting it from the end would drop the very sentence that was retrieved while keeping
its context; a window around the hit keeps the hit and what precedes it, the side a
landmark vector reads. Chunks (no hit) keep their first tokens.

Token counts come from a one-off tokenisation of each whole document with offsets
(:class:`TokenIndex`), so the budget arithmetic per question is a few binary searches
instead of re-tokenising passages thousands of times.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np


class Passage(NamedTuple):
    """A ranked passage: characters ``[start, end)`` of document ``doc``, and, for a passage
    grown from a hit sentence, the offset where that sentence ends (``None``: no hit)."""

    doc: int
    start: int
    end: int
    hit_end: int | None = None


@dataclass(slots=True)
class TokenIndex:
    """Character offsets of a document's tokens (no special tokens), sorted by start.

    A span ``[a, b)`` costs the number of tokens that *start* inside it, so the costs of
    adjacent spans add up to the cost of their union, and whitespace costs nothing.
    """

    starts: np.ndarray  # int64 [n_tokens]
    ends: np.ndarray  # int64 [n_tokens]
    length: int  # characters in the document

    @classmethod
    def from_offsets(cls, offsets: Sequence[tuple[int, int]], length: int) -> TokenIndex:
        pairs = sorted((int(s), int(e)) for s, e in offsets if e > s)
        arr = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        return cls(arr[:, 0].copy(), arr[:, 1].copy(), length)

    @classmethod
    def build(cls, text: str, tokenizer) -> TokenIndex:  # tokenizer: any HF fast tokenizer
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        offsets = [(s, e) for s, e in enc["offset_mapping"]]
        # byte-level BPE offsets may start on the space before a word; count the token at
        # the word so that a span starting at the word pays for it
        fixed = []
        for s, e in offsets:
            while s < e - 1 and text[s].isspace():
                s += 1
            fixed.append((s, e))
        return cls.from_offsets(fixed, len(text))

    def count(self, start: int, end: int) -> int:
        """Tokens starting in ``[start, end)``."""
        if end <= start:
            return 0
        return bisect_left(self.starts, end) - bisect_left(self.starts, start)

    def cut(self, start: int, n_tokens: int) -> int:
        """End offset of the first ``n_tokens`` tokens that start at or after ``start``."""
        if n_tokens <= 0:
            return start
        i = bisect_left(self.starts, start) + n_tokens - 1
        if i >= len(self.ends):
            return self.length
        return int(self.ends[i])

    def keep(self, start: int, end: int, n_tokens: int, toward: int | None = None) -> tuple[int, int]:
        """The span of ``n_tokens`` of the tokens starting in ``[start, end)``: those that end
        at offset ``toward`` (as many as precede it, the rest after it), or the first ones
        when ``toward`` is ``None`` or at or before ``start``."""
        if n_tokens <= 0:
            return start, start
        first = bisect_left(self.starts, start)
        stop = bisect_left(self.starts, end)
        before = first if toward is None else min(max(bisect_left(self.starts, toward), first), stop)
        lo = max(first, before - n_tokens)
        if lo == first:
            return start, min(self.cut(start, n_tokens), end)
        return int(self.starts[lo]), min(int(self.ends[lo + n_tokens - 1]), end)


@dataclass(slots=True)
class Context:
    """The assembled context: per document, disjoint covered character spans, in order."""

    spans: dict[int, list[tuple[int, int]]]
    tokens: int
    full: bool  # True when the budget was reached (more passages would not have fitted)

    def texts(self, documents: Sequence[str]) -> list[str]:
        """The covered text as contiguous pieces: spans separated only by whitespace are
        joined, so an answer that straddles two adjacent passages is still found."""
        pieces: list[str] = []
        for doc, spans in self.spans.items():
            text = documents[doc]
            merged: list[list[int]] = []
            for s, e in sorted(spans):
                if merged and not text[merged[-1][1] : s].strip():
                    merged[-1][1] = max(merged[-1][1], e)
                else:
                    merged.append([s, e])
            pieces.extend(text[s:e] for s, e in merged)
        return pieces


def _subtract(span: tuple[int, int], covered: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Parts of ``span`` not inside any of the sorted, disjoint ``covered`` spans."""
    s, e = span
    out = []
    i = bisect_right(covered, (s, float("inf"))) - 1
    i = max(i, 0)
    cur = s
    while i < len(covered) and covered[i][0] < e:
        cs, ce = covered[i]
        if ce > cur:
            if cs > cur:
                out.append((cur, min(cs, e)))
            cur = max(cur, ce)
        i += 1
    if cur < e:
        out.append((cur, e))
    return out


def _insert(covered: list[tuple[int, int]], span: tuple[int, int]) -> None:
    i = bisect_left(covered, span)
    covered.insert(i, span)


def assemble_context(
    passages: Iterable[Passage | tuple[int, int, int]], budget: int, token_indexes: Sequence[TokenIndex]
) -> Context:
    """Lay out passages (:class:`Passage`, or plain ``(doc, start, end)``) in rank order
    until ``budget`` tokens.

    A passage that overlaps text already in the context adds only its new part(s); the
    passage that crosses the budget is cut at token boundaries, keeping the tokens that end
    at its hit when it has one (:meth:`TokenIndex.keep`), else its first ones. ``passages``
    may be a lazy iterator: it is consumed only as far as needed.
    """
    spans: dict[int, list[tuple[int, int]]] = {}
    used = 0
    if budget <= 0:
        return Context(spans, 0, True)
    for passage in passages:
        doc, start, end = passage[0], passage[1], passage[2]
        hit_end = passage.hit_end if isinstance(passage, Passage) else None
        covered = spans.setdefault(doc, [])
        index = token_indexes[doc]
        for part in _subtract((start, end), covered):
            cost = index.count(*part)
            if cost == 0:
                continue
            if used + cost > budget:
                kept = index.keep(part[0], part[1], budget - used, hit_end)
                if kept[1] > kept[0]:
                    _insert(covered, kept)
                return Context({d: s for d, s in spans.items() if s}, budget, True)
            _insert(covered, part)
            used += cost
            if used == budget:
                return Context({d: s for d, s in spans.items() if s}, used, True)
    return Context({d: s for d, s in spans.items() if s}, used, False)


def contexts_by_budget(
    budgets: Sequence[int],
    token_indexes: Sequence[TokenIndex],
    *,
    ranking: Iterable[Passage | tuple[int, int, int]] | None = None,
    per_budget: Callable[[int], Iterable[Passage | tuple[int, int, int]]] | None = None,
) -> dict[int, Context]:
    """The context each of ``budgets`` (ascending) reads: from one ``ranking`` whatever the
    budget (the largest budget reads the longest prefix of it, lazily, and the smaller ones
    replay that prefix), or from ``per_budget(budget)`` (a strategy that grows the best
    passage to a share of the budget forms different passages for each). Give one of them.
    """
    if (ranking is None) == (per_budget is None):
        raise ValueError("give ranking or per_budget")
    if per_budget is not None:
        return {b: assemble_context(per_budget(b), b, token_indexes) for b in budgets}
    assert ranking is not None
    consumed: list[Passage | tuple[int, int, int]] = []

    def recorded() -> Iterator[Passage | tuple[int, int, int]]:
        for p in ranking:
            consumed.append(p)
            yield p

    out = {budgets[-1]: assemble_context(recorded(), budgets[-1], token_indexes)}
    for b in budgets[:-1]:
        out[b] = assemble_context(consumed, b, token_indexes)
    return out
