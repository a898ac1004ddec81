"""The long-evidence benchmark format: long documents whose questions' gold evidence is a
span of several sentences, given as exact character spans.

Why a format of its own: the SQuAD-style data the project trains on marks an answer of a few
words, so "did retrieval find it" is a question about one sentence. Evidence that runs over a
paragraph or more (a story section, a passage of a manual) asks something else: how much of
it a reader gets within a token budget. That needs the gold evidence as character spans of
the document, exactly, so that any system's passages (sentences, windows, chunks) can be
scored against it by character overlap.

One JSON file::

    {"format": "landmark-rag-long-evidence", "version": 1,
     "sources": [{"name": "fairytaleqa", "repository": "...", "commit": "...",
                  "licence": "...", "source_splits": ["val", "test"]}],
     "documents": [
        {"id": "fairytaleqa:the-magic-mirror", "source": "fairytaleqa", "source_split": "val",
         "title": "The Magic Mirror", "split": "validation", "text": "...",
         "questions": [{"id": "fairytaleqa:the-magic-mirror:3", "question": "...",
                        "answers": ["..."], "evidence": [[812, 1530], [1532, 2210]],
                        "split": "validation"}]}]}

``split`` is assigned per document (:func:`assign_split`), so no document is in both; the
question's ``split`` repeats its document's for readers that flatten questions.
``source_split`` names the split of the source set a document came from: only evaluation
splits are used, so that someone training on the source's training split later does not
train on this benchmark. :func:`load_long_evidence` checks every span on reading.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from landmark_rag.errors import LandmarkRagError

FORMAT = "landmark-rag-long-evidence"
VERSION = 1
#: the two benchmark splits: ``validation`` is where anything may be tuned, ``heldout`` is
#: where figures are reported and nothing is tuned
SPLITS = ("validation", "heldout")
#: a question whose gold evidence is shorter than this (characters, all spans together) is
#: not long evidence: a single short sentence is what the SQuAD benchmark already measures
MIN_EVIDENCE_CHARS = 150
#: the committed benchmark file, relative to the repository root
DEFAULT_PATH = Path("data") / "long-evidence" / "long-evidence-v1.json"


class LongEvidenceFormatError(LandmarkRagError, ValueError):
    """A long-evidence file breaks the format (a span off the text, an unknown split, ...)."""


@dataclass(frozen=True, slots=True)
class EvidenceQuestion:
    """A question with its gold evidence as sorted, disjoint character spans of its document."""

    qid: str
    question: str
    evidence: tuple[tuple[int, int], ...]
    answers: tuple[str, ...] = ()

    @property
    def evidence_chars(self) -> int:
        return sum(e - s for s, e in self.evidence)


@dataclass(frozen=True, slots=True)
class EvidenceDocument:
    """A long document of one source set, its benchmark split and its questions."""

    doc_id: str
    source: str
    source_split: str
    title: str
    text: str
    split: str
    questions: tuple[EvidenceQuestion, ...] = ()


@dataclass(slots=True)
class LongEvidenceSet:
    """Documents (with their questions) and the provenance of each source set."""

    documents: list[EvidenceDocument]
    sources: list[dict[str, Any]] = field(default_factory=list)

    @property
    def n_questions(self) -> int:
        return sum(len(d.questions) for d in self.documents)

    def counts(self) -> dict[str, dict[str, dict[str, int]]]:
        """``{source: {split: {"documents": n, "questions": n}}}``, for READMEs and reports."""
        out: dict[str, dict[str, dict[str, int]]] = {}
        for d in self.documents:
            c = out.setdefault(d.source, {}).setdefault(d.split, {"documents": 0, "questions": 0})
            c["documents"] += 1
            c["questions"] += len(d.questions)
        return out


def assign_split(doc_id: str) -> str:
    """``validation`` for about a third of documents, ``heldout`` for the rest.

    A hash of the document id, not a shuffle: the assignment of a document never depends on
    which other documents a version of the file holds, so adding a source later moves no
    existing document between splits.
    """
    h = int.from_bytes(hashlib.sha256(doc_id.encode("utf-8")).digest()[:8], "big")
    return "validation" if h % 3 == 0 else "heldout"


def merge_spans(spans: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Sorted, disjoint spans (overlapping or touching ones joined); empty spans dropped."""
    out: list[list[int]] = []
    for s, e in sorted((int(s), int(e)) for s, e in spans if e > s):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return tuple((s, e) for s, e in out)


