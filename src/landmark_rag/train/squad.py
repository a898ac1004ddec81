"""SQuAD-format articles as long documents with answer-sentence spans.

An article's paragraphs joined with a blank line make one long document; a question's
answer span is the run of sentences that the (first) gold answer's characters touch.
Articles, not questions, are the unit of any train/validation split, so no validation
document is ever seen in training.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from landmark_rag.datasets.squad import PARAGRAPH_SEPARATOR, read_squad
from landmark_rag.types import Sentence

PARAGRAPH_JOIN = PARAGRAPH_SEPARATOR


@dataclass
class Question:
    text: str
    answer_start: int  # character offset in the article text
    answer_end: int
    paragraph: int
    qid: str = ""


@dataclass
class Article:
    title: str
    text: str
    paragraphs: list[tuple[int, int]]  # character span of each paragraph in ``text``
    questions: list[Question]
    sentences: list[Sentence] = field(default_factory=list)

    def segment(self, segment: Callable[[str, str], list[Sentence]]) -> Article:
        """Fill ``sentences`` with ``segment(text, title)`` (the encoder's own segmentation)."""
        self.sentences = segment(self.text, self.title)
        return self

    def answer_span(self, q: Question) -> list[int]:
        """Indices of the sentences the answer touches (needs ``segment`` first)."""
        starts = [s.start for s in self.sentences]
        first = max(0, bisect_right(starts, q.answer_start) - 1)
        last = max(first, bisect_right(starts, max(q.answer_start, q.answer_end - 1)) - 1)
        return list(range(first, last + 1))


def load_squad(path: str | Path) -> list[Article]:
    """All articles of a SQuAD-format file, in file order (``datasets.read_squad``: offsets
    checked against the answer text, untitled articles named), each question with its
    first gold answer."""
    articles = []
    for art in read_squad(path):
        questions = [Question(q.question, q.answer_start, q.answer_end, q.paragraph, q.qid) for q in art.questions]
        articles.append(Article(art.title, art.text, list(art.paragraphs), questions))
    return articles


def select(articles: Sequence[Article], spec: str) -> list[Article]:
    """Articles by a Python slice ``"a:b"`` or comma-separated indices/titles.

    A spec that names no article (a bad number, an index past the end, an unknown title)
    raises :class:`~landmark_rag.train.config.TrainingInputError` naming it.
    """
    from landmark_rag.train.config import TrainingInputError

    spec = spec.strip()
    if ":" in spec and "," not in spec:
        try:
            a, b = (int(x) if x.strip() else None for x in spec.split(":", 1))
        except ValueError:
            raise TrainingInputError(f"article selection {spec!r} is not a slice 'a:b' of integers") from None
        return list(articles[a:b])
    out = []
    titles = {a.title: a for a in articles}
    for item in (x.strip() for x in spec.split(",") if x.strip()):
        if item.lstrip("-").isdigit():
            if not -len(articles) <= int(item) < len(articles):
                raise TrainingInputError(f"article {item} does not exist: the data has {len(articles)} articles")
            out.append(articles[int(item)])
        elif item in titles:
            out.append(titles[item])
        else:
            raise TrainingInputError(f"no article titled {item!r} in the data")
    return out
