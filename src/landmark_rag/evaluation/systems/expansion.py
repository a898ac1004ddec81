"""Hit -> passage for the sentence-unit systems, using the package's expansion strategies.

``landmark_rag.expand`` defines which sentences around a hit form a passage (Front-k,
Surround); here its ranges are clipped to the hit's document in the corpus's flat
sentence table. Overlap between passages of one question is handled by the context
assembly (text already shown is not paid for twice), so no merging is needed here.
"""

from __future__ import annotations

from landmark_rag.evaluation.corpus import Corpus
from landmark_rag.expand import Strategy, Surround


def strategy_passage(corpus: Corpus, hit: int, strategy: Strategy) -> tuple[int, int, int]:
    """``(doc, start, end)`` of the sentences ``strategy`` picks around global sentence
    ``hit``, clipped to the hit's document.

    Query-dependent ``Adaptive`` expansion is not modelled here: it would be measured by
    its widest candidate range, so the harness's systems use Front/Surround only.
    """
    doc = int(corpus.sent_doc[hit])
    local = hit - int(corpus.doc_first[doc])
    cand = strategy.candidates(local)
    n = int(corpus.doc_first[doc + 1] - corpus.doc_first[doc])
    lo, hi = max(0, cand.start), min(n - 1, cand.stop - 1)
    first = int(corpus.doc_first[doc]) + lo
    return corpus.sentence_span(first, int(corpus.doc_first[doc]) + hi)


def surround_passage(corpus: Corpus, hit: int, before: int, after: int) -> tuple[int, int, int]:
    """The hit sentence with ``before`` sentences before and ``after`` after it."""
    return strategy_passage(corpus, hit, Surround(before, after))
