"""Reading training and evaluation data: one record type, one loader per format, one selector.

Every source becomes :class:`Article` records (a long document with its paragraphs and its
questions' exact answer offsets): SQuAD-format JSON through :func:`read_squad`, the
long-document JSON-lines format through :func:`read_longdocs`. :func:`select` picks articles
by the selection spec that ``landmark-rag train`` and ``landmark-rag eval`` share.

A low layer: it imports nothing of training or evaluation, which both build on it.
"""

from landmark_rag.datasets.longdoc import (
    LongDocFormatError,
    check_longdoc,
    is_longdoc_path,
    iter_longdocs,
    read_longdocs,
    write_longdocs,
)
from landmark_rag.datasets.records import Article, Question
from landmark_rag.datasets.select import SelectionError, read_titles, select
from landmark_rag.datasets.squad import PARAGRAPH_SEPARATOR, parse_squad, read_squad

__all__ = [
    "PARAGRAPH_SEPARATOR",
    "Article",
    "LongDocFormatError",
    "Question",
    "SelectionError",
    "check_longdoc",
    "is_longdoc_path",
    "iter_longdocs",
    "parse_squad",
    "read_longdocs",
    "read_squad",
    "read_titles",
    "select",
    "write_longdocs",
]
