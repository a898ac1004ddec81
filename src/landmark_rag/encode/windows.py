"""Window planning for documents longer than the encoder's context.

Windows hold whole sentences, consecutive windows overlap by about ``overlap`` tokens, and
every sentence is pooled from the one window where it sees the most context: the most
balanced left/right context for bidirectional encoders, the most left context for causal
ones (a causal token never sees what follows it).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

import numpy as np


def plan_windows(
    lengths: Sequence[int] | np.ndarray, budget: int, overlap: int, causal: bool
) -> tuple[list[tuple[int, int]], np.ndarray]:
    """Plan windows over sentences of the given token lengths.

    Returns the windows as half-open sentence ranges ``[a, b)`` and, for each sentence, the
    index of the window it is pooled from. A sentence longer than ``budget`` gets a window
    of its own (the caller truncates it); that never happens for sentences produced by the
    encoder's own segmentation, which cuts long sentences to fit.
    """
    n = len(lengths)
    if n == 0:
        return [], np.zeros(0, dtype=np.int64)
    if budget < 1:
        raise ValueError("window budget must be positive")
    overlap = max(0, min(overlap, budget // 2))
    prefix = np.concatenate([[0], np.cumsum(np.asarray(lengths, dtype=np.int64))])
    windows: list[tuple[int, int]] = []
    at = prefix.tolist()  # bisect on a list: a numpy call per scalar lookup costs more than the search
    a = 0
    while True:
        # furthest b with tokens(a..b) <= budget, at least one sentence
        b = bisect_right(at, at[a] + budget) - 1
        b = max(b, a + 1)
        b = min(b, n)
        windows.append((a, b))
        if b >= n:
            break
        # next window starts so that it re-reads about `overlap` tokens of this one, but
        # late enough that it still fits sentence b (else it would add nothing new)
        s = bisect_left(at, at[b] - overlap)
        fit = bisect_left(at, at[b + 1] - budget)
        a = min(max(s, fit, a + 1), b)
    # every (window, sentence) pair at once: the sentence's context in that window, then for
    # each sentence the window with the most (the earliest on a tie)
    bounds = np.asarray(windows, dtype=np.int64)
    sizes = bounds[:, 1] - bounds[:, 0]
    window = np.repeat(np.arange(len(windows), dtype=np.int64), sizes)
    first = np.repeat(bounds[:, 0], sizes)
    idx = first + np.arange(window.shape[0], dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    left = prefix[idx] - prefix[first]
    score = left if causal else np.minimum(left, prefix[bounds[window, 1]] - prefix[idx + 1])
    order = np.lexsort((window, -score, idx))
    top = order[np.concatenate([[True], idx[order][1:] != idx[order][:-1]])]
    best = np.empty(n, dtype=np.int64)
    best[idx[top]] = window[top]
    return windows, best
