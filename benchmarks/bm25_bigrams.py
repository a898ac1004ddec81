"""Would word bigrams make the lexical half of hybrid search better? (validation articles only)

SQuAD questions often copy a phrase of the answer's sentence, and DrQA's retriever gained
from hashed bigrams. This runs ``hybrid_sweep.py`` (same arguments) with the BM25 terms of
every sentence and question extended by their consecutive-term bigrams, after stop words
are dropped and stems taken, so "French and Indian War" adds french_indian and indian_war.
The package's analyzer is replaced for the two evaluation systems only, in this process.

Run:  python benchmarks/bm25_bigrams.py --model landmark-mpnet --depths 100 --bm25 1.5:0.25 \
          --methods linear --contexts 0,0.5
Compare with the same command of ``hybrid_sweep.py`` (docs/experiments/fusion-variants.md).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import lru_cache
from itertools import pairwise
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hybrid_sweep

import landmark_rag.evaluation.systems.bm25 as bm25_system
import landmark_rag.evaluation.systems.hybrid as hybrid_system
from landmark_rag.store.analyzer import make_analyzer


@lru_cache(maxsize=4)
def with_bigrams(language: str | None = "english") -> Callable[[str], list[str]]:
    """The package's analyzer for ``language``, plus a term per pair of consecutive terms."""
    unigrams = make_analyzer(language)

    def analyze(text: str) -> list[str]:
        terms = unigrams(text)
        # \x1f cannot occur in a term: the analyzer's words are runs of word characters
        return terms + [f"{a}\x1f{b}" for a, b in pairwise(terms)]

    return analyze


if __name__ == "__main__":
    bm25_system.make_analyzer = with_bigrams
    hybrid_system.make_analyzer = with_bigrams
    hybrid_sweep.main()
