"""PDF: the text layer of every page, joined in page order, with each page's span.

pypdfium2 (PDFium, the engine of Chrome's viewer) reads the text: 10-20x faster than pypdf
and 50x faster than pdfminer.six on the same files, ligatures already decomposed (``fi``,
not ``ﬁ``), and it marks the hyphens it finds at line ends (docs/experiments/extraction.md).
We normalise only what must be:

* line ends: PDFium's ``\\r\\n`` becomes ``\\n``;
* control characters (TeX math fonts without a Unicode map yield them) become spaces,
  so the text stays printable and stored metadata stays valid;
* a line-end hyphen PDFium marked is joined into one word (``effi-|ciently`` ->
  ``efficiently``) only when the document itself uses that joined word elsewhere;
  otherwise the hyphen stays and only the line break goes (``forest-dwelling``, ``FAA-approved``):
  a typeset paper hyphenates syllables, a report compounds, and only the document's own
  vocabulary tells them apart.

Pages are joined by :func:`~landmark_rag.extract.result.join_page_texts`, the rule the
pages a framework loader gives are joined by too.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from landmark_rag.extract.errors import DocumentError, require
from landmark_rag.extract.result import Extracted, join_page_texts

# PDFium's marker for a hyphen it found at a line end: U+0002 from the bounded-text call,
# U+FFFE from the range call; the line break after it is already gone
_HYPHEN = re.compile(r"(\w+)[\x02\ufffe](\w+)")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_WORDS = re.compile(r"\w+")


def extract_pdf(data: bytes) -> Extracted:
    """The text layer of a PDF with page spans; ``DocumentError`` for an encrypted,
    damaged or truncated file, or one without any text (a scan)."""
    pdfium = require("pypdfium2")
    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        raise DocumentError(_open_failure(str(exc), data)) from None
    try:
        raw_pages = [_page_text(document, i) for i in range(len(document))]
        labels = [document.get_page_label(i) or None for i in range(len(raw_pages))]
        info = document.get_metadata_dict(skip_empty=True)
    except pdfium.PdfiumError as exc:
        raise DocumentError(f"not a readable PDF: {exc}") from None
    finally:
        document.close()
    if not raw_pages:
        raise DocumentError("not a readable PDF: it has no pages")
    pages = _dehyphenate([_normalise(t) for t in raw_pages])
    if not any(t.strip() for t in pages):
        raise DocumentError("no text layer (scanned PDF?)")
    text, spans = join_page_texts(pages, labels if any(labels) else None)
    metadata: dict[str, Any] = {"page_count": len(pages)}
    metadata.update({k.lower(): info[k] for k in ("Title", "Author") if info.get(k)})
    empty = [s.number for s in spans if s.start == s.end]
    if empty:
        metadata["pages_without_text"] = empty
    return Extracted(text, "pdf", pages=spans, metadata=metadata)


def _page_text(document: Any, index: int) -> str:
    page = document[index]
    try:
        textpage = page.get_textpage()
        try:
            # the bounded call: full Unicode (the range call is UCS-2 only), and only text
            # inside the page box, not objects placed off the page
            return textpage.get_text_bounded()
        finally:
            textpage.close()
    finally:
        page.close()


def _open_failure(message: str, data: bytes) -> str:
    """A one-line reason from PDFium's load error."""
    if "password" in message.lower():
        return "encrypted PDF (needs a password)"
    if not data.lstrip()[:1024].startswith(b"%PDF"):
        return "not a readable PDF: no PDF header"
    if b"%%EOF" not in data[-2048:]:
        return "not a readable PDF: truncated (no end-of-file marker)"
    detail = message.split("(PDFium: ")[-1].rstrip(").") if "PDFium: " in message else message
    return f"not a readable PDF: damaged ({detail.lower()})"


def _normalise(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROLS.sub(lambda m: m.group() if m.group() == "\x02" else " ", text.replace("\x00", ""))


def _dehyphenate(pages: list[str]) -> list[str]:
    """Resolve PDFium's line-end hyphen markers, the document's words deciding (see above)."""
    if not any("\x02" in p or "\ufffe" in p for p in pages):
        return pages
    vocabulary = Counter(w.lower() for p in pages for w in _WORDS.findall(_HYPHEN.sub(" ", p)))

    def resolve(m: re.Match[str]) -> str:
        left, right = m.group(1), m.group(2)
        return left + right if vocabulary[(left + right).lower()] else f"{left}-{right}"

    # a marker with no word on one side (a hyphen before a number) keeps a plain hyphen
    return [_HYPHEN.sub(resolve, p).replace("\x02", "-").replace("\ufffe", "-") for p in pages]
