"""Plain text: decoded exactly as ``landmark-rag index`` always has (UTF-8, or UTF-16/32
with a BOM; no guessing), no pages, no headings."""

from __future__ import annotations

from landmark_rag.extract.result import Extracted
from landmark_rag.ingest.decode import decode_bytes


def extract_text(data: bytes) -> Extracted:
    """The decoded text, unchanged; ``BadFileError`` for binary, undecodable or empty bytes."""
    return Extracted(decode_bytes(data), "text")