def locate(text: str, evidence: str, *, near: int = 0) -> tuple[int, int] | None:
    """The span of ``evidence`` in ``text`` (the first occurrence at or after ``near``, else
    the first anywhere), or ``None`` when it is not there verbatim. Converters drop what this
    cannot find instead of guessing a fuzzy position."""
    if not evidence:
        return None
    i = text.find(evidence, near)
    if i < 0:
        i = text.find(evidence)
    return None if i < 0 else (i, i + len(evidence))


def check_document(doc: EvidenceDocument) -> None:
    """Raise ``ValueError`` unless ``doc`` can be stored: an id, text, a known split, and every
    question's spans sorted, disjoint and inside the text."""
    if not doc.doc_id or not doc.text.strip():
        raise ValueError("a document needs an id and non-blank text")
    if doc.split not in SPLITS:
        raise ValueError(f"document {doc.doc_id!r}: split {doc.split!r} is not one of {SPLITS}")
    n = len(doc.text)
    for q in doc.questions:
        if not q.evidence:
            raise ValueError(f"question {q.qid!r} has no evidence span")
        last = 0
        for s, e in q.evidence:
            if not (last <= s < e <= n):
                raise ValueError(f"question {q.qid!r}: span {[s, e]} is out of order or outside the text ({n})")
            last = e


def _question_json(q: EvidenceQuestion, split: str) -> dict[str, Any]:
    return {"id": q.qid, "question": q.question, "answers": list(q.answers),
            "evidence": [list(s) for s in q.evidence], "split": split}


def _document_json(d: EvidenceDocument) -> dict[str, Any]:
    return {"id": d.doc_id, "source": d.source, "source_split": d.source_split, "title": d.title,
            "split": d.split, "text": d.text, "questions": [_question_json(q, d.split) for q in d.questions]}


def write_long_evidence(path: str | os.PathLike[str], data: LongEvidenceSet) -> None:
    """Write ``data`` (every document checked first) as one JSON file, documents in order."""
    for d in data.documents:
        check_document(d)
    ids = [d.doc_id for d in data.documents]
    if len(set(ids)) != len(ids):
        raise ValueError("document ids must be unique")
    documents = [_document_json(d) for d in data.documents]
    head = {"format": FORMAT, "version": VERSION, "sources": data.sources}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    # one document per line: a diff of a new version shows which documents changed
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(json.dumps(head, ensure_ascii=False)[:-1] + ', "documents": [\n')
        f.writelines(json.dumps(doc, ensure_ascii=False) + (",\n" if i + 1 < len(ids) else "\n") for i, doc in enumerate(documents))
        f.write("]}\n")
    tmp.replace(path)


def _parse_document(raw: dict[str, Any]) -> EvidenceDocument:
    questions = tuple(
        EvidenceQuestion(
            qid=str(q["id"]), question=str(q["question"]),
            evidence=tuple((int(s), int(e)) for s, e in q["evidence"]),
            answers=tuple(str(a) for a in q.get("answers", ())),
        )
        for q in raw.get("questions", [])
    )
    doc = EvidenceDocument(
        doc_id=str(raw["id"]), source=str(raw["source"]), source_split=str(raw.get("source_split", "")),
        title=str(raw.get("title") or raw["id"]), text=str(raw["text"]), split=str(raw["split"]),
        questions=questions,
    )
    for q in raw.get("questions", []):
        if q.get("split", doc.split) != doc.split:
            raise ValueError(f"question {q['id']!r} has split {q['split']!r}, its document {doc.split!r}")
    return doc


