"""A file's document text, or a clear reason why it is not a document.

What a file is and how it is read (PDF, Word, HTML, Markdown, plain text and its decoding
rules) is decided in one place, :mod:`landmark_rag.extract`; the ingestion only asks it.
``BadFileError`` and ``decode_bytes`` live there and are re-exported here, where they have
always been imported from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from landmark_rag.extract import extract
from landmark_rag.extract.errors import BadFileError
from landmark_rag.extract.text import SNIFF_BYTES, decode_bytes


def read_document(path: str | Path) -> str:
    """The document text of one file (:func:`landmark_rag.extract.extract`, which also gives
    its pages and headings); a file that is none is ``BadFileError``."""
    return extract(path).text


def decode_text(value: Any) -> str:
    """A document's text given as a value (a dataset column): ``str`` as is, ``bytes`` by
    :func:`decode_bytes`; no text, or text without a word, is :class:`BadFileError`."""
    if isinstance(value, bytes):
        return decode_bytes(value)
    if value is None:
        raise BadFileError("empty document (no text)")
    if not isinstance(value, str):
        raise BadFileError(f"text is {type(value).__name__}, not str")
    if not value.strip():
        raise BadFileError("empty document (whitespace only)")
    return value


__all__ = ["SNIFF_BYTES", "BadFileError", "decode_bytes", "decode_text", "read_document"]
