"""Training documents from any ``--data`` source: SQuAD-format files, prepared long-document
sets, or plain text.

Every source gives :class:`~landmark_rag.datasets.Article` records. A SQuAD-format ``.json``
file gives articles with questions (:func:`~landmark_rag.datasets.read_squad`). A prepared
long-document set (``.jsonl``/``.jsonl.gz`` files, or the folder ``landmark-rag train --prepare``
writes; :mod:`landmark_rag.datasets.longdoc`) gives its documents with their questions. Anything
else - a ``.txt``/``.md`` file, or a folder searched recursively for them - gives one
question-less article per file. Why plain text: a user adapting a model to their own corpus
rarely has questions for it, and the self-distillation term of the objective needs none
(docs/training.md, "Plain-text data").

Training reads each document's sentences on every step, so :func:`segment_articles` segments
them once, the encoder's way, into :class:`SegmentedArticle` (the record plus its sentences).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from landmark_rag.datasets import (
    Article,
    LongDocFormatError,
    Question,
    SelectionError,
    is_longdoc_path,
    read_longdocs,
    read_squad,
    select,
)
from landmark_rag.train.config import DEFAULT_SELECTION, TrainConfig, TrainingInputError
from landmark_rag.types import Sentence

#: File suffixes read as plain-text documents (a file given directly must have one of them,
#: or be ``.json``; inside a folder, other files are passed over).
TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".rst")

_PARAGRAPH = re.compile(r"\S(?:.*?\S)?(?=\s*\n[ \t\r\f\v]*\n|\s*\Z)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class SegmentedArticle:
    """A training or validation document with the sentences its encoder segments it into.

    A second type rather than a ``sentences`` field (or a cached segmentation) on
    :class:`~landmark_rag.datasets.Article`, because an article has no one segmentation:

    - the sentences depend on the encoder that reads the article (its segmenter, language
      and window), and one article is read by several: each model a run trains or
      evaluates, each segmenter ``benchmarks/segmenters.py`` compares;
    - readers segment it under different names: training as ``segment(text, title)`` (a
      title is what selections and reports name), evaluation's corpus as
      ``segment(text, doc_id)`` (the id the store writes), so the sentences' ``doc_id``
      differ;
    - an ``Article`` is the frozen, hashable record every data source, preparation recipe
      and evaluation shares (``datasets/records.py``); a field only training fills would be
      empty everywhere else, or hold another reader's sentences.

    So the record stays the data, and this pairs it with one encoder's reading of it for the
    length of one training run (:func:`segment_articles`, once per run: every step reads it).
    """

    article: Article
    #: ``segment(article.text, article.title)`` of the run's encoder, in text order.
    sentences: tuple[Sentence, ...]

    def answer_span(self, question: Question) -> list[int]:
        """Indices of the sentences the question's (first) answer touches."""
        starts = [s.start for s in self.sentences]
        first = max(0, bisect_right(starts, question.answer_start) - 1)
        last = max(first, bisect_right(starts, max(question.answer_start, question.answer_end - 1)) - 1)
        return list(range(first, last + 1))


def segment_articles(
    articles: Iterable[Article], segment: Callable[[str, str], list[Sentence]]
) -> list[SegmentedArticle]:
    """Each article with ``segment(text, title)`` (the encoder's own segmentation)."""
    return [SegmentedArticle(a, tuple(segment(a.text, a.title))) for a in articles]


def questions_by_paragraph(article: Article) -> dict[int, list[str]]:
    """Question texts by the paragraph their (first) answer is in, in question order (the
    pairwise and pseudo-document stages pair a paragraph with its own questions)."""
    out: dict[int, list[str]] = {}
    for q in article.questions:
        out.setdefault(article.paragraph_of(q.answer_start), []).append(q.question)
    return out


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
        return read_squad(path)
    if kind == "longdoc":
        return load_longdoc_documents(path)
    return load_text_documents(path)


def load_longdoc_documents(path: str | Path) -> list[Article]:
    """A prepared long-document set as articles (every answer offset checked on reading)."""
    try:
        return read_longdocs(path)
    except LongDocFormatError as exc:
        raise TrainingInputError(f"--data {path}: {exc}") from exc


def select_documents(config: TrainConfig) -> tuple[list[Article], list[Article]]:
    """Training and validation documents of every ``config.data`` source.

    A source is a path (its documents selected by ``train_articles`` / ``val_articles``, else
    its kind's :data:`~landmark_rag.train.config.DEFAULT_SELECTION`) or a mapping with its own
    ``path``, ``train`` and ``val`` selections; a selection is the spec of
    :func:`landmark_rag.datasets.select`, the one ``landmark-rag eval --select`` takes. A document
    in both sets is refused: validation must never score a document the model was trained on.
    """
    train: list[Article] = []
    val: list[Article] = []
    for entry in config.data:
        path, train_spec, val_spec = _source_entry(entry, config)
        arts = load_documents(path)
        try:
            train.extend(select(arts, train_spec))
            val.extend(select(arts, val_spec))
        except SelectionError as exc:
            raise TrainingInputError(f"--data {path}: {exc}") from exc
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
        articles.append(Article(doc_id=f.doc_id, title=f.doc_id, text=text, paragraphs=tuple(paragraphs)))
    return articles
