"""Converters: each public dataset's own format -> :class:`~landmark_rag.datasets.longdoc.LongDocument`.

One function per format, registered in :data:`CONVERTERS`; a recipe names the format of each
source. Every converter keeps the dataset's text byte for byte and moves answer offsets into
the document it builds, so :meth:`LongDocument.check` can verify each answer exactly.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from landmark_rag.datasets.longdoc import LongDocQuestion, LongDocument
from landmark_rag.datasets.squad import parse_squad


def squad_documents(files: Sequence[Path], source: str, domain: str) -> Iterator[LongDocument]:
    """SQuAD v1.1/v2.0 JSON (a whole file, or one article per file as ``{"data": {...}}``):
    one document per article, its paragraphs joined by a blank line, answerable questions only
    (an unanswerable one has no gold sentence), each with its first answer."""
    for file in files:
        data = json.loads(file.read_text(encoding="utf-8"))
        raw = data["data"] if isinstance(data, dict) else data
        articles = parse_squad([raw] if isinstance(raw, dict) else raw)
        for art in articles:
            questions = [LongDocQuestion(q.qid, q.question, q.answer, q.answer_start) for q in art.questions]
            yield LongDocument(
                id=f"{source}:{art.title}", title=art.title, text=art.text, source=source, domain=domain,
                paragraphs=list(art.paragraphs), questions=questions,
            )


def qed_documents(files: Sequence[Path], source: str, domain: str) -> Iterator[LongDocument]:
    """QED / Natural Questions JSON lines: one passage per distinct paragraph, with every question
    asked on it; the answer is the annotated character span (its text is taken from the paragraph,
    since a few records' ``answer_text`` differs from their span)."""
    passages: dict[tuple[str, str], LongDocument] = {}
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
                doc = passages.get((title, text))
                if doc is None:
                    doc = LongDocument(
                        id=f"{source}:{ex['example_id']}", title=title, text=text, source=source, domain=domain,
                        paragraphs=[(0, len(text))],
                    )
                    passages[(title, text)] = doc
                s, e = spans[0]
                doc.questions.append(LongDocQuestion(str(ex["example_id"]), ex["question_text"], text[s:e], s))
    yield from passages.values()


Converter = Callable[[Sequence[Path], str, str], Iterator[LongDocument]]

#: Format name (as a recipe writes it) -> converter.
CONVERTERS: dict[str, Converter] = {"squad": squad_documents, "qed": qed_documents}
