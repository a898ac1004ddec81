"""HTML: the page's main text, with its headings, without the navigation, cookie banners,
footers, scripts and styles around it.

trafilatura finds the main content (F1 0.96 on the 181 real pages of the
article-extraction-benchmark, against 0.82 for our own tag-and-class rules and 0.44 for
markitdown; docs/experiments/extraction.md) and returns it as a small XML tree: ``head``
(with ``rend="h2"``), ``p``, ``list``/``item``, ``table``/``row``/``cell``, ``quote``,
``code``, ``lb`` for a line break. We walk that tree into blocks, so headings keep exact
offsets. ``favor_recall`` is on: it scored the same on the benchmark, and without it a
short, simple page loses its headings and lists.
"""

from __future__ import annotations

from typing import Any

from landmark_rag.extract.blocks import BlockText, tidy
from landmark_rag.extract.errors import DocumentError, require
from landmark_rag.extract.result import Extracted

_BLOCKS = {"p", "quote", "code", "item"}
_NESTED = {"list", "table"}  # their own blocks, never part of the text around them
_HEAD_FIELDS = {
    "title": ('//meta[@property="og:title"]/@content', "//title/text()"),
    "author": ('//meta[@name="author"]/@content',),
}
# what the fallback drops when trafilatura finds no main text at all
_BOILERPLATE = ("script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form")


def extract_html(data: bytes) -> Extracted:
    """The main text of an HTML page; ``DocumentError`` when it has no text at all."""
    trafilatura = require("trafilatura")
    tree = trafilatura.load_html(data)  # decodes by the page's declared or detected charset
    if tree is None:
        raise DocumentError("not readable HTML")
    # the title and author straight from the head: trafilatura's own metadata step also
    # guesses dates from the whole page, which doubled the time on a 2.4 MB filing
    metadata = _head_metadata(tree)
    doc = trafilatura.bare_extraction(
        tree, include_comments=False, include_tables=True, favor_recall=True, with_metadata=False
    )
    out = BlockText()
    if doc is not None and doc.body is not None:
        _walk(doc.body, out)
    if not out.text:
        _fallback(data, out)
    if not out.text.strip():
        raise DocumentError("empty HTML page (no text)")
    title = metadata.get("title", "")
    if title and not any(h.level == 1 for h in out.headings):
        # a heading is what tells a passage where it is: a page whose body has no <h1>
        # (trafilatura often moves it out, as the title) gets its title as one
        titled = BlockText()
        titled.add(title, heading_level=1)
        titled.extend(out)
        out = titled
    return Extracted(out.text, "html", headings=out.headings, metadata=metadata)


def _head_metadata(tree: Any) -> dict[str, str]:
    """``title`` (``og:title``, else ``<title>``) and ``author`` where the page names them."""
    found: dict[str, str] = {}
    for key, paths in _HEAD_FIELDS.items():
        for path in paths:
            values = tree.xpath(path)
            value = tidy(str(values[0])) if values else ""
            if value:
                found[key] = value
                break
    return found


def _walk(element: Any, out: BlockText) -> None:
    """Append the blocks under ``element`` in document order."""
    for child in element:
        tag = child.tag if isinstance(child.tag, str) else ""
        if tag == "head":
            level = child.get("rend", "h2")[1:]
            out.add(tidy(_inline(child)), heading_level=int(level) if level.isdigit() else 2)
        elif tag == "row":
            cells = (tidy(_inline(c)) for c in child if c.tag == "cell")
            out.add(" | ".join(c for c in cells if c))
        elif tag in _BLOCKS:
            out.add(tidy(_inline(child, source_lines=tag == "code"), keep_lines=True))
            _walk_nested(child, out)
        elif tag == "lb":
            pass
        else:  # a container (div, list, table, ...): its loose text, then its children
            out.add(tidy(child.text or ""))
            _walk(child, out)
        out.add(tidy(child.tail or ""))


def _walk_nested(element: Any, out: BlockText) -> None:
    for child in element:
        if child.tag in _NESTED:
            _walk(child, out)


def _inline(element: Any, *, source_lines: bool = False) -> str:
    """An element's own text: ``lb`` is a newline, nested lists and tables are left out.

    A newline in the HTML source is only whitespace (``source_lines`` keeps it, for code),
    so the text's line breaks are the page's ``<br>``, not its source formatting.
    """

    def piece(s: str | None) -> str:
        return (s or "") if source_lines else (s or "").replace("\n", " ")

    parts = [piece(element.text)]
    for child in element:
        if not isinstance(child.tag, str):  # a comment or processing instruction: only its tail is text
            pass
        elif child.tag == "lb":
            parts.append("\n")
        elif child.tag not in _NESTED:
            parts.append(_inline(child, source_lines=source_lines))
        parts.append(piece(child.tail))
    return "".join(parts)


def _fallback(data: bytes, out: BlockText) -> None:
    """All visible text but the obvious boilerplate, for a page where trafilatura finds no
    main content (a very short page): an indexed page must not vanish for being small."""
    html = require("lxml.html", "lxml")
    try:
        root = html.fromstring(data)
    except Exception as exc:  # noqa: BLE001 - lxml raises several unrelated types for unparsable input
        raise DocumentError(f"not readable HTML: {exc}") from None
    for node in root.xpath("|".join(f"//{t}" for t in _BOILERPLATE)):
        node.drop_tree()
    out.add(tidy(root.text_content()))

