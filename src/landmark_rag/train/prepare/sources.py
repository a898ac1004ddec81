"""Converters: each public dataset's own format -> :class:`~landmark_rag.datasets.Article`.

One function per format, registered in :data:`CONVERTERS`; a recipe names the format of each
source. Every converter keeps the dataset's text byte for byte and moves answer offsets into
the document it builds, so :func:`~landmark_rag.datasets.check_longdoc` can verify each answer
exactly when the document is written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from landmark_rag.datasets import Article, Question, parse_squad


def squad_documents(files: Sequence[Path], source: str, domain: str) -> Iterator[Article]:
    """SQuAD v1.1/v2.0 JSON (a whole file, or one article per file as ``{"data": {...}}``):
    one document per article, its paragraphs joined by a blank line, answerable questions only
    (an unanswerable one has no gold sentence), each with its first answer."""
    for file in files:
        data = json.loads(file.read_text(encoding="utf-8"))
        raw = data["data"] if isinstance(data, dict) else data
        articles = parse_squad([raw] if isinstance(raw, dict) else raw)
        for art in articles:
            # the first answer only: the format stores one per question
            questions = tuple(
                replace(q, answers=q.answers[:1], answer_starts=q.answer_starts[:1]) for q in art.questions
            )
            yield replace(art, doc_id=f"{source}:{art.title}", source=source, domain=domain, questions=questions)


def qed_documents(files: Sequence[Path], source: str, domain: str) -> Iterator[Article]:
    """QED / Natural Questions JSON lines: one passage per distinct paragraph, with every question
    asked on it; the answer is the annotated character span (its text is taken from the paragraph,
    since a few records' ``answer_text`` differs from their span)."""
    passages: dict[tuple[str, str], Article] = {}
    asked: dict[tuple[str, str], list[Question]] = {}
    for file in files:
        with file.open(encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                ex = json.loads(line)
                text, title = ex["paragraph_text"], ex.get("title_text") or ""
                spans = [(int(s), int(e)) for s, e in ex.get("answer_spans") or [] if 0 <= int(s) < int(e) <= len(text)]
                spans = [(s, e) for s, e in spans if text[s:e].strip()]
                if not spans:
                    continue
                if (title, text) not in passages:
                    passages[(title, text)] = Article(
                        doc_id=f"{source}:{ex['example_id']}", title=title, text=text, paragraphs=((0, len(text)),),
                        source=source, domain=domain,
                    )
                s, e = spans[0]
                asked.setdefault((title, text), []).append(
                    Question(str(ex["example_id"]), ex["question_text"], (text[s:e],), (s,))
                )
    for key, doc in passages.items():
        yield replace(doc, questions=tuple(asked[key]))


Converter = Callable[[Sequence[Path], str, str], Iterator[Article]]

#: Format name (as a recipe writes it) -> converter.
CONVERTERS: dict[str, Converter] = {"squad": squad_documents, "qed": qed_documents}
