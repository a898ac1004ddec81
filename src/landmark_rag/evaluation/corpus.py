"""The evaluation corpus: every article of the run as one long document, segmented once.

All sentence-unit systems rank the *same* sentences, so their gold-sentence recalls are
comparable; all systems are charged in tokens of the same tokenizer, so their coverage
at a budget is comparable. Both come from the base encoder and are built here, once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from tqdm.auto import tqdm

from landmark_rag.datasets import Article, Question
from landmark_rag.evaluation.context import TokenIndex
from landmark_rag.evaluation.metrics import gold_units
from landmark_rag.types import Sentence


@dataclass(slots=True)
class Corpus:
    """Documents, their sentences as one flat table, token offsets, and the questions.

    Sentence ``g`` (a global id) is ``sentences[doc][local]`` with ``doc = sent_doc[g]``
    and ``local = g - doc_first[doc]``; ``gold[q]`` lists question ``q``'s gold global
    sentence ids.
    """

    doc_ids: list[str]
    texts: list[str]
    sentences: list[list[Sentence]]
    doc_first: np.ndarray  # int64 [n_docs + 1]: first global sentence id of each doc
    sent_doc: np.ndarray  # int64 [n_sentences]
    sent_start: np.ndarray  # int64 [n_sentences]
    sent_end: np.ndarray  # int64 [n_sentences]
    tokens: list[TokenIndex]
    questions: list[Question]
    question_doc: np.ndarray  # int64 [n_questions]
    gold: list[list[int]]

    @property
    def n_sentences(self) -> int:
        return int(self.sent_doc.shape[0])

    @property
    def n_tokens(self) -> int:
        return int(sum(len(t.starts) for t in self.tokens))

    def sentence_text(self, g: int) -> str:
        return self.texts[int(self.sent_doc[g])][int(self.sent_start[g]) : int(self.sent_end[g])]

    def sentence_span(self, first: int, last: int) -> tuple[int, int, int]:
        """``(doc, start, end)`` of global sentences ``first..last`` (same document)."""
        return int(self.sent_doc[first]), int(self.sent_start[first]), int(self.sent_end[last])


def build_corpus(articles: Sequence[Article], encoder, *, show_progress: bool = False) -> Corpus:
    """Segment and tokenise every article with ``encoder`` (a LandmarkEncoder): its
    segmentation defines the sentences, its tokenizer the budgets."""
    texts = [a.text for a in articles]
    doc_ids = [a.doc_id for a in articles]
    sentences: list[list[Sentence]] = []
    tokens: list[TokenIndex] = []
    for art in tqdm(articles, desc="segmenting", unit="doc", disable=not show_progress):
        sentences.append(encoder.segment(art.text, art.doc_id))
        tokens.append(TokenIndex.build(art.text, encoder.tokenizer))
    counts = [len(s) for s in sentences]
    doc_first = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    sent_doc = np.repeat(np.arange(len(articles), dtype=np.int64), counts)
    sent_start = np.asarray([s.start for ss in sentences for s in ss], dtype=np.int64)
    sent_end = np.asarray([s.end for ss in sentences for s in ss], dtype=np.int64)
    questions: list[Question] = []
    question_doc: list[int] = []
    gold: list[list[int]] = []
    for d, art in enumerate(articles):
        if not sentences[d]:
            continue
        ends = [s.end for s in sentences[d]]
        for q in art.questions:
            questions.append(q)
            question_doc.append(d)
            gold.append([int(doc_first[d]) + i for i in gold_units(ends, q.answer_starts)])
    return Corpus(
        doc_ids,
        texts,
        sentences,
        doc_first,
        sent_doc,
        sent_start,
        sent_end,
        tokens,
        questions,
        np.asarray(question_doc, dtype=np.int64),
        gold,
    )
