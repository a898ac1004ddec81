"""Other ways to fuse the same two rankings, against the model's shipped fusion, on validation.

The shipped hybrid search normalises each half's top ``depth`` scores by min-max and adds
them with the model's dense weight (``landmark_rag.retrieve.fusion``). This asks whether
the fusion, rather than the model, is what holds hybrid R@1 back: it re-fuses the same
vectors and the same BM25 (the model's own parameters) on the validation articles 13-15 with

- other normalisations of each half's candidates: z-score, distribution-based (mean +/- 3
  standard deviations clipped to [0, 1], as in DBSF), division by the top score; each at a
  range of dense weights;
- a share of the preceding sentence's dense score added to each sentence's (the dense twin
  of ``lexical_context``), and a share of the *following* sentence's BM25;
- a learned linear fusion over eight features per candidate (both normalised scores, each
  neighbour's, membership of each list), fitted with a listwise softmax loss from the shipped
  weights: on the questions themselves (what a fusion of these features could gain here, as
  far as the fit finds it) and leaving one article out.

It never reads articles 16-23. R@1 here is the gold sentence first (the harness's recall@1);
the shipped fusion is measured through ``fuse_arrays`` itself and re-implemented once to show
the variants start from the same figure.

Run:  python benchmarks/fusion_variants.py --model landmark-mpnet   (about 2 minutes on 2 cores, encoding included)
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from landmark_rag.datasets import read_squad
from landmark_rag.evaluation.corpus import Corpus, build_corpus
from landmark_rag.evaluation.systems import Workspace
from landmark_rag.evaluation.systems.hybrid import HybridSystem
from landmark_rag.evaluation.systems.landmark import LandmarkSystem
from landmark_rag.retrieve.fusion import FusionConfig, _minmax, fuse_arrays, top_units

REPO = Path(__file__).resolve().parent.parent
VALIDATION = range(13, 16)
WEIGHTS = (0.5, 0.6, 0.7, 0.8, 0.9)


def neighbours(corpus: Corpus) -> tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray]]:
    """Functions giving each sentence its predecessor's / successor's value (0 at a document edge)."""
    doc = np.asarray(corpus.sent_doc)
    has_prev = np.r_[False, doc[1:] == doc[:-1]]
    has_next = np.r_[doc[:-1] == doc[1:], False]

    def prev(a: np.ndarray) -> np.ndarray:
        out = np.zeros_like(a)
        out[1:] = a[:-1]
        out[~has_prev] = 0
        return out

    def nxt(a: np.ndarray) -> np.ndarray:
        out = np.zeros_like(a)
        out[:-1] = a[1:]
        out[~has_next] = 0
        return out

    return prev, nxt


def normalise(scores: np.ndarray, kind: str) -> np.ndarray:
    s = np.asarray(scores, dtype=np.float64)
    if kind == "min-max":
        return _minmax(s)  # the shipped fusion's own
    if kind == "z-score":
        sd = s.std()
        return np.zeros_like(s) if sd < 1e-12 else (s - s.mean()) / sd
    if kind == "mean +/- 3 sd":
        lo, hi = s.mean() - 3 * s.std(), s.mean() + 3 * s.std()
        return np.clip((s - lo) / max(hi - lo, 1e-12), 0.0, 1.0)
    if kind == "top score":
        hi = s.max()
        return s / hi if hi > 1e-12 else s
    raise ValueError(kind)


def fuse_normalised(dense: np.ndarray, lexical: np.ndarray, cfg: FusionConfig, kind: str) -> np.ndarray:
    """``fuse_arrays`` with another normalisation; a unit missing from a list gets that list's lowest value."""
    d = top_units(dense, cfg.depth)
    lex = [(u, s) for u, s in top_units(lexical, cfg.depth) if s > 0]
    nd = dict(zip([u for u, _ in d], normalise(np.array([s for _, s in d]), kind), strict=True))
    nl = dict(zip([u for u, _ in lex], normalise(np.array([s for _, s in lex]), kind), strict=True)) if lex else {}
    d_min = min(nd.values()) if nd else 0.0
    l_min = min(nl.values()) if nl else 0.0
    rank = {u: r for r, (u, _) in enumerate(d)}
    out = np.full(dense.shape[0], -1e9)
    for u in set(nd) | set(nl):  # ties broken by the dense rank, as fuse() does
        out[u] = cfg.weight * nd.get(u, d_min) + (1 - cfg.weight) * nl.get(u, l_min) - 1e-9 * rank.get(u, len(d))
    return out


def recall_at_1(fused: list[np.ndarray], corpus: Corpus) -> float:
    # the first unit in corpus order among equal scores, as the harness ranks
    return float(np.mean([int(np.argmax(row)) in corpus.gold[q] for q, row in enumerate(fused)]))


def features(dense: np.ndarray, lexical: np.ndarray, cfg: FusionConfig, prev: Callable, nxt: Callable) -> tuple[np.ndarray, np.ndarray]:
    """The candidates (union of both top-``depth`` lists) and eight features of each."""
    top_d = [u for u, _ in top_units(dense, cfg.depth)]
    top_l = [u for u, s in top_units(lexical, cfg.depth) if s > 0]
    cand = np.array(sorted(set(top_d) | set(top_l)))

    def scaled(a: np.ndarray, top: list[int]) -> np.ndarray:
        if not top:
            return np.zeros_like(a)
        lo, hi = a[top].min(), a[top].max()
        return np.clip((a - lo) / (hi - lo + 1e-12), 0.0, None)

    dn, ln = scaled(dense, top_d), scaled(lexical, top_l)
    in_d, in_l = np.zeros_like(dense), np.zeros_like(dense)
    in_d[top_d], in_l[top_l] = 1.0, 1.0
    f = np.stack([dn * in_d, ln * in_l, prev(ln), nxt(ln), prev(dn), nxt(dn), in_d, in_l], axis=1)
    return cand, f[cand]


