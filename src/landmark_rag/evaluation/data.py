"""Load any SQuAD-format JSON file as long documents plus questions with gold offsets.

SQuAD's unit is the paragraph; the landmark setting needs long documents. Joining an
article's paragraphs with a blank line turns each article into one long document, and
every ``answer_start`` (relative to its paragraph) is shifted to an offset in that
document, so gold sentences can be found with any segmentation of it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from landmark_rag.datasets.squad import PARAGRAPH_SEPARATOR, parse_squad

__all__ = ["PARAGRAPH_SEPARATOR", "EvalArticle", "EvalQuestion", "EvalSet", "articles_from_squad", "load_squad",
           "select_articles"]



@dataclass(frozen=True, slots=True)
class EvalQuestion:
    """One question. ``answer_starts[i]`` is where ``answers[i]`` starts in the *document*."""

    qid: str
    question: str
    doc_id: str
    answers: tuple[str, ...]
    answer_starts: tuple[int, ...]


@dataclass(slots=True)
class EvalArticle:
    """One article as a long document, with its questions."""

    doc_id: str
    title: str
    text: str
    questions: list[EvalQuestion] = field(default_factory=list)


@dataclass(slots=True)
class EvalSet:
    """The articles (documents) and questions of one evaluation run."""

    source: str
    articles: list[EvalArticle]

    @property
    def questions(self) -> list[EvalQuestion]:
        return [q for a in self.articles for q in a.questions]

    def __len__(self) -> int:
        return sum(len(a.questions) for a in self.articles)


def _doc_id(title: str, index: int, used: set[str]) -> str:
    # Ids end up in sentence ids (``f"{doc_id}:{index}"``), so keep them free of ':'
    # and unique even when two articles share a title.
    base = re.sub(r"[^0-9A-Za-z_.\-()]+", "_", title).strip("_") or f"article{index}"
    doc_id, k = base, 2
    while doc_id in used:
        doc_id, k = f"{base}-{k}", k + 1
    used.add(doc_id)
    return doc_id


def articles_from_squad(data: dict[str, Any] | Sequence[dict[str, Any]]) -> list[EvalArticle]:
    """Build articles from parsed SQuAD JSON (the whole object or its ``data`` list).

    Parsing is ``datasets.parse_squad`` (shared with training and the tests): questions
    without answers (SQuAD 2.0 "impossible" ones) are skipped, off-by-a-few ``answer_start``
    offsets are found nearby, and an answer whose text is not in its paragraph is dropped
    rather than evaluated against the wrong place. Here each article gets a unique doc id.
    """
    used: set[str] = set()
    articles = []
    for a_index, art in enumerate(parse_squad(data)):
        doc_id = _doc_id(art.title, a_index, used)
        questions = [EvalQuestion(q.qid, q.question, doc_id, q.answers, q.answer_starts) for q in art.questions]
        articles.append(EvalArticle(doc_id, art.title, art.text, questions))
    return articles


def select_articles(
    articles: Iterable[EvalArticle],
    *,
    titles: Sequence[str] | None = None,
    max_articles: int | None = None,
    max_questions: int | None = None,
) -> list[EvalArticle]:
    """Subset for quick or held-out runs.

    ``titles`` keeps the articles whose title (or doc id) is listed, case-insensitively,
    in file order; an unknown title is an error, so a typo cannot silently shrink a
    held-out set. ``max_articles`` keeps the first N; ``max_questions`` caps questions
    per run, taken round-robin over the articles so a small cap still samples every
    article. Articles left without questions still stay in the corpus: they are
    distractors, which keeps the retrieval problem as hard as the full file.
    """
    arts = list(articles)
    if titles:
        asked = [t.strip() for t in titles if t.strip()]
        wanted = {t.lower() for t in asked}
        known = {a.title.lower() for a in arts} | {a.doc_id.lower() for a in arts}
        missing = [t for t in asked if t.lower() not in known]
        if missing:
            raise ValueError(f"no article titled {' | '.join(missing)}")
        arts = [a for a in arts if a.title.lower() in wanted or a.doc_id.lower() in wanted]
    if max_articles is not None:
        arts = arts[: max(0, max_articles)]
    if max_questions is not None:
        keep: dict[str, set[str]] = {a.doc_id: set() for a in arts}
        queues = [list(a.questions) for a in arts]
        left, depth = max(0, max_questions), 0
        while left > 0 and any(depth < len(q) for q in queues):
            for art, queue in zip(arts, queues, strict=True):
                if depth < len(queue) and left > 0:
                    keep[art.doc_id].add(queue[depth].qid)
                    left -= 1
            depth += 1
        arts = [
            EvalArticle(a.doc_id, a.title, a.text, [q for q in a.questions if q.qid in keep[a.doc_id]]) for a in arts
        ]
    return arts


def load_squad(
    path: str | os.PathLike[str],
    *,
    titles: Sequence[str] | None = None,
    max_articles: int | None = None,
    max_questions: int | None = None,
) -> EvalSet:
    """Read a SQuAD-format JSON file (v1.1 or v2.0) into an :class:`EvalSet`."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    arts = select_articles(
        articles_from_squad(data), titles=titles, max_articles=max_articles, max_questions=max_questions
    )
    return EvalSet(os.fspath(path), arts)
