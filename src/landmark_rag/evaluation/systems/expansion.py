"""Hit -> passage for the sentence-unit systems, using the package's expansion strategies.

``landmark_rag.expand`` defines which sentences around a hit form a passage (Front-k,
Surround); here its ranges are clipped to the hit's document in the corpus's flat
sentence table. Overlap between passages of one question is handled by the context
assembly (text already shown is not paid for twice), so no merging is needed here.
"""

from __future__ import annotations

from landmark_rag.evaluation.corpus import Corpus
from landmark_rag.expand import Strategy, Surround, make_strategy

#: The package's default expansion (what ``search_passages`` uses): Front-k, k=3.
DEFAULT_STRATEGY: Strategy = make_strategy("front")


def strategy_passage(corpus: Corpus, hit: int, strategy: Strategy) -> tuple[int, int, int]:
    """``(doc, start, end)`` of the sentences ``strategy`` picks around global sentence
    ``hit``, clipped to the hit's document."""
    doc = int(corpus.sent_doc[hit])
    local = hit - int(corpus.doc_first[doc])
    cand = strategy.candidates(local)
    n = int(corpus.doc_first[doc + 1] - corpus.doc_first[doc])
    lo, hi = max(0, cand.start), min(n - 1, cand.stop - 1)
    first = int(corpus.doc_first[doc]) + lo
    return corpus.sentence_span(first, int(corpus.doc_first[doc]) + hi)


def front_passage(corpus: Corpus, hit: int) -> tuple[int, int, int]:
    """The package's default expansion of a hit."""
    return strategy_passage(corpus, hit, DEFAULT_STRATEGY)


def surround_passage(corpus: Corpus, hit: int, before: int, after: int) -> tuple[int, int, int]:
    """The hit sentence with ``before`` sentences before and ``after`` after it."""
    return strategy_passage(corpus, hit, Surround(before, after))