def fit(rows: list[tuple[torch.Tensor, torch.Tensor]], start: torch.Tensor, steps: int) -> torch.Tensor:
    """Feature weights that maximise each question's softmax mass on its gold sentences."""
    w = start.clone().requires_grad_(True)
    opt = torch.optim.Adam([w], lr=0.02)
    for _ in range(steps):
        loss = sum(-torch.logsumexp(torch.log_softmax(f @ w * 20, 0)[gold], 0) for f, gold in rows if gold.any())
        opt.zero_grad()
        loss.backward()  # type: ignore[union-attr]
        opt.step()
    return w.detach()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(REPO / "data" / "squad-v1.1-dev-part-a.json"))
    ap.add_argument("--model", default=None, help="landmark model (default: the package default)")
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--json", default=None, help="also write the rows to this file")
    args = ap.parse_args()

    t0 = time.perf_counter()
    full = read_squad(args.data)
    ws = Workspace(model=args.model, batch_size=32)
    corpus = build_corpus([full[i] for i in VALIDATION], ws.base_encoder())
    shipped = replace(ws.landmark_index().fusion, mode="hybrid", depth=args.depth)
    system = HybridSystem(shipped)
    system.build(corpus, ws)
    assert system.lexical is not None
    queries = [q.question for q in corpus.questions]
    dense = LandmarkSystem.scores(system, queries).astype(np.float64)
    lexical = np.stack([system.lexical.scores(system.analyze(q), context=0.0) for q in queries]).astype(np.float64)
    prev, nxt = neighbours(corpus)
    with_context = [lex + shipped.lexical_context * prev(lex) for lex in lexical]
    print(f"{len(queries)} questions, {corpus.n_sentences} sentences; shipped fusion: {shipped}")

    rows: list[dict[str, object]] = []

    def add(name: str, fused: list[np.ndarray]) -> None:
        rows.append({"fusion": name, "recall@1": recall_at_1(fused, corpus)})
        print(f"  {name}: R@1 {rows[-1]['recall@1']:.3f}", flush=True)

    add("shipped (fuse_arrays)", [fuse_arrays(d, lx, shipped) for d, lx in zip(dense, with_context, strict=True)])
    for kind in ("min-max", "z-score", "mean +/- 3 sd", "top score"):
        weights = (shipped.weight,) if kind == "min-max" else WEIGHTS
        for w in weights:
            cfg = replace(shipped, weight=w)
            add(f"{kind}, dense weight {w}",
                [fuse_normalised(d, lx, cfg, kind) for d, lx in zip(dense, with_context, strict=True)])
    for share in (0.1, 0.25, 0.5):
        add(f"shipped + {share} of the preceding sentence's dense score",
            [fuse_arrays(d + share * prev(d), lx, shipped) for d, lx in zip(dense, with_context, strict=True)])
    for share in (0.1, 0.25):
        add(f"shipped + {share} of the following sentence's BM25",
            [fuse_arrays(d, lx + share * nxt(raw), shipped)
             for d, lx, raw in zip(dense, with_context, lexical, strict=True)])

    cands, data = [], []
    for q, (d, lx) in enumerate(zip(dense, with_context, strict=True)):
        cand, f = features(d, lx, shipped, prev, nxt)
        cands.append(cand)
        gold = torch.tensor([int(c) in corpus.gold[q] for c in cand])
        data.append((torch.tensor(f, dtype=torch.float32), gold))
    # the shipped fusion itself (the lexical feature already holds the predecessor's share)
    start = torch.tensor([shipped.weight, 1 - shipped.weight, 0, 0, 0, 0, 0, 0], dtype=torch.float32)

    def r1(w: torch.Tensor, which: list[int]) -> float:
        return float(np.mean([bool(data[q][1][int(torch.argmax(data[q][0] @ w))]) for q in which]))

    everyone = list(range(len(queries)))
    print(f"  learned fusion, start (the shipped weights): R@1 {r1(start, everyone):.3f}")
    w = fit(data, start, 300)
    rows.append({"fusion": "learned, fitted on these questions (in-sample)", "recall@1": r1(w, everyone),
                 "weights": [round(float(x), 3) for x in w]})
    print(f"  learned, in-sample: R@1 {rows[-1]['recall@1']:.3f} (weights {rows[-1]['weights']})")
    docs = np.asarray(corpus.question_doc)
    held = []
    for doc in sorted(set(docs.tolist())):
        train = [q for q in everyone if docs[q] != doc]
        test = [q for q in everyone if docs[q] == doc]
        wd = fit([data[q] for q in train], start, 150)
        held.extend(bool(data[q][1][int(torch.argmax(data[q][0] @ wd))]) for q in test)
        print(f"  article {doc}: {len(test)} questions, shipped {r1(start, test):.3f}, learned {r1(wd, test):.3f}")
    rows.append({"fusion": "learned, leaving each article out", "recall@1": float(np.mean(held))})
    print(f"  learned, leave-one-article-out: R@1 {rows[-1]['recall@1']:.3f}")

    print("\n| fusion | R@1 |\n|---|---:|")
    for r in rows:
        print(f"| {r['fusion']} | {r['recall@1']:.3f} |")
    print(f"\nelapsed {time.perf_counter() - t0:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
