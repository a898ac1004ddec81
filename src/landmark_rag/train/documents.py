"""Training documents from any ``--data`` source: SQuAD-format files or plain text.

A SQuAD-format ``.json`` file gives articles with questions (``train.squad``). Anything
else - a ``.txt``/``.md`` file, or a folder searched recursively for them - gives one
question-less :class:`~landmark_rag.train.squad.Article` per file. Why plain text: a user
adapting a model to their own corpus rarely has questions for it, and the
self-distillation term of the objective needs none (docs/training.md, "Plain-text data").
"""

from __future__ import annotations

import re
from pathlib import Path

from landmark_rag.train.config import TrainingInputError
from landmark_rag.train.squad import Article, load_squad

#: File suffixes read as plain-text documents (a file given directly must have one of them,
#: or be ``.json``; inside a folder, other files are passed over).
TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".rst")

_PARAGRAPH = re.compile(r"\S(?:.*?\S)?(?=\s*\n[ \t\r\f\v]*\n|\s*\Z)", re.S)


def source_kind(path: str | Path) -> str:
    """``"squad"`` for a ``.json`` file, ``"text"`` for plain-text files and folders."""
    p = Path(path)
    return "squad" if p.suffix.lower() == ".json" and not p.is_dir() else "text"


def load_documents(path: str | Path) -> list[Article]:
    """The documents of one ``--data`` source, in a stable order (files sorted by path)."""
    if source_kind(path) == "squad":
        return load_squad(path)
    return load_text_documents(path)


def load_text_documents(path: str | Path) -> list[Article]:
    """One question-less article per plain-text file (empty files are skipped).

    A folder is searched recursively for :data:`TEXT_SUFFIXES`, hidden entries skipped
    (``ingest.discover``, the walk ``landmark-rag index`` uses); the article's title is the
    file's path relative to the folder. Paragraphs are runs of text between blank lines.
    """
    from landmark_rag.ingest.discover import discover_files

    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"--data {path}: no such file or directory")
    if p.is_file() and p.suffix.lower() not in TEXT_SUFFIXES:
        raise TrainingInputError(
            f"--data {path}: not a SQuAD-format .json file nor plain text ({', '.join(TEXT_SUFFIXES)})"
        )
    files = discover_files([p])
    if p.is_dir():
        files = [f for f in files if f.path.suffix.lower() in TEXT_SUFFIXES]
        if not files:
            raise TrainingInputError(f"--data {path}: no {'/'.join(TEXT_SUFFIXES)} files in this folder")
    articles = []
    for f in files:
        text = f.path.read_text(encoding="utf-8", errors="replace")
        if not text.strip():
            continue
        paragraphs = [(m.start(), m.end()) for m in _PARAGRAPH.finditer(text)]
        articles.append(Article(title=f.doc_id, text=text, paragraphs=paragraphs, questions=[]))
    return articles
