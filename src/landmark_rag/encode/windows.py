"""Window planning for documents longer than the encoder's context.

Windows hold whole sentences, consecutive windows overlap by about ``overlap`` tokens, and
every sentence is pooled from the one window where it sees the most context: the most
balanced left/right context for bidirectional encoders, the most left context for causal
ones (a causal token never sees what follows it).
"""

from __future__ import annotations

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
    a = 0
    while True:
        # furthest b with tokens(a..b) <= budget, at least one sentence
        b = int(np.searchsorted(prefix, prefix[a] + budget, side="right")) - 1
        b = max(b, a + 1)
        b = min(b, n)
        windows.append((a, b))
        if b >= n:
            break
        # next window starts so that it re-reads about `overlap` tokens of this one, but
        # late enough that it still fits sentence b (else it would add nothing new)
        s = int(np.searchsorted(prefix, prefix[b] - overlap, side="left"))
        fit = int(np.searchsorted(prefix, prefix[b + 1] - budget, side="left"))
        a = min(max(s, fit, a + 1), b)
    best = np.full(n, -1, dtype=np.int64)
    best_score = np.full(n, -1, dtype=np.int64)
    for w, (a, b) in enumerate(windows):
        idx = np.arange(a, b)
        left = prefix[idx] - prefix[a]
        score = left if causal else np.minimum(left, prefix[b] - prefix[idx + 1])
        better = score > best_score[idx]
        best[idx[better]] = w
        best_score[idx[better]] = score[better]
    return windows, best
