"""Fusing a dense and a lexical ranking of the same sentence units (step 4, hybrid).

Both halves rank the same units (sentence ids ``doc_id:index``), so fusion is a pure
function of two ranked candidate lists; it never sees text or vectors, and the fused
hits go through the same expansion as dense hits.

Two methods, chosen per model in ``landmark_config.json`` (``fusion``) on validation data:

- ``rrf`` - reciprocal-rank fusion (Cormack et al. 2009): ``w / (rrf_k + rank_dense) +
  (1 - w) / (rrf_k + rank_lexical)``. Uses ranks only, so it needs no score calibration;
  ``w`` is the dense weight (0.5 = the classic unweighted RRF up to a factor 2).
- ``linear`` - normalised linear fusion: each list's scores min-max normalised over its
  candidates, then ``w * dense + (1 - w) * lexical``; a unit missing from a list scores 0
  there. Keeps score gaps (a BM25 hit far ahead of the rest stays far ahead).

Each half contributes its top ``depth`` candidates (``FusionConfig.depth``); units outside
both lists are not ranked. The lexical half scores a sentence with a share of its predecessor's
BM25 added (``lexical_context``, ``store/bm25.py``): the landmark vector of a sentence carries
its context, and the lexical side should see some of it too. The same functions serve the search path and the eval harness.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal, cast

import numpy as np

from landmark_rag.store.bm25 import DEFAULT_B, DEFAULT_K1, check_parameters

Mode = Literal["hybrid", "dense", "lexical"]
Method = Literal["rrf", "linear"]
MODES: tuple[str, ...] = ("hybrid", "dense", "lexical")
METHODS: tuple[str, ...] = ("rrf", "linear")


@dataclass(frozen=True)
class FusionConfig:
    """How a model's searches combine the two rankings.

    ``mode``: the default search mode (``dense`` = the model says "dense only");
    ``method``/``weight``: see the module docstring (``weight`` is the dense share, 0-1);
    ``rrf_k``: RRF's rank offset; ``depth``: candidates taken from each half;
    ``language``: stemming/stop words of the lexical index (``english``, an ISO code, ``none``);
    ``lexical_context``: the share of the preceding sentence's BM25 score a sentence adds to its
    own, in hybrid and lexical searches (0: each sentence alone, as before it existed; each
    shipped model sets its own, chosen on validation articles).
    ``bm25_k1`` / ``bm25_b``: the lexical index's BM25 parameters (term-frequency saturation;
    how far a sentence's length normalises its score, 0-1). The defaults are bm25s's and
    Lucene's (1.5, 0.75), made for passages; sentences vary less in length, and a model's
    config may carry values chosen on validation articles.
    """

    mode: Mode = "dense"
    method: Method = "rrf"
    weight: float = 0.5
    rrf_k: int = 60
    depth: int = 50
    language: str = "english"
    lexical_context: float = 0.0
    bm25_k1: float = DEFAULT_K1
    bm25_b: float = DEFAULT_B

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.method not in METHODS:
            raise ValueError(f"fusion method must be one of {', '.join(METHODS)}, not {self.method!r}")
        if not 0.0 <= float(self.weight) <= 1.0:
            raise ValueError(f"fusion weight must lie in [0, 1], not {self.weight!r}")
        if int(self.rrf_k) < 0 or int(self.depth) < 1:
            raise ValueError("rrf_k must be >= 0 and depth >= 1")
        if not 0.0 <= float(self.lexical_context) <= 1.0:
            raise ValueError(f"lexical_context must lie in [0, 1], not {self.lexical_context!r}")
        check_parameters(self.bm25_k1, self.bm25_b)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> FusionConfig:
        """From a ``landmark_config.json`` ``fusion`` entry (unknown keys refused: a typo would
        otherwise silently fall back to a default)."""
        data = dict(data or {})
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown fusion setting(s) {unknown}; known: {sorted(known)}")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def model_fusion(config: object | None, **overrides: Any) -> FusionConfig:
    """The fusion a model's ``landmark_config.json`` asks for (dense only when it says none).

    Accepts a ``LandmarkConfig``, a ``LandmarkEncoder`` (its ``.config``) or ``None``;
    ``overrides`` (``None`` values ignored) replace single settings, e.g. ``language="de"``.
    """
    config = getattr(config, "config", config)
    data = dict(getattr(config, "fusion", None) or {})
    data.update({k: v for k, v in overrides.items() if v is not None})
    return FusionConfig.from_dict(data)


def check_mode(mode: str) -> Mode:
    """``mode`` if it is a search mode, else a ``ValueError`` naming the valid ones."""
    if mode not in MODES:
        raise ValueError(f"search mode must be one of {', '.join(MODES)}, not {mode!r}")
    return mode  # type: ignore[return-value]


def _minmax(scores: Sequence[float]) -> np.ndarray:
    s = np.asarray(scores, dtype=np.float64)
    if s.size == 0:
        return s
    lo, hi = float(s.min()), float(s.max())
    return np.ones_like(s) if hi - lo <= 1e-12 else (s - lo) / (hi - lo)


def fuse(
    dense: Sequence[tuple[Hashable, float]],
    lexical: Sequence[tuple[Hashable, float]],
    method: Method = "rrf",
    weight: float = 0.5,
    *,
    rrf_k: int = 60,
) -> list[tuple[Hashable, float]]:
    """Fuse two best-first ``(unit, score)`` lists into one, best first.

    Ties are broken by the dense rank, then the lexical rank, so the order is deterministic.
    """
    if method not in METHODS:
        raise ValueError(f"fusion method must be one of {', '.join(METHODS)}, not {method!r}")
    w = float(weight)
    fused: dict[Hashable, float] = {}
    rank_d = {u: r for r, (u, _) in enumerate(dense)}
    rank_l = {u: r for r, (u, _) in enumerate(lexical)}
    if method == "rrf":
        for r, (u, _) in enumerate(dense):
            fused[u] = fused.get(u, 0.0) + w / (rrf_k + r + 1)
        for r, (u, _) in enumerate(lexical):
            fused[u] = fused.get(u, 0.0) + (1.0 - w) / (rrf_k + r + 1)
    else:
        for (u, _), v in zip(dense, _minmax([s for _, s in dense]), strict=True):
            fused[u] = fused.get(u, 0.0) + w * float(v)
        for (u, _), v in zip(lexical, _minmax([s for _, s in lexical]), strict=True):
            fused[u] = fused.get(u, 0.0) + (1.0 - w) * float(v)
    big = len(dense) + len(lexical) + 1
    return sorted(fused.items(), key=lambda p: (-p[1], rank_d.get(p[0], big), rank_l.get(p[0], big)))


def top_units(scores: np.ndarray, depth: int) -> list[tuple[int, float]]:
    """The ``depth`` best ``(unit, score)`` of a full score vector, best first (ties: lower unit)."""
    n = min(int(depth), scores.shape[0])
    if n <= 0:
        return []
    idx = np.argpartition(-scores, n - 1)[:n] if scores.shape[0] > n else np.arange(scores.shape[0])
    idx = idx[np.lexsort((idx, -scores[idx]))]
    return [(int(i), float(scores[i])) for i in idx]


def fuse_arrays(dense: np.ndarray, lexical: np.ndarray, config: FusionConfig) -> np.ndarray:
    """Fused scores over all units from two full score vectors (the eval harness's view).

    Exactly what the search path does: the top ``depth`` of each half are fused; every other
    unit gets the same score below all candidates (so it never outranks a fused candidate, and
    ties count against it in the harness, as for any unranked unit).
    """
    lex_top = [(u, s) for u, s in top_units(lexical, config.depth) if s > 0]  # as the lexical index
    fused = fuse(top_units(dense, config.depth), lex_top, config.method, config.weight, rrf_k=config.rrf_k)
    out = np.full(dense.shape[0], -1.0, dtype=np.float32)
    for u, s in fused:
        out[cast(int, u)] = s  # the keys here are the unit numbers top_units gave
    return out


__all__ = ["METHODS", "MODES", "FusionConfig", "Method", "Mode", "check_mode", "fuse", "fuse_arrays", "model_fusion", "top_units"]