def load_long_evidence(
    path: str | os.PathLike[str] = DEFAULT_PATH,
    *,
    split: str | None = None,
    sources: Sequence[str] | None = None,
    max_questions_per_doc: int | None = None,
) -> LongEvidenceSet:
    """Read a long-evidence file, checking every document and span.

    ``split`` keeps one benchmark split (``validation`` or ``heldout``; ``None``: both),
    ``sources`` keeps the named source sets, ``max_questions_per_doc`` keeps each document's
    first questions only (a quicker development run; the order is the source's).
    """
    if split is not None and split not in SPLITS:
        raise LongEvidenceFormatError(f"unknown split {split!r}: expected one of {SPLITS}")
    path = Path(path).expanduser()
    try:
        with open(path, encoding="utf-8") as f:
            payload = json.load(f)
    except (OSError, json.JSONDecodeError) as exc:
        raise LongEvidenceFormatError(f"{path}: {exc}") from exc
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise LongEvidenceFormatError(f"{path}: not a {FORMAT} file")
    docs: list[EvidenceDocument] = []
    for i, raw in enumerate(payload.get("documents", [])):
        try:
            doc = _parse_document(raw)
            check_document(doc)
        except (KeyError, TypeError, ValueError) as exc:
            raise LongEvidenceFormatError(f"{path}: document {i}: {exc}") from exc
        if split is not None and doc.split != split:
            continue
        if sources is not None and doc.source not in sources:
            continue
        if max_questions_per_doc is not None:
            doc = EvidenceDocument(doc.doc_id, doc.source, doc.source_split, doc.title, doc.text, doc.split,
                                   doc.questions[:max_questions_per_doc])
        docs.append(doc)
    return LongEvidenceSet(docs, list(payload.get("sources", [])))


def is_long_evidence_path(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a long-evidence file (looks at the first bytes only)."""
    p = Path(path).expanduser()
    if not p.is_file() or not p.name.endswith(".json"):
        return False
    with open(p, encoding="utf-8", errors="replace") as f:
        head = f.read(200)
    return f'"format": "{FORMAT}"' in head


# --- FairytaleQA ------------------------------------------------------------------------

_SECTION_LIST = re.compile(r"\d+")


def _story_title(name: str) -> str:
    return " ".join(w[:1].upper() + w[1:] for w in name.replace("-", " ").split())


def convert_fairytaleqa_story(
    name: str,
    source_split: str,
    sections: Sequence[tuple[int, str]],
    questions: Sequence[dict[str, str]],
    *,
    min_evidence_chars: int = MIN_EVIDENCE_CHARS,
) -> tuple[EvidenceDocument, int]:
    """One FairytaleQA story as a document, and how many of its questions were dropped.

    ``sections`` are the story file's ``(section, text)`` rows; the document is their texts
    joined by a blank line, and each section's span is recorded while joining, so a
    question's evidence (its ``cor_section`` list) is exact by construction and checked
    against the section text once more. A question is dropped when a section it cites does
    not exist or its evidence is shorter than ``min_evidence_chars``.
    """
    doc_id = f"fairytaleqa:{name}"
    parts: list[str] = []
    spans: dict[int, tuple[int, int]] = {}
    pos = 0
    for number, section_text in sections:
        if parts:
            parts.append("\n\n")
            pos += 2
        spans[int(number)] = (pos, pos + len(section_text))
        parts.append(section_text)
        pos += len(section_text)
    text = "".join(parts)
    section_texts = {int(n): t for n, t in sections}
    kept: list[EvidenceQuestion] = []
    dropped = 0
    for row in questions:
        cited = [int(x) for x in _SECTION_LIST.findall(row.get("cor_section", ""))]
        if not cited or any(c not in spans for c in cited):
            dropped += 1
            continue
        for c in cited:  # the span must read back as the source's own section text
            s, e = spans[c]
            if text[s:e] != section_texts[c]:
                raise AssertionError(f"{doc_id}: section {c} does not read back")
        evidence = merge_spans(spans[c] for c in cited)
        answers = tuple(a.strip() for a in (row.get("answer1", ""), row.get("answer4", "")) if a and a.strip())
        q = EvidenceQuestion(f"{doc_id}:{row['question_id']}", row["question"].strip(), evidence, answers)
        if q.evidence_chars < min_evidence_chars:
            dropped += 1
            continue
        kept.append(q)
    doc = EvidenceDocument(doc_id, "fairytaleqa", source_split, _story_title(name), text, assign_split(doc_id),
                           tuple(kept))
    return doc, dropped


__all__ = [
    "DEFAULT_PATH",
    "FORMAT",
    "MIN_EVIDENCE_CHARS",
    "SPLITS",
    "EvidenceDocument",
    "EvidenceQuestion",
    "LongEvidenceFormatError",
    "LongEvidenceSet",
    "assign_split",
    "check_document",
    "convert_fairytaleqa_story",
    "is_long_evidence_path",
    "load_long_evidence",
    "locate",
    "merge_spans",
    "write_long_evidence",
]
