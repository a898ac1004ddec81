"""Training documents from any ``--data`` source: SQuAD-format files, prepared long-document
sets, or plain text.

A SQuAD-format ``.json`` file gives articles with questions (``train.squad``). A prepared
long-document set (``.jsonl``/``.jsonl.gz`` files, or the folder ``landmark-rag train --prepare``
writes; :mod:`landmark_rag.datasets.longdoc`) gives its documents with their questions. Anything
else - a ``.txt``/``.md`` file, or a folder searched recursively for them - gives one
question-less :class:`~landmark_rag.train.squad.Article` per file. Why plain text: a user
adapting a model to their own corpus rarely has questions for it, and the
self-distillation term of the objective needs none (docs/training.md, "Plain-text data").
"""

from __future__ import annotations

import re
from pathlib import Path

from landmark_rag.datasets.longdoc import LongDocFormatError, LongDocument, is_longdoc_path, iter_longdocs
from landmark_rag.train.config import DEFAULT_SELECTION, TrainConfig, TrainingInputError
from landmark_rag.train.squad import Article, Question, load_squad, select

#: File suffixes read as plain-text documents (a file given directly must have one of them,
#: or be ``.json``; inside a folder, other files are passed over).
TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".rst")

_PARAGRAPH = re.compile(r"\S(?:.*?\S)?(?=\s*\n[ \t\r\f\v]*\n|\s*\Z)", re.DOTALL)


def source_kind(path: str | Path) -> str:
    """``"squad"`` for a ``.json`` file, ``"longdoc"`` for a prepared long-document set (a
    ``.jsonl``/``.jsonl.gz`` file or a folder of them), ``"text"`` for plain-text files and folders."""
    p = Path(path).expanduser()
    if p.suffix.lower() == ".json" and not p.is_dir():
        return "squad"
    if p.exists() and is_longdoc_path(p):
        return "longdoc"
    return "text"


def load_documents(path: str | Path) -> list[Article]:
    """The documents of one ``--data`` source, in a stable order (files sorted by path)."""
    kind = source_kind(path)
    if kind == "squad":
        return load_squad(path)
    if kind == "longdoc":
        return load_longdoc_documents(path)
    return load_text_documents(path)


def load_longdoc_documents(path: str | Path) -> list[Article]:
    """A prepared long-document set as articles (every answer offset checked on reading)."""
    try:
        return [_article(doc) for doc in iter_longdocs(path)]
    except LongDocFormatError as exc:
        raise TrainingInputError(f"--data {path}: {exc}") from exc


def _article(doc: LongDocument) -> Article:
    questions = [Question(q.question, q.start, q.end, doc.paragraph_of(q.start), q.id) for q in doc.questions]
    return Article(doc.title, doc.text, list(doc.paragraphs), questions)


def select_documents(config: TrainConfig) -> tuple[list[Article], list[Article]]:
    """Training and validation documents of every ``config.data`` source.

    A source is a path (its documents selected by ``train_articles`` / ``val_articles``, else
    its kind's :data:`~landmark_rag.train.config.DEFAULT_SELECTION`) or a mapping with its own
    ``path``, ``train`` and ``val`` selections. A document in both sets is refused: validation
    must never score a document the model was trained on.
    """
    train: list[Article] = []
    val: list[Article] = []
    for entry in config.data:
        path, train_spec, val_spec = _source_entry(entry, config)
        arts = load_documents(path)
        train.extend(select(arts, train_spec) if train_spec else [])
        val.extend(select(arts, val_spec) if val_spec else [])
    overlap = {a.title for a in train} & {a.title for a in val}
    if overlap:
        raise TrainingInputError(f"articles in both training and validation: {sorted(overlap)[:5]}")
    return train, val


def _source_entry(entry: str | dict[str, str], config: TrainConfig) -> tuple[str, str, str]:
    """``(path, train selection, validation selection)`` of one ``data`` entry."""
    if isinstance(entry, dict):
        unknown = set(entry) - {"path", "train", "val"}
        if "path" not in entry or unknown:
            raise TrainingInputError(f"a data entry is a path or {{path, train, val}}, not {entry!r}")
        path = resolve_data_path(str(entry["path"]))
        default_train, default_val = DEFAULT_SELECTION[source_kind(path)]
        return path, str(entry.get("train", default_train)), str(entry.get("val", default_val))
    path = resolve_data_path(str(entry))
    default_train, default_val = DEFAULT_SELECTION[source_kind(path)]
    train_spec = config.train_articles if config.train_articles is not None else default_train
    val_spec = config.val_articles if config.val_articles is not None else default_val
    return path, train_spec, val_spec


#: A data path ``prepared:<name>`` names the training set ``--prepare`` built from the recipe
#: ``<name>`` into the cache, so a shipped config reproduces on any machine that prepared it.
PREPARED_PREFIX = "prepared:"


def resolve_data_path(path: str) -> str:
    """The folder behind ``prepared:<name>``; any other path unchanged."""
    if not path.startswith(PREPARED_PREFIX):
        return path
    from landmark_rag.encode.models.loading import cache_dir

    name = path[len(PREPARED_PREFIX) :]
    folder = cache_dir() / "data" / name
    if not folder.is_dir():
        raise TrainingInputError(
            f"training set {name!r} is not prepared ({folder} is missing): run "
            f"`landmark-rag train --prepare data/training/{name}.json --raw RAW_DIR --download` first"
        )
    return str(folder)


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
