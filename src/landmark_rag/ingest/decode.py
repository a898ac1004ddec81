"""Turning a file's bytes into document text, or a clear reason why it is not a document.

Only text that decodes without guessing is indexed: UTF-8 (with or without a BOM) and
UTF-16/32 with a BOM. Guessing a legacy code page would silently index mojibake, and the
character offsets reported by ``query`` must point into the text the user actually has. The
text is kept exactly as decoded (no newline translation) for the same reason.
"""

from __future__ import annotations

import codecs
from pathlib import Path
from typing import Any

from landmark_rag.errors import LandmarkRagError

#: Bytes inspected to tell text from binary.
SNIFF_BYTES = 8192

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),  # before UTF-16 LE: its BOM starts with UTF-16 LE's
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# Control characters that plain text legitimately contains.
_TEXT_CONTROLS = {ord(c) for c in "\t\n\r\f\v\b\x1b"}


class BadFileError(LandmarkRagError, ValueError):
    """A file that is not a plain-text document; ``reason`` is one short phrase."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def decode_bytes(data: bytes) -> str:
    """Decode a document's bytes; raise :class:`BadFileError` for binary, undecodable or empty."""
    if not data:
        raise BadFileError("empty file")
    encoding = next((enc for bom, enc in _BOMS if data.startswith(bom)), None)
    if encoding is None:
        head = data[:SNIFF_BYTES]
        if b"\x00" in head:
            raise BadFileError("binary file (contains NUL bytes)")
        controls = sum(1 for b in head if b < 32 and b not in _TEXT_CONTROLS)
        if controls > max(8, len(head) // 100):
            raise BadFileError("binary file (control characters)")
        encoding = "utf-8"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise BadFileError(f"undecodable: not valid {exc.encoding.upper()} at byte {exc.start}") from None
    if "\x00" in text:  # the sniff sees only the head; a NUL anywhere means binary (or UTF-16 without BOM)
        raise BadFileError("binary file (contains NUL bytes)")
    if not text.strip():
        raise BadFileError("empty file (whitespace only)")
    return text


def read_document(path: str | Path) -> str:
    """Read and decode one file (see :func:`decode_bytes`); OS errors become ``BadFileError``."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise BadFileError(f"unreadable: {exc.strerror or exc}") from None
    return decode_bytes(data)


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
