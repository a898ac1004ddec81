"""Extraction time next to encoding time: is turning files into text ever the bottleneck?

For each file: ``landmark_rag.extract.extract`` (best of ``--rounds``), then the default
encoder's ``encode_documents`` on the extracted text, printed side by side per MB of file
and per page (PDF), with the ratio extraction / encoding. Indexing a file costs both, so a
ratio well under 1 means extraction is not what a user waits for.

Encoding is linear in the text's length (fixed windows), so by default it runs on the first
``--encode-chars`` characters of each text and is scaled to the whole text (marked ``*``);
``--encode-chars 0`` encodes everything (a 600-page book takes minutes on a laptop CPU).

Files: any PDF, DOCX, HTML, Markdown or text files given as arguments. Without arguments a
default set is built so a fresh clone can run it: the 24 articles of
data/squad-v1.1-dev-part-a.json typeset into one PDF by reportlab (the ``test`` extra) and
the same articles as a DOCX; real-world figures come from passing real files
(docs/experiments/extraction.md lists the ones used and their sources).

Run:  python benchmarks/extraction.py                       (the built default set)
      python benchmarks/extraction.py ~/papers/*.pdf --json out.json
"""

from __future__ import annotations

import argparse
import io
import json
import os
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SQUAD = REPO / "data" / "squad-v1.1-dev-part-a.json"


@dataclass
class Row:
    file: str
    format: str
    mb: float
    pages: int | None
    chars: int
    extract_s: float
    encode_s: float
    encode_scaled: bool

    @property
    def ratio(self) -> float:
        return self.extract_s / self.encode_s if self.encode_s else float("nan")


def default_files(folder: Path) -> list[Path]:
    """The SQuAD articles as a typeset multi-page PDF and as a DOCX with headings."""
    from docx import Document
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate

    articles = json.loads(SQUAD.read_text(encoding="utf-8"))["data"]
    styles = getSampleStyleSheet()
    story, word = [], Document()
    for art in articles:
        title = art["title"].replace("_", " ")
        story.append(Paragraph(title, styles["Heading1"]))
        word.add_heading(title, level=1)
        for p in art["paragraphs"]:
            story.append(Paragraph(p["context"].replace("&", "&amp;").replace("<", "&lt;"), styles["BodyText"]))
            word.add_paragraph(p["context"])
    pdf, docx = folder / "squad-articles.pdf", folder / "squad-articles.docx"
    buf = io.BytesIO()
    SimpleDocTemplate(buf, pagesize=A4).build(story)
    pdf.write_bytes(buf.getvalue())
    word.save(str(docx))
    return [pdf, docx]


def measure(paths: list[Path], rounds: int, encode_chars: int, batch_size: int) -> list[Row]:
    from landmark_rag import LandmarkEncoder
    from landmark_rag.extract import extract

    encoder = LandmarkEncoder.from_pretrained()
    encoder.encode_documents(["Warm-up sentence one. And a second one."])  # first-call costs out of the figures
    rows = []
    for path in paths:
        best = float("inf")
        for _ in range(rounds):
            t0 = time.perf_counter()
            doc = extract(path)
            best = min(best, time.perf_counter() - t0)
        text = doc.text if encode_chars <= 0 else doc.text[:encode_chars]
        t0 = time.perf_counter()
        encoder.encode_documents([text], batch_size=batch_size)
        enc = (time.perf_counter() - t0) * len(doc.text) / max(1, len(text))
        pages = len(doc.pages) if doc.pages is not None else None
        row = Row(path.name, doc.format, path.stat().st_size / 1e6, pages, len(doc.text), best, enc, len(text) < len(doc.text))
        rows.append(row)
        print_row(row, flush=True)
    return rows


HEADER = (
    f"{'file':36s} {'fmt':5s} {'MB':>6s} {'pages':>5s} {'chars':>9s} | {'extract s':>9s} {'s/MB':>6s} "
    f"{'ms/page':>8s} | {'encode s':>9s} {'s/MB':>7s} {'ms/page':>8s} | {'extr/enc':>8s}"
)


def print_row(r: Row, flush: bool = False) -> None:
    per_page = (lambda s: f"{1000 * s / r.pages:8.1f}") if r.pages else (lambda s: f"{'-':>8s}")
    star = "*" if r.encode_scaled else " "
    print(
        f"{r.file[:36]:36s} {r.format:5s} {r.mb:6.2f} {r.pages or '-':>5} {r.chars:9d} | {r.extract_s:9.3f} "
        f"{r.extract_s / r.mb:6.3f} {per_page(r.extract_s)} | {r.encode_s:8.1f}{star} {r.encode_s / r.mb:7.1f} "
        f"{per_page(r.encode_s)} | {r.ratio:8.4f}",
        flush=flush,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--rounds", type=int, default=3, help="extraction runs per file; the best counts")
    parser.add_argument("--encode-chars", type=int, default=100_000, help="encode this prefix and scale (0: all)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; * = encoding scaled from a prefix")
    print(HEADER)
    with tempfile.TemporaryDirectory() as tmp:
        files = args.files or default_files(Path(tmp))
        rows = measure(files, args.rounds, args.encode_chars, args.batch_size)
    ext, enc = sum(r.extract_s for r in rows), sum(r.encode_s for r in rows)
    mb, pages = sum(r.mb for r in rows), sum(r.pages or 0 for r in rows)
    print(f"total: {mb:.2f} MB, {pages} PDF pages: extraction {ext:.2f} s, encoding {enc:.1f} s, ratio {ext / enc:.4f}")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) | {"ratio": r.ratio} for r in rows], indent=2))


if __name__ == "__main__":
    main()
