"""Three cheap score mixes, checked on the validation articles before anyone builds them.

1. A lexical half that also reads the neighbouring sentences: each sentence's BM25 score plus
   ``before`` x its predecessor's and ``after`` x its successor's (same document), then fused
   with the model's vectors as the hybrid search fuses (linear, depth 100). Motivation:
   questions are often written against the words of the sentence before the answer.
2. The in-context vectors' cosine mixed with the base model's cosine for each sentence alone
   (``w`` x landmark + ``(1 - w)`` x sentence): does the stand-alone view add anything the
   trained vectors lack?
3. The vectors' half of hybrid search reading the neighbouring sentences: each sentence's
   cosine plus ``before`` x its predecessor's and ``after`` x its successor's (same
   document), the vectors alone and fused with BM25 by the model's own fusion. In-context
   vectors already carry their surroundings; does a share of the neighbours' scores still help?

Both run on articles 13-15 only (the choices' split) and print R@1, R@5 and coverage@256 in
the harness's whole-corpus protocol; the row with no mixing is the baseline.

Run:  python benchmarks/score_mixing.py [--model landmark-minilm] [--mixes lexical,alone,dense]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from landmark_rag.datasets import read_squad
from landmark_rag.evaluation.corpus import Corpus, build_corpus
from landmark_rag.evaluation.runner import evaluate_system
from landmark_rag.evaluation.systems import Workspace, make_system
from landmark_rag.evaluation.systems.base import IndexStats
from landmark_rag.evaluation.systems.hybrid import HybridSystem
from landmark_rag.evaluation.systems.landmark import LandmarkSystem
from landmark_rag.retrieve.fusion import FusionConfig, fuse_arrays

DEFAULT_DATA = Path(__file__).resolve().parent.parent / "data" / "squad-v1.1-dev-part-a.json"
VALIDATION = range(13, 16)


class NeighbourLexical(HybridSystem):
    """The hybrid system with a lexical score that adds a share of the neighbours' scores."""

    def __init__(self, fusion: FusionConfig, before: float, after: float) -> None:
        super().__init__(fusion)
        self.before, self.after = before, after

    def build(self, corpus: Corpus, workspace: Workspace) -> IndexStats:
        doc = corpus.sent_doc  # which neighbours lie in the same document
        self.same_prev = np.r_[False, doc[1:] == doc[:-1]]
        self.same_next = np.r_[doc[:-1] == doc[1:], False]
        return super().build(corpus, workspace)

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        dense = LandmarkSystem.scores(self, queries)
        out = np.empty_like(dense)
        for i, q in enumerate(queries):
            lex = self.lexical.scores(self.analyze(q)).astype(np.float32)
            prev = np.where(self.same_prev, np.r_[0.0, lex[:-1]], 0.0)
            nxt = np.where(self.same_next, np.r_[lex[1:], 0.0], 0.0)
            out[i] = fuse_arrays(dense[i], lex + self.before * prev + self.after * nxt, self.fusion)
        return out


class NeighbourDense(HybridSystem):
    """Hybrid search (the model's fusion) whose dense half adds a share of the neighbours'
    cosines; ``fused=False`` ranks by that dense half alone. Built once, re-scored per setting."""

    def __init__(self) -> None:
        super().__init__()
        self.before = self.after = 0.0
        self.fused = True
        self._stats: IndexStats | None = None

    def build(self, corpus: Corpus, workspace: Workspace) -> IndexStats:
        if self._stats is None:  # the encoding does not change between settings
            self._stats = super().build(corpus, workspace)
            doc = corpus.sent_doc
            self.same_prev = np.r_[False, doc[1:] == doc[:-1]]
            self.same_next = np.r_[doc[:-1] == doc[1:], False]
        return self._stats

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        dense = LandmarkSystem.scores(self, queries)
        prev = np.where(self.same_prev, np.pad(dense, ((0, 0), (1, 0)))[:, :-1], 0.0)
        nxt = np.where(self.same_next, np.pad(dense, ((0, 0), (0, 1)))[:, 1:], 0.0)
        dense = (dense + self.before * prev + self.after * nxt).astype(np.float32)
        if not self.fused:
            return dense
        assert self.fusion is not None
        out = np.empty_like(dense)
        for i, q in enumerate(queries):
            lexical = self.lexical.scores(self.analyze(q), context=self.fusion.lexical_context)
            out[i] = fuse_arrays(dense[i], lexical, self.fusion)
        return out


class Mixed(LandmarkSystem):
    """Landmark cosines mixed with the base model's cosines for each sentence alone."""

    def __init__(self, alone: object, weight: float) -> None:
        super().__init__()
        self.alone, self.weight = alone, weight  # a built ``sentence`` system

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        return self.weight * super().scores(queries) + (1 - self.weight) * self.alone.scores(queries)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--model", default=None, help="landmark model (default: the package default)")
    ap.add_argument("--mixes", default="lexical,alone,dense", help="comma list: lexical, alone, dense")
    args = ap.parse_args()
    mixes = {m.strip() for m in args.mixes.split(",") if m.strip()}

    full = read_squad(args.data)
    ws = Workspace(model=args.model, batch_size=32)
    corpus = build_corpus([full[i] for i in VALIDATION], ws.base_encoder())

    def row(label: str, system: object) -> None:
        m = evaluate_system(system, corpus, ws, (256,))
        print(f"| {label} | {m['recall@1']:.3f} | {m['recall@5']:.3f} | {m['coverage@256']:.3f} |", flush=True)

    if "lexical" in mixes:
        print("| lexical half: before / after, fusion weight | R@1 | R@5 | cov@256 |\n|---|---|---|---|")
        for before, after in [(0, 0), (0.3, 0), (0.5, 0), (0, 0.3), (0.3, 0.3), (0.5, 0.5)]:
            for w in (0.5, 0.6, 0.7):
                fusion = FusionConfig(mode="hybrid", method="linear", weight=w, depth=100)
                row(f"{before} / {after}, {w}", NeighbourLexical(fusion, before, after))

    if "alone" in mixes:
        alone = make_system("sentence")
        alone.build(corpus, ws)
        print("\n| landmark share of the dense score | R@1 | R@5 | cov@256 |\n|---|---|---|---|")
        for w in (1.0, 0.9, 0.8, 0.7, 0.6, 0.5):
            row(f"{w}", Mixed(alone, w))

    if "dense" in mixes:
        print(
            "\n| dense half: before / after | vectors R@1 | vectors cov@256 | hybrid R@1 | hybrid R@5 | hybrid cov@256 |"
        )
        print("|---|---|---|---|---|---|")
        system = NeighbourDense()
        for before, after in [(0, 0), (0.05, 0.05), (0.1, 0), (0, 0.1), (0.1, 0.1), (0.2, 0), (0, 0.2), (0.2, 0.2)]:
            system.before, system.after = before, after
            system.fused = False
            d = evaluate_system(system, corpus, ws, (256,))
            system.fused = True
            m = evaluate_system(system, corpus, ws, (256,))
            print(
                f"| {before} / {after} | {d['recall@1']:.3f} | {d['coverage@256']:.3f} | {m['recall@1']:.3f} | "
                f"{m['recall@5']:.3f} | {m['coverage@256']:.3f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
