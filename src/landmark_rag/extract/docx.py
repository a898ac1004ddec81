"""Word (.docx): the body's paragraphs and tables in reading order, headings from styles.

python-docx reads the file; we walk the body's XML ourselves rather than through
``Document.iter_inner_content()`` and ``Paragraph.style``, which resolve every paragraph's
style by a search of the style list: on an 872-page handbook that walk took 5 s, this one
a fraction of it (docs/experiments/extraction.md). A paragraph is a heading when its style
is a built-in "Heading N" or "Title", or has an outline level (custom heading styles, in
any UI language, carry one), directly or through the style it is based on.

Page headers and footers, footnotes and comments are left out, like the boilerplate of a
web page; tracked insertions and deletions are read as python-docx reads them.
"""

from __future__ import annotations

import io
import re
from typing import Any

from landmark_rag.extract.blocks import BlockText, tidy
from landmark_rag.extract.errors import DocumentError, require
from landmark_rag.extract.result import Extracted

_HEADING_NAME = re.compile(r"^heading ([1-9])$", re.IGNORECASE)
#: outline level 9 (w:outlineLvl val 9) is Word's "body text"
_BODY_TEXT_OUTLINE = 9


def extract_docx(data: bytes) -> Extracted:
    """The body text of a .docx file; ``DocumentError`` if it is damaged or has no text."""
    docx = require("docx", "python-docx")
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 - a zip, XML or package error, each its own type
        raise DocumentError(f"corrupt DOCX: {_one_line(exc)}") from None
    qn = require("docx.oxml.ns", "python-docx").qn
    paragraph_cls = require("docx.text.paragraph", "python-docx").Paragraph
    walker = _Walker(document, qn, paragraph_cls)
    try:
        walker.walk(document.element.body)
    except Exception as exc:  # noqa: BLE001 - malformed parts only show while reading them
        raise DocumentError(f"corrupt DOCX: {_one_line(exc)}") from None
    out = walker.out
    if not out.text.strip():
        raise DocumentError("empty document (no text)")
    props = document.core_properties
    metadata = {k: v for k, v in (("title", props.title), ("author", props.author)) if v}
    return Extracted(out.text, "docx", headings=out.headings, metadata=metadata)


class _Walker:
    """One pass over the body: paragraphs become blocks, table rows ``cell | cell`` blocks."""

    def __init__(self, document: Any, qn: Any, paragraph_cls: Any) -> None:
        self.out = BlockText()
        self._document = document
        self._paragraph = paragraph_cls
        self._p, self._tbl, self._sdt = qn("w:p"), qn("w:tbl"), qn("w:sdt")
        self._tr, self._tc, self._content = qn("w:tr"), qn("w:tc"), qn("w:sdtContent")
        self._pstyle, self._outline, self._val = qn("w:pStyle"), qn("w:outlineLvl"), qn("w:val")
        self._levels = _style_levels(document, qn)

    def walk(self, container: Any) -> None:
        for child in container.iterchildren():
            if child.tag == self._p:
                text = tidy(self._paragraph(child, self._document).text, keep_lines=True)
                level = self._level(child)
                self.out.add(tidy(text) if level else text, heading_level=level)
            elif child.tag == self._tbl:
                self._table(child)
            elif child.tag == self._sdt:  # a content control (a table of contents, a form)
                for content in child.iterchildren(self._content):
                    self.walk(content)

    def _table(self, tbl: Any) -> None:
        for row in tbl.iterchildren(self._tr):
            cells = []
            for cell in row.iterchildren(self._tc):
                # every paragraph of the cell, nested tables included, in order
                text = " ".join(self._paragraph(p, self._document).text for p in cell.iter(self._p))
                if text := tidy(text):
                    cells.append(text)
            self.out.add(" | ".join(cells))

    def _level(self, p: Any) -> int | None:
        ppr = p.pPr
        if ppr is None:
            return None
        outline = ppr.find(self._outline)
        if outline is not None:
            return _outline_level(outline.get(self._val))
        style = ppr.find(self._pstyle)
        return self._levels.get(style.get(self._val)) if style is not None else None


def _style_levels(document: Any, qn: Any) -> dict[str, int]:
    """Heading level of every paragraph style that has one, by style id."""
    own: dict[str, int | None] = {}
    based_on: dict[str, str] = {}
    for style in document.styles.element.iterchildren(qn("w:style")):
        sid = style.get(qn("w:styleId"))
        if sid is None:
            continue
        name_el = style.find(qn("w:name"))
        name = (name_el.get(qn("w:val")) if name_el is not None else "") or ""
        outline = style.find(f"{qn('w:pPr')}/{qn('w:outlineLvl')}")
        if outline is not None:
            own[sid] = _outline_level(outline.get(qn("w:val")))
        elif m := _HEADING_NAME.match(name):
            own[sid] = int(m.group(1))
        elif name.lower() == "title":
            own[sid] = 1
        base = style.find(qn("w:basedOn"))
        if base is not None and base.get(qn("w:val")):
            based_on[sid] = base.get(qn("w:val"))
    levels: dict[str, int] = {}
    for sid in set(own) | set(based_on):
        seen: set[str] = set()
        cur: str | None = sid
        while cur is not None and cur not in own and cur not in seen:  # inherit through basedOn
            seen.add(cur)
            cur = based_on.get(cur)
        if cur is not None and (level := own.get(cur)):
            levels[sid] = level
    return levels


def _outline_level(value: str | None) -> int | None:
    """Word's 0-based outline level as our 1-based heading level (9 is body text: none)."""
    if value is None or not value.isdigit() or int(value) >= _BODY_TEXT_OUTLINE:
        return None
    return int(value) + 1


def _one_line(exc: Exception) -> str:
    message = " ".join(str(exc).split()) or type(exc).__name__
    return message[:160]
