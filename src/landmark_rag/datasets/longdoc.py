"""The training-data format: long documents with questions and exact answer offsets.

One JSON object per line (``.jsonl``, or gzip-compressed ``.jsonl.gz``)::

    {"id": "squad-v1.1-train:Beyonce", "title": "Beyonce", "source": "squad-v1.1-train",
     "domain": "wikipedia", "text": "...", "paragraphs": [[0, 812], [814, 1530], ...],
     "questions": [{"id": "56be85543aeaaa14008c9063", "question": "When did Beyonce ...?",
                    "answer": "in the late 1990s", "start": 269}]}

Why this shape: the landmark objective needs whole documents (every sentence of a document is a
negative for the others) and the character span of each answer in that document, so that the
answer's sentences can be found with whatever segmentation the encoder uses. Paragraph spans keep
what pairwise and pseudo-document stages are built from. Every source a preparation recipe reads
(SQuAD-format files, other QA sets) is converted to this one format, and the trainer reads only
this and plain text; :func:`read_longdocs` checks every offset, so a converter bug cannot train
on a wrong answer position silently.

In memory a line is a :class:`~landmark_rag.datasets.records.Article` (``id`` is its ``doc_id``;
a question's ``answer`` and ``start`` are its first answer and that answer's offset).
"""

from __future__ import annotations

import gzip
import io
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from landmark_rag.datasets.records import Article, Question
from landmark_rag.errors import LandmarkRagError

#: File suffixes of the format (a folder holding such files is read file by file, sorted).
SUFFIXES = (".jsonl", ".jsonl.gz")


class LongDocFormatError(LandmarkRagError, ValueError):
    """A line of a long-document file breaks the format (names the file and line)."""


def check_longdoc(article: Article) -> None:
    """Raise ``ValueError`` unless ``article`` can be stored: an id, non-blank text, paragraph
    spans in order inside the text, and every answer exactly at its offset."""
    n = len(article.text)
    if not article.doc_id or not article.text.strip():
        raise ValueError("a document needs an id and non-blank text")
    last = 0
    for s, e in article.paragraphs:
        if not (last <= s < e <= n):
            raise ValueError(f"paragraph span {[s, e]} is out of order or outside the text ({n} characters)")
        last = e
    for q in article.questions:
        for answer, start in zip(q.answers, q.answer_starts, strict=True):
            end = start + len(answer)
            if not answer or article.text[start:end] != answer:
                raise ValueError(f"question {q.qid!r}: text[{start}:{end}] is not the answer {answer!r}")


def _to_json(article: Article) -> dict[str, Any]:
    # one answer per question, the first (the training answer): the format's version 1
    return {
        "id": article.doc_id, "title": article.title, "text": article.text, "source": article.source,
        "domain": article.domain, "paragraphs": [list(p) for p in article.paragraphs],
        "questions": [{"id": q.qid, "question": q.question, "answer": q.answer, "start": q.answer_start}
                      for q in article.questions],
    }


def _from_json(data: dict[str, Any]) -> Article:
    questions = tuple(Question(str(q["id"]), q["question"], (q["answer"],), (int(q["start"]),))
                      for q in data.get("questions", []))
    return Article(
        doc_id=str(data["id"]), title=str(data.get("title") or data["id"]), text=data["text"],
        paragraphs=tuple((int(s), int(e)) for s, e in data.get("paragraphs", [])), questions=questions,
        source=str(data.get("source", "")), domain=str(data.get("domain", "")),
    )


def _open(path: Path, mode: str, *, gz: bool | None = None) -> IO[str]:
    if path.name.endswith(".gz") if gz is None else gz:
        # mtime=0: the same documents give the same bytes, so a recipe's checksums reproduce
        raw = gzip.GzipFile(path, mode + "b", mtime=0)
        return io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
    return open(path, mode, encoding="utf-8", newline="\n")


def write_longdocs(path: str | os.PathLike[str], documents: Iterable[Article]) -> int:
    """Write ``documents`` (each checked first, :func:`check_longdoc`) as JSON lines; returns how
    many. A question keeps its first answer only: the format stores one per question."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    tmp = path.with_name(path.name + ".tmp")
    with _open(tmp, "w", gz=path.name.endswith(".gz")) as f:
        for doc in documents:
            check_longdoc(doc)
            f.write(json.dumps(_to_json(doc), ensure_ascii=False, sort_keys=True) + "\n")
            n += 1
    tmp.replace(path)  # a killed preparation never leaves a truncated file under the real name
    return n


def longdoc_files(path: str | os.PathLike[str]) -> list[Path]:
    """The long-document files at ``path``: the file itself, or a folder's files (sorted)."""
    p = Path(path).expanduser()
    if p.is_dir():
        return sorted(f for f in p.iterdir() if f.name.endswith(SUFFIXES))
    return [p]


def is_longdoc_path(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a long-document file, or a folder holding some."""
    p = Path(path).expanduser()
    if p.is_dir():
        return any(f.name.endswith(SUFFIXES) for f in p.iterdir())
    return p.name.endswith(SUFFIXES)


def iter_longdocs(path: str | os.PathLike[str]) -> Iterator[Article]:
    """Documents of a file (or folder of files) in order, each checked (:class:`LongDocFormatError`)."""
    for file in longdoc_files(path):
        with _open(file, "r") as f:
            for line_no, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    doc = _from_json(json.loads(line))
                    check_longdoc(doc)
                except (KeyError, TypeError, ValueError) as exc:
                    raise LongDocFormatError(f"{file}:{line_no}: {exc}") from exc
                yield doc


def read_longdocs(path: str | os.PathLike[str]) -> list[Article]:
    """All documents of a file or folder (:func:`iter_longdocs`)."""
    return list(iter_longdocs(path))


__all__ = [
    "SUFFIXES",
    "LongDocFormatError",
    "check_longdoc",
    "is_longdoc_path",
    "iter_longdocs",
    "longdoc_files",
    "read_longdocs",
    "write_longdocs",
]
