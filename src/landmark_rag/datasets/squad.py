"""SQuAD-format JSON (v1.1 or v2.0) as long documents with answer offsets in them.

SQuAD's unit is the paragraph; the landmark setting needs long documents. Joining an
article's paragraphs with a blank line turns each article into one long document, and
every ``answer_start`` (relative to its paragraph) is moved to an offset in that document,
so gold sentences can be found with any segmentation of it. The trainer, the evaluation
harness, training-set preparation and the tests all read SQuAD through this one loader.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from landmark_rag.datasets.records import Article, Question

#: What joins consecutive paragraphs of an article (one blank line).
PARAGRAPH_SEPARATOR = "\n\n"


def parse_squad(data: dict[str, Any] | Sequence[dict[str, Any]]) -> list[Article]:
    """Articles of parsed SQuAD JSON (the whole object or its ``data`` list), in file order.

    An article without a title is called ``article{index}``; its doc id is the title with
    anything but letters, digits and ``_.-()`` replaced by ``_``, made unique with ``-2``,
    ``-3``... Questions without answers (SQuAD 2.0 "impossible" ones) are skipped: they have
    no gold sentence. An ``answer_start`` that does not match its answer text is searched for
    nearby (some files have off-by-a-few offsets); an answer whose text is not in the
    paragraph at all is dropped rather than placed at the wrong offset.
    """
    raw = data["data"] if isinstance(data, dict) else data
    articles = []
    used: set[str] = set()
    for a_index, art in enumerate(raw):
        title = str(art.get("title") or f"article{a_index}")
        pieces: list[str] = []
        spans: list[tuple[int, int]] = []
        questions: list[Question] = []
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
                    questions.append(Question(qid, qa["question"], tuple(answers), tuple(starts)))
            pieces.append(context)
            offset += len(context)
        articles.append(Article(
            doc_id=_doc_id(title, a_index, used), title=title, text=PARAGRAPH_SEPARATOR.join(pieces),
            paragraphs=tuple(spans), questions=tuple(questions),
        ))
    return articles


def read_squad(path: str | os.PathLike[str], limit: int | None = None) -> list[Article]:
    """The first ``limit`` (default: all) articles of a SQuAD-format JSON file (:func:`parse_squad`)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    raw = data["data"] if isinstance(data, dict) else data
    return parse_squad(raw[:limit])


def _doc_id(title: str, index: int, used: set[str]) -> str:
    # Ids end up in sentence ids (``f"{doc_id}:{index}"``), so keep them free of ':'
    # and unique even when two articles share a title.
    base = re.sub(r"[^0-9A-Za-z_.\-()]+", "_", title).strip("_") or f"article{index}"
    doc_id, k = base, 2
    while doc_id in used:
        doc_id, k = f"{base}-{k}", k + 1
    used.add(doc_id)
    return doc_id


def _locate(context: str, answer: str, start: int) -> int | None:
    if 0 <= start and context[start : start + len(answer)] == answer:
        return start
    hits = [m.start() for m in re.finditer(re.escape(answer), context)] if answer else []
    if not hits:
        return None
    return min(hits, key=lambda h: abs(h - start))


__all__ = ["PARAGRAPH_SEPARATOR", "parse_squad", "read_squad"]
