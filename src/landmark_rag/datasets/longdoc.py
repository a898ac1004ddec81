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
"""

from __future__ import annotations

import gzip
import io
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from landmark_rag.errors import LandmarkRagError

#: File suffixes of the format (a folder holding such files is read file by file, sorted).
SUFFIXES = (".jsonl", ".jsonl.gz")


class LongDocFormatError(LandmarkRagError, ValueError):
    """A line of a long-document file breaks the format (names the file and line)."""


@dataclass(frozen=True, slots=True)
class LongDocQuestion:
    """A question whose answer is ``text[start:start + len(answer)]`` of its document."""

    id: str
    question: str
    answer: str
    start: int

    @property
    def end(self) -> int:
        return self.start + len(self.answer)


@dataclass(slots=True)
class LongDocument:
    """One long document with its paragraphs (exact character spans) and questions."""

    id: str
    title: str
    text: str
    source: str
    domain: str = ""
    paragraphs: list[tuple[int, int]] = field(default_factory=list)
    questions: list[LongDocQuestion] = field(default_factory=list)

    def check(self) -> None:
        """Raise ``ValueError`` unless every span lies in the text and every answer is exact."""
        n = len(self.text)
        if not self.id or not self.text.strip():
            raise ValueError("a document needs an id and non-blank text")
        last = 0
        for s, e in self.paragraphs:
            if not (last <= s < e <= n):
                raise ValueError(f"paragraph span {[s, e]} is out of order or outside the text ({n} characters)")
            last = e
        for q in self.questions:
            if not q.answer or self.text[q.start : q.end] != q.answer:
                raise ValueError(f"question {q.id!r}: text[{q.start}:{q.end}] is not the answer {q.answer!r}")

    def paragraph_of(self, offset: int) -> int:
        """Index of the paragraph holding character ``offset`` (``-1`` when between paragraphs)."""
        for i, (s, e) in enumerate(self.paragraphs):
            if s <= offset < e:
                return i
        return -1

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["paragraphs"] = [list(p) for p in self.paragraphs]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LongDocument:
        questions = [LongDocQuestion(str(q["id"]), q["question"], q["answer"], int(q["start"]))
                     for q in data.get("questions", [])]
        return cls(
            id=str(data["id"]), title=str(data.get("title") or data["id"]), text=data["text"],
            source=str(data.get("source", "")), domain=str(data.get("domain", "")),
            paragraphs=[(int(s), int(e)) for s, e in data.get("paragraphs", [])], questions=questions,
        )


def _open(path: Path, mode: str, *, gz: bool | None = None) -> IO[str]:
    if path.name.endswith(".gz") if gz is None else gz:
        # mtime=0: the same documents give the same bytes, so a recipe's checksums reproduce
        raw = gzip.GzipFile(path, mode + "b", mtime=0)
        return io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
    return open(path, mode, encoding="utf-8", newline="\n")


def write_longdocs(path: str | os.PathLike[str], documents: Iterable[LongDocument]) -> int:
    """Write ``documents`` (each checked first) as JSON lines; returns how many."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    tmp = path.with_name(path.name + ".tmp")
    with _open(tmp, "w", gz=path.name.endswith(".gz")) as f:
        for doc in documents:
            doc.check()
            f.write(json.dumps(doc.to_json(), ensure_ascii=False, sort_keys=True) + "\n")
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


def iter_longdocs(path: str | os.PathLike[str]) -> Iterator[LongDocument]:
    """Documents of a file (or folder of files) in order, each checked (:class:`LongDocFormatError`)."""
    for file in longdoc_files(path):
        with _open(file, "r") as f:
            for line_no, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    doc = LongDocument.from_json(json.loads(line))
                    doc.check()
                except (KeyError, TypeError, ValueError) as exc:
                    raise LongDocFormatError(f"{file}:{line_no}: {exc}") from exc
                yield doc


def read_longdocs(path: str | os.PathLike[str]) -> list[LongDocument]:
    """All documents of a file or folder (:func:`iter_longdocs`)."""
    return list(iter_longdocs(path))


__all__ = [
    "SUFFIXES",
    "LongDocFormatError",
    "LongDocQuestion",
    "LongDocument",
    "is_longdoc_path",
    "iter_longdocs",
    "longdoc_files",
    "read_longdocs",
    "write_longdocs",
]
