"""Pseudo long documents: short passages with questions placed among unrelated distractors.

Why: public QA with long documents is scarce, while QA over single passages is plentiful. The
paper's second stage concatenates passages into a long document; here each pseudo document
holds a few passages that carry questions (positives) shuffled among passages of other sources
without their questions (distractors), joined by blank lines like real paragraphs. Every
sentence of the document is a negative for each question, as in a real long document, but the
neighbours are topically unrelated: an easier task that widens the query styles and topics a
model sees beyond the real long documents.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import replace

from landmark_rag.datasets import PARAGRAPH_SEPARATOR, Article, Question

Passage = tuple[str, list[Question]]  # text, questions with offsets into it


def paragraphs_of(doc: Article, *, with_questions: bool) -> list[Passage]:
    """A document's paragraphs as passages (questions moved to paragraph offsets, or dropped)."""
    out = []
    for s, e in doc.paragraphs or [(0, len(doc.text))]:
        inside = [q for q in doc.questions if s <= q.answer_start and q.answer_end <= e] if with_questions else []
        out.append((doc.text[s:e], [_shifted(q, -s) for q in inside]))
    return out


def _shifted(question: Question, by: int) -> Question:
    return replace(question, answer_starts=tuple(start + by for start in question.answer_starts))


def pseudo_documents(
    positives: Sequence[Passage],
    distractors: Sequence[Passage],
    *,
    seed: int,
    positives_per_document: tuple[int, int] = (2, 5),
    distractors_per_document: tuple[int, int] = (4, 10),
    name: str = "pseudo",
) -> Iterator[Article]:
    """Each positive passage used exactly once, in seeded random groups, each group shuffled with
    distractors drawn without replacement until they run out (then reused)."""
    if not positives:
        return
    rng = random.Random(seed)
    order = list(range(len(positives)))
    rng.shuffle(order)
    pool: list[int] = []
    i = n = 0
    while i < len(order):
        group = [positives[j] for j in order[i : i + rng.randint(*positives_per_document)]]
        i += len(group)
        fillers: list[Passage] = []
        for _ in range(rng.randint(*distractors_per_document) if distractors else 0):
            if not pool:
                pool = list(range(len(distractors)))
                rng.shuffle(pool)
            fillers.append((distractors[pool.pop()][0], []))
        parts = group + fillers
        rng.shuffle(parts)
        yield _join(f"{name}:{n:05d}", parts, name)
        n += 1


def _join(doc_id: str, parts: Sequence[Passage], source: str) -> Article:
    texts: list[str] = []
    spans: list[tuple[int, int]] = []
    questions: list[Question] = []
    offset = 0
    for text, qs in parts:
        if texts:
            offset += len(PARAGRAPH_SEPARATOR)
        spans.append((offset, offset + len(text)))
        questions.extend(_shifted(q, offset) for q in qs)
        texts.append(text)
        offset += len(text)
    return Article(
        doc_id=doc_id, title=doc_id, text=PARAGRAPH_SEPARATOR.join(texts), paragraphs=tuple(spans),
        questions=tuple(questions), source=source, domain="pseudo",
    )
