"""Turning a file into document text: PDF, Word, HTML, Markdown and plain text.

``extract(path_or_bytes)`` returns an :class:`Extracted`: the text that gets segmented
and encoded, plus where its pages (PDF) and headings are, as exact character spans of that
text, so every sentence can name its page and its section. Framework-free: the indexer,
the CLI, Ray workers and the adapters all call this one function.

The PDF, Word and HTML libraries come with the ``documents`` extra and are imported only
when a file of that format is read; without them such a file raises
:class:`MissingExtraError`, whose reason names the extra.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from landmark_rag.extract.detect import DOCX, HTML, MARKDOWN, MIME_TYPES, PDF, SUFFIXES, TEXT, detect_format, sniff
from landmark_rag.extract.errors import EXTRA_HINT, BadFileError, DocumentError, MissingExtraError
from landmark_rag.extract.result import Extracted, HeadingSpan, PageSpan

Extractor = Callable[[bytes], Extracted]


def _pdf(data: bytes) -> Extracted:
    from landmark_rag.extract.pdf import extract_pdf

    return extract_pdf(data)


def _docx(data: bytes) -> Extracted:
    from landmark_rag.extract.docx import extract_docx

    return extract_docx(data)


def _html(data: bytes) -> Extracted:
    from landmark_rag.extract.html import extract_html

    return extract_html(data)


def _markdown(data: bytes) -> Extracted:
    from landmark_rag.extract.markdown import extract_markdown

    return extract_markdown(data)


def _text(data: bytes) -> Extracted:
    from landmark_rag.extract.text import extract_text

    return extract_text(data)


#: format -> extractor. Modules load on first use: ``import landmark_rag.extract`` costs
#: nothing beyond the dataclasses, whatever the formats.
EXTRACTORS: dict[str, Extractor] = {PDF: _pdf, DOCX: _docx, HTML: _html, MARKDOWN: _markdown, TEXT: _text}


def extract(
    source: str | os.PathLike[str] | bytes, *, suffix: str | None = None, mime: str | None = None
) -> Extracted:
    """Extract a document from a path or from its bytes.

    The format comes from the bytes where they prove it (PDF, DOCX), else from ``mime``,
    ``suffix`` (for bytes; a path's own suffix by default) and an HTML doctype; anything
    else is plain text. Raises :class:`DocumentError` (a ``BadFileError``) with a one-line
    ``reason`` for a file that has no document text: encrypted, scanned, damaged, empty,
    or of a format whose library is missing (:class:`MissingExtraError`).
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    else:
        path = Path(source)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise DocumentError(f"unreadable: {exc.strerror or exc}") from None
        suffix = suffix if suffix is not None else path.suffix
    if not data:
        raise DocumentError("empty file")
    return EXTRACTORS[detect_format(data, suffix=suffix, mime=mime)](data)


__all__ = [
    "DOCX",
    "EXTRACTORS",
    "EXTRA_HINT",
    "HTML",
    "MARKDOWN",
    "MIME_TYPES",
    "PDF",
    "SUFFIXES",
    "TEXT",
    "BadFileError",
    "DocumentError",
    "Extracted",
    "Extractor",
    "HeadingSpan",
    "MissingExtraError",
    "PageSpan",
    "detect_format",
    "extract",
    "sniff",
]
