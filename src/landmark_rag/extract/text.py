"""Plain text: decoded exactly as ``landmark-rag index`` always has, no pages, no headings.

Only text that decodes without guessing is indexed: UTF-8 (with or without a BOM) and
UTF-16/32 with a BOM. Guessing a legacy code page would silently index mojibake, and the
character offsets reported by ``query`` must point into the text the user actually has. The
text is kept exactly as decoded (no newline translation) for the same reason.
"""

from __future__ import annotations

import codecs

from landmark_rag.extract.errors import BadFileError
from landmark_rag.extract.result import Extracted

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


def extract_text(data: bytes) -> Extracted:
    """The decoded text, unchanged; ``BadFileError`` for binary, undecodable or empty bytes."""
    return Extracted(decode_bytes(data), "text")
