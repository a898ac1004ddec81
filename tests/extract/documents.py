"""Real document files, built with the libraries that write them.

PDFs come from reportlab (text drawn on pages, an image-only page, RC4 encryption, page
labels), Word files from python-docx, so each test reads the bytes a real application
writes rather than a hand-made approximation. ``conftest.py`` serves them as fixtures.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

#: The four pages of the sample PDF: distinct facts, and a sentence that runs from page 2
#: onto page 3 (no full stop at the end of page 2, a lower-case start on page 3).
PDF_PAGES = [
    ["Annual report of the harbour authority.", "Chapter one describes the piers and the cranes."],
    [
        "The tide tables were revised in spring.",
        "The migration of the arctic terns along the northern",
    ],
    [
        "coast was counted by volunteers every morning.",
        "The lighthouse keeper's cat is named Biscuit and sleeps on the lamp room stairs.",
    ],
    ["Appendix: the budget was balanced.", "Dredging costs fell by a third."],
]


def build_pdf(pages: list[list[str]], *, encrypt: object = None, labels: bool = False) -> bytes:
    canvas_mod = pytest.importorskip("reportlab.pdfgen.canvas")
    buf = io.BytesIO()
    canvas = canvas_mod.Canvas(buf, encrypt=encrypt)
    for lines in pages:
        y = 720
        for line in lines:
            canvas.drawString(72, y, line)
            y -= 16
        canvas.showPage()
    if labels:  # front matter numbered i, ii; the body from 1
        canvas.addPageLabel(0, style="ROMAN_LOWER")
        canvas.addPageLabel(2, style="ARABIC", start=1)
    canvas.save()
    return buf.getvalue()


def build_report_pdf() -> bytes:
    """Four pages of text, the last two labelled 1 and 2 after front matter i, ii."""
    return build_pdf(PDF_PAGES, labels=True)


def build_hyphenated_pdf() -> bytes:
    """Words broken across lines with a hyphen: one the document also writes whole, one it
    does not (a compound, which must keep its hyphen)."""
    return build_pdf(
        [
            [
                "The new pump works efficiently. It moves water effi-",
                "ciently through the state-",
                "owned canal.",
            ]
        ]
    )


def build_encrypted_pdf() -> bytes:
    pdfencrypt = pytest.importorskip("reportlab.lib.pdfencrypt")
    return build_pdf([["Secret minutes of the board."]], encrypt=pdfencrypt.StandardEncryption("s3cret"))


def build_owner_locked_pdf() -> bytes:
    """Opens without a password (only copying is restricted), as most 'protected' PDFs do."""
    pdfencrypt = pytest.importorskip("reportlab.lib.pdfencrypt")
    enc = pdfencrypt.StandardEncryption("", ownerPassword="owner", canCopy=0, canModify=0)
    return build_pdf([["Readable text in a restricted file."]], encrypt=enc)


def build_image_only_pdf() -> bytes:
    """A 'scan': one page holding a picture of text and no text layer."""
    canvas_mod = pytest.importorskip("reportlab.pdfgen.canvas")
    image = pytest.importorskip("PIL.Image")
    draw = pytest.importorskip("PIL.ImageDraw")
    picture = image.new("RGB", (400, 100), "white")
    draw.Draw(picture).text((10, 40), "Scanned page: no text layer here", fill="black")
    reader = pytest.importorskip("reportlab.lib.utils").ImageReader(picture)
    buf = io.BytesIO()
    canvas = canvas_mod.Canvas(buf)
    canvas.drawImage(reader, 72, 600, width=400, height=100)
    canvas.showPage()
    canvas.save()
    return buf.getvalue()


def _docx_document():
    docx = pytest.importorskip("docx")
    return docx, docx.Document()


def build_manual_docx() -> bytes:
    """A manual: a title, headings on two levels (one by a custom style based on Heading 2),
    a table, and a page footer that is not part of the body."""
    docx, doc = _docx_document()
    doc.add_heading("Widget Manual", level=0)
    doc.add_paragraph("This manual explains how to care for your widget.")
    doc.add_heading("Installation", level=1)
    doc.add_paragraph("Place the widget on a flat surface before turning the crank.")
    doc.add_heading("Tools you need", level=2)
    doc.add_paragraph("A screwdriver and a soft cloth are enough.")
    custom = doc.styles.add_style("Procedure Heading", docx.enum.style.WD_STYLE_TYPE.PARAGRAPH)
    custom.base_style = doc.styles["Heading 2"]
    doc.add_paragraph("Turning the crank", style="Procedure Heading")
    doc.add_paragraph("Turn the crank three times clockwise.\nThen wait for the click.")
    doc.add_heading("Maintenance", level=1)
    table = doc.add_table(rows=2, cols=2)
    for r, row in enumerate([("Part", "Interval"), ("Gear oil", "Every six months")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    doc.add_paragraph("Wipe the widget with a dry cloth; water rusts its gears.")
    doc.sections[0].footer.paragraphs[0].text = "Confidential footer text - page X"
    buf = io.BytesIO()
    doc.save(buf)
    return buf.getvalue()


def build_empty_docx() -> bytes:
    _, doc = _docx_document()
    buf = io.BytesIO()
    doc.save(buf)
    return buf.getvalue()


BOILERPLATE = [
    "var tracking",
    "color: red",
    "Home",
    "About us",
    "accept all cookies",
    "Copyright 2024 Widget Corp",
    "Subscribe to our newsletter",
]

ARTICLE_HTML = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Widget care guide</title>
<style>p { color: red; }</style>
<script>var tracking = {id: 42}; document.write("tracking pixel");</script>
</head><body>
<nav class="site-nav"><ul><li><a href="/">Home</a></li><li><a href="/about">About us</a></li></ul></nav>
<div id="cookie-banner" class="cookie-consent">We use cookies. Please accept all cookies to continue.</div>
<main><article>
<h1>Caring for your widget</h1>
<p>Widgets are small mechanical devices that do one thing well, and they last for decades
when they are looked after with a little patience and the right tools.</p>
<h2>Installing the widget</h2>
<p>Install a widget by placing it on a flat, dry surface and turning its crank three times
clockwise until you hear a soft click from inside the housing.</p>
<ul><li>Keep the original box for transport.</li><li>Never install it near a radiator.</li></ul>
<h2>Cleaning</h2>
<p>Wipe the widget with a dry cloth once a week; water will rust the gears inside,
and solvents dissolve the seals that keep the dust out.<br>Never use oil on the crank.</p>
</article></main>
<aside class="newsletter">Subscribe to our newsletter for weekly widget tips.</aside>
<footer><p>Copyright 2024 Widget Corp. All rights reserved.</p></footer>
<script>console.log("var tracking done");</script>
</body></html>
"""


#: Three pages of one text, a sentence running from page 1 onto page 2: what a PDF loader's
#: per-page documents of one file look like, for both frameworks' page-joining tests.
RIVER_PAGES = [
    ["The survey began in the western valley.", "Teams mapped every stream and spring.",
     "The river bends twice below the old mill and the"],
    ["ferry crossing, where the water is deepest.", "A stone bridge replaced the ferry in 1902.",
     "The bridge has seven arches."],
    ["Salmon return to the upper river every autumn.", "Anglers need a permit from the county office."],
]


def write_river_pdf(folder: Path) -> Path:
    path = folder / "river.pdf"
    path.write_bytes(build_pdf(RIVER_PAGES))
    return path
