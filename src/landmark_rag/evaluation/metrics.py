"""Retrieval metrics: gold-sentence ranks, recall@k, MRR@k and answer coverage.

Ties are scored pessimistically: the gold unit is placed after every non-gold unit with the
same score. A system cannot win a tie, so a model that collapses (all scores equal) or a
BM25 query with no matching term scores as the miss it is instead of a lucky rank 1.
"""

from __future__ import annotations

import re
import string
from bisect import bisect_right
from collections.abc import Iterable, Sequence

import numpy as np

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's official answer normalisation: lower case, drop punctuation, drop the
    articles a/an/the, collapse whitespace (same steps, same order as the v1.1 script)."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def answer_in_context(answers: Iterable[str], pieces: Iterable[str]) -> bool:
    """True when one of ``answers`` (normalised) occurs in one of the context ``pieces``
    (normalised). Matching is on word boundaries of the normalised text, so "1" is not
    found inside "10" and "war" not inside "warsaw"."""
    norm_pieces = [f" {normalize_answer(p)} " for p in pieces]
    for ans in answers:
        a = normalize_answer(ans)
        if a and any(f" {a} " in p for p in norm_pieces):
            return True
    return False


def gold_units(unit_ends: Sequence[int] | np.ndarray, answer_starts: Iterable[int]) -> list[int]:
    """Indices of the units (sorted, gap-free spans of one document, given by their end
    offsets) that contain each answer start. A start in the whitespace between two units
    belongs to the next one; duplicates are removed, order kept."""
    ends = list(unit_ends)
    out: list[int] = []
    for start in answer_starts:
        i = min(bisect_right(ends, start), len(ends) - 1)
        if i >= 0 and i not in out:
            out.append(i)
    return out


def gold_rank(scores: np.ndarray, gold: Sequence[int]) -> int:
    """1-based rank of the best-scoring gold unit, ties counted against it."""
    if len(gold) == 0:
        raise ValueError("a question needs at least one gold unit")
    scores = np.asarray(scores)
    gold_idx = np.asarray(gold, dtype=np.int64)
    best = scores[gold_idx].max()
    mask = np.ones(scores.shape[0], dtype=bool)
    mask[gold_idx] = False
    return int(np.count_nonzero(scores[mask] >= best)) + 1


def recall_at(ranks: Sequence[int] | np.ndarray, k: int) -> float:
    """Fraction of questions whose gold unit ranks within the top ``k``."""
    r = np.asarray(ranks)
    return float(np.mean(r <= k)) if r.size else 0.0


def mrr_at(ranks: Sequence[int] | np.ndarray, k: int) -> float:
    """Mean reciprocal rank, 0 for a gold unit ranked below ``k``."""
    r = np.asarray(ranks, dtype=np.float64)
    if not r.size:
        return 0.0
    return float(np.mean(np.where(r <= k, 1.0 / r, 0.0)))


def rank_order(scores: np.ndarray, top: int | None = None) -> np.ndarray:
    """Unit indices by descending score; ties broken by unit index (corpus order), so a
    run is reproducible. ``top`` limits the sort to the best ``top`` units."""
    scores = np.asarray(scores)
    n = scores.shape[0]
    if top is None or top >= n:
        return np.lexsort((np.arange(n), -scores))
    part = np.argpartition(-scores, top - 1)[:top]
    # argpartition may pick any of several tied units at the cut; take all units tied
    # with the cut score so the tie-break by index stays exact
    cut = scores[part].min()
    cand = np.flatnonzero(scores >= cut)
    return cand[np.lexsort((cand, -scores[cand]))][:top]
