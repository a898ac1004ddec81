"""Converters: each public dataset's own format -> :class:`~landmark_rag.datasets.Article`.

One function per format, registered in :data:`CONVERTERS`; a recipe names the format of each
source. Every converter keeps the dataset's text byte for byte and moves answer offsets into
the document it builds, so :func:`~landmark_rag.datasets.check_longdoc` can verify each answer
exactly when the document is written.
"""

from __future__ import annotations

import csv
import io
import json
import re
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


#: File-name endings of FairytaleQA's two files per story (a story's sections, its questions).
FAIRYTALEQA_STORY = "-story.csv"
FAIRYTALEQA_QUESTIONS = "-questions.csv"
_SECTION_NUMBER = re.compile(r"\d+")


def fairytale_title(name: str) -> str:
    """A readable title from a FairytaleQA file stem (``the-magic-mirror`` -> ``The Magic Mirror``):
    the same form the long-evidence benchmark gives its stories, so the recipe's title exclusion
    compares like with like."""
    return " ".join(w[:1].upper() + w[1:] for w in name.replace("-", " ").split())


def _csv_rows(path: Path) -> list[dict[str, str]]:
    # read_text turns the few files' CRLF line ends into LF, as the long-evidence benchmark's
    # build reads them: a copied story then has the same text on both sides; newline="" lets
    # csv keep the line breaks inside quoted section texts
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` narrowed to its first and last non-blank character: a span that ends in
    a line break would otherwise reach into the next section's first sentence."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def fairytaleqa_documents(files: Sequence[Path], source: str, domain: str) -> Iterator[Article]:
    """FairytaleQA (``data-by-train-split``): one document per story, its sections joined by a
    blank line (as the long-evidence benchmark joins them, so a copied story has the same text
    and the text exclusion catches it); each section is one paragraph.

    The dataset's answers are free-form (written by annotators, often not in the text), so the
    answer a question is trained on is its *evidence*: the text of the sections it cites
    (``cor_section``), stored as the answer with its exact offset. The trainer's span is then
    every sentence of those sections and ``z`` is the last one - the paper's ``c_{z-m..z}``.
    A question citing sections that are not one run (e.g. 2 and 5) is left out: the objective's
    span is contiguous and the sections between were not cited. A question citing a section the
    story does not have is left out too.
    """
    stories = {f.name[: -len(FAIRYTALEQA_STORY)]: f for f in files if f.name.endswith(FAIRYTALEQA_STORY)}
    asked = {f.name[: -len(FAIRYTALEQA_QUESTIONS)]: f for f in files if f.name.endswith(FAIRYTALEQA_QUESTIONS)}
    for name in sorted(stories):
        parts: list[str] = []
        spans: dict[int, tuple[int, int]] = {}
        pos = 0
        for row in _csv_rows(stories[name]):
            if parts:
                parts.append("\n\n")
                pos += 2
            spans[int(row["section"])] = (pos, pos + len(row["text"]))
            parts.append(row["text"])
            pos += len(row["text"])
        text = "".join(parts)
        spans = {n: _trimmed(text, s, e) for n, (s, e) in spans.items()}
        spans = {n: se for n, se in spans.items() if se[1] > se[0]}  # an empty section has no sentence
        questions = []
        for row in _csv_rows(asked[name]) if name in asked else []:
            cited = sorted({int(x) for x in _SECTION_NUMBER.findall(row.get("cor_section") or "")})
            if not cited or any(c not in spans for c in cited) or cited != list(range(cited[0], cited[-1] + 1)):
                continue
            start, end = spans[cited[0]][0], spans[cited[-1]][1]
            question = (row.get("question") or "").strip()
            if question:
                questions.append(Question(f"{name}:{row['question_id']}", question, (text[start:end],), (start,)))
        yield Article(
            doc_id=f"{source}:{name}", title=fairytale_title(name), text=text,
            paragraphs=tuple(spans[n] for n in sorted(spans, key=lambda n: spans[n])),
            questions=tuple(questions), source=source, domain=domain,
        )


Converter = Callable[[Sequence[Path], str, str], Iterator[Article]]

#: Format name (as a recipe writes it) -> converter.
CONVERTERS: dict[str, Converter] = {
    "squad": squad_documents, "qed": qed_documents, "fairytaleqa": fairytaleqa_documents,
}
