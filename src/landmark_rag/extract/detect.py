"""Which extractor a file needs: by its magic bytes where the format has them, else by suffix.

Content wins over the name for the formats that announce themselves (a PDF saved without
``.pdf``, a download named ``.bin``), and a name that promises a format the bytes are not
is refused with both facts, instead of indexing a PDF's raw bytes or a text file as a PDF.
Every other file is read as text, as ``landmark-rag index`` always has.
"""

from __future__ import annotations

import io
import zipfile

from landmark_rag.extract.errors import DocumentError

PDF, DOCX, HTML, MARKDOWN, TEXT = "pdf", "docx", "html", "markdown", "text"

#: suffix (lower case, with the dot) -> format; anything else is text
SUFFIXES: dict[str, str] = {
    ".pdf": PDF,
    ".docx": DOCX,
    ".html": HTML,
    ".htm": HTML,
    ".xhtml": HTML,
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".mdown": MARKDOWN,
    ".mkd": MARKDOWN,
    ".txt": TEXT,
    ".text": TEXT,
}
#: MIME type -> format, for callers that have one (a framework loader, an upload)
MIME_TYPES: dict[str, str] = {
    "application/pdf": PDF,
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": DOCX,
    "text/html": HTML,
    "application/xhtml+xml": HTML,
    "text/markdown": MARKDOWN,
    "text/x-markdown": MARKDOWN,
    "text/plain": TEXT,
}
_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # legacy Office (.doc, .xls, .ppt)
_HTML_STARTS = (b"<!doctype html", b"<html")


def sniff(data: bytes) -> str | None:
    """The format the bytes themselves prove (PDF, DOCX), ``None`` when they prove none.

    A PDF may have junk before its header (the spec allows it within the first 1024 bytes).
    """
    if b"%PDF-" in data[:1024]:
        return PDF
    if data[:4] == b"PK\x03\x04" and "word/document.xml" in (_zip_names(data) or ()):
        return DOCX
    return None


def detect_format(data: bytes, *, suffix: str | None = None, mime: str | None = None) -> str:
    """The format to extract ``data`` as; ``DocumentError`` when name and content disagree
    or the file is a format we cannot read (legacy .doc, another zip)."""
    claimed = MIME_TYPES.get((mime or "").split(";")[0].strip().lower()) or SUFFIXES.get((suffix or "").lower())
    found = sniff(data)
    if found is not None:
        return found
    if data[:8] == _OLE2:
        raise DocumentError("unsupported format: legacy Office file (.doc, .xls, .ppt); save it as .docx or PDF")
    if claimed == PDF:
        raise DocumentError("not a readable PDF: no PDF header" + (" (is it a text file?)" if _looks_textual(data) else ""))
    if claimed == DOCX:
        if data[:4] != b"PK\x03\x04":
            raise DocumentError("corrupt DOCX: not a ZIP archive")
        if _zip_names(data) is None:
            raise DocumentError("corrupt DOCX: damaged or truncated ZIP archive")
        raise DocumentError("corrupt DOCX: no word/document.xml (another Office format?)")
    if data[:4] == b"PK\x03\x04" and claimed is None:
        raise DocumentError("unsupported format: a ZIP archive (not a .docx)")
    if claimed is None and data[:512].lstrip().lower().startswith(_HTML_STARTS):
        return HTML
    return claimed or TEXT


def _zip_names(data: bytes) -> list[str] | None:
    """The member names of a ZIP archive, ``None`` if it cannot be read as one."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return archive.namelist()
    except (zipfile.BadZipFile, ValueError, OSError):
        return None


def _looks_textual(data: bytes) -> bool:
    head = data[:1024]
    return bool(head) and b"\x00" not in head and all(b >= 32 or b in b"\t\n\r\f" for b in head)
