"""SQuAD-format JSON (v1.1 or v2.0) as long documents with answer offsets in them.

SQuAD's unit is the paragraph; the landmark setting needs long documents. Joining an
article's paragraphs with a blank line turns each article into one long document, and
every ``answer_start`` (relative to its paragraph) is moved to an offset in that document,
so gold sentences can be found with any segmentation of it. The trainer, the evaluation
harness and the tests all read SQuAD through this one function.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: What joins consecutive paragraphs of an article (one blank line).
PARAGRAPH_SEPARATOR = "\n\n"


@dataclass(frozen=True, slots=True)
class SquadQuestion:
    """One answerable question; ``answer_starts[i]`` is where ``answers[i]`` starts in the
    article's document (``SquadArticle.text``), ``paragraph`` the paragraph it was asked on."""

    qid: str
    question: str
    answers: tuple[str, ...]
    answer_starts: tuple[int, ...]
    paragraph: int

    @property
    def answer(self) -> str:
        """The first gold answer (SQuAD's training answer)."""
        return self.answers[0]

    @property
    def answer_start(self) -> int:
        return self.answer_starts[0]

    @property
    def answer_end(self) -> int:
        return self.answer_starts[0] + len(self.answers[0])


@dataclass(slots=True)
class SquadArticle:
    """One article as a long document: its paragraphs joined by :data:`PARAGRAPH_SEPARATOR`."""

    title: str
    text: str
    paragraphs: list[tuple[int, int]]  # character span of each paragraph in ``text``
    questions: list[SquadQuestion] = field(default_factory=list)


def parse_squad(data: dict[str, Any] | Sequence[dict[str, Any]]) -> list[SquadArticle]:
    """Articles of parsed SQuAD JSON (the whole object or its ``data`` list), in file order.

    An article without a title is called ``article{index}``. Questions without answers
    (SQuAD 2.0 "impossible" ones) are skipped: they have no gold sentence. An
    ``answer_start`` that does not match its answer text is searched for nearby (some files
    have off-by-a-few offsets); an answer whose text is not in the paragraph at all is
    dropped rather than placed at the wrong offset.
    """
    raw = data["data"] if isinstance(data, dict) else data
    articles = []
    for a_index, art in enumerate(raw):
        title = str(art.get("title") or f"article{a_index}")
        pieces: list[str] = []
        spans: list[tuple[int, int]] = []
        questions: list[SquadQuestion] = []
        offset = 0
        for p_index, para in enumerate(art.get("paragraphs", [])):
            context = para["context"]
            if pieces:
                offset += len(PARAGRAPH_SEPARATOR)
            spans.append((offset, offset + len(context)))
            for q_index, qa in enumerate(para.get("qas", [])):
                answers, starts = [], []
                for ans in qa.get("answers", []):
                    text = ans["text"]
                    start = _locate(context, text, int(ans.get("answer_start", -1)))
                    if start is not None and text.strip():
                        answers.append(text)
                        starts.append(offset + start)
                if answers and not qa.get("is_impossible", False):
                    qid = str(qa.get("id") or f"{a_index}-{p_index}-{q_index}")
                    questions.append(SquadQuestion(qid, qa["question"], tuple(answers), tuple(starts), p_index))
            pieces.append(context)
            offset += len(context)
        articles.append(SquadArticle(title, PARAGRAPH_SEPARATOR.join(pieces), spans, questions))
    return articles


def read_squad(path: str | os.PathLike[str], limit: int | None = None) -> list[SquadArticle]:
    """The first ``limit`` (default: all) articles of a SQuAD-format JSON file."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    raw = data["data"] if isinstance(data, dict) else data
    return parse_squad(raw[:limit])


def _locate(context: str, answer: str, start: int) -> int | None:
    if 0 <= start and context[start : start + len(answer)] == answer:
        return start
    hits = [m.start() for m in re.finditer(re.escape(answer), context)] if answer else []
    if not hits:
        return None
    return min(hits, key=lambda h: abs(h - start))
