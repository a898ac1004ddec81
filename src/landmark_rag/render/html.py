"""One self-contained HTML page for a question: the passages, and each source document with
its sentences shaded by similarity to the question.

The shading is what makes the page worth opening: a reader sees at a glance where in a long
document the question "lands", whether the returned passage sits on the brightest region,
and what the expansion added around the hit. Everything user-supplied is escaped; the page
has no scripts and no external resources.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np

from landmark_rag.render.collect import DocumentView, passage_location
from landmark_rag.render.highlight import hit_segments
from landmark_rag.types import Passage, Sentence

_CSS = """
body { font: 15px/1.55 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1d2330; background: #f6f7f9; }
header { background: #1d2330; color: #fff; padding: 18px 28px; }
header h1 { font-size: 20px; margin: 0 0 6px; font-weight: 600; }
header .meta { color: #b8c0cc; font-size: 13px; }
main { max-width: 980px; margin: 0 auto; padding: 12px 28px 40px; }
h2 { font-size: 16px; margin: 26px 0 10px; }
.legend { display: inline-flex; align-items: center; gap: 8px; font-size: 12px; color: #b8c0cc; margin-top: 8px; }
.legend .bar { width: 160px; height: 10px; border-radius: 3px;
  background: linear-gradient(90deg, rgba(255,170,0,0), rgba(255,170,0,.85)); border: 1px solid #555; }
ol.results { padding-left: 0; list-style: none; }
ol.results li { background: #fff; border: 1px solid #dde1e7; border-left: 4px solid #2563eb; border-radius: 6px;
  padding: 10px 14px; margin-bottom: 10px; }
.rmeta { font-size: 12.5px; color: #5b6474; margin-bottom: 4px; }
.rmeta a { color: #2563eb; text-decoration: none; font-weight: 600; }
.ptext { white-space: pre-wrap; }
mark.hit { background: #ffd54a; padding: 0 1px; border-radius: 2px; }
.doc { background: #fff; border: 1px solid #dde1e7; border-radius: 6px; padding: 14px 18px; white-space: pre-wrap; }
.doc .s { border-radius: 2px; }
.doc .s.hit { font-weight: 600; text-decoration: underline; text-decoration-color: #b45309; text-decoration-thickness: 2px; }
.doc .passage { outline: 2px solid #2563eb; outline-offset: 1px; border-radius: 3px;
  box-decoration-break: clone; -webkit-box-decoration-break: clone; }
.badge { display: inline-block; background: #2563eb; color: #fff; font: 600 11px/1 system-ui, sans-serif;
  padding: 3px 5px; border-radius: 3px; margin-right: 4px; vertical-align: 1px; }
.dmeta { font-size: 12.5px; color: #5b6474; margin: -4px 0 8px; }
"""


def shade_levels(scores: np.ndarray) -> np.ndarray:
    """Map similarities to shading in [0, 1]: the median and below stay white, the best is full.

    Raw cosine values of one model cluster in a narrow band (all sentences of an article are
    "somewhat similar"); stretching from the median to the maximum shows the contrast that
    matters, i.e. which sentences stand out for this question.
    """
    scores = np.asarray(scores, dtype=np.float32)
    if scores.size == 0:
        return scores
    lo, hi = float(np.median(scores)), float(scores.max())
    if hi - lo < 1e-6:
        return np.zeros_like(scores)
    return np.clip((scores - lo) / (hi - lo), 0.0, 1.0)


def render_page(
    question: str,
    passages: Sequence[Passage],
    hits: Sequence[Sequence[Sentence]],
    documents: Sequence[DocumentView],
    *,
    sources: Sequence[str] | None = None,
    subtitle: str = "",
) -> str:
    """The whole page as a string.

    ``hits[i]`` are the hit sentences of ``passages[i]``; ``sources[i]`` its file name (default
    the document id). ``documents`` come from :func:`~landmark_rag.render.collect.document_views`.
    """
    e = _esc
    levels = shade_levels(np.concatenate([d.scores for d in documents])) if documents else np.zeros(0)
    out = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>landmark-rag: {e(question)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<header><h1>{e(question)}</h1>",
        f'<div class="meta">{e(subtitle)}</div>' if subtitle else "",
        (
            '<div class="legend">similarity to the question: <span>median</span><span class="bar"></span>'
            "<span>best</span></div></header><main>"
        ),
        f"<h2>{len(passages)} passage{'s' if len(passages) != 1 else ''}</h2>",
        '<ol class="results">',
    ]
    for rank, (p, hs) in enumerate(zip(passages, hits, strict=True), start=1):
        src = sources[rank - 1] if sources else p.doc_id
        where = passage_location(p)
        src += f" · {where}" if where else ""
        text = "".join(f'<mark class="hit">{e(t)}</mark>' if is_hit else e(t) for t, is_hit in hit_segments(p, hs))
        out.append(
            f'<li><div class="rmeta"><a href="#p{rank}">#{rank}</a> {e(src)} &middot; characters '
            f"{p.start}&ndash;{p.end} &middot; sentences {p.first_index}&ndash;{p.last_index} &middot; "
            f'score {p.score:.3f}{_cosine(p)}</div><div class="ptext">{text}</div></li>'
        )
    out.append("</ol>")
    offset = 0
    for d in documents:
        out.append(f'<h2 id="{e(_anchor(d.doc_id))}">{e(d.doc_id)}</h2>')
        out.append(
            f'<div class="dmeta">{e(d.source)} &middot; {len(d.sentences)} sentences &middot; passages '
            + ", ".join(f'<a href="#p{r}">#{r}</a>' for r, _ in d.passages)
            + "</div>"
        )
        out.append(f'<div class="doc">{_document_body(d, levels[offset : offset + len(d.sentences)])}</div>')
        offset += len(d.sentences)
    out.append("</main></body></html>")
    return "\n".join(x for x in out if x)


def _document_body(doc: DocumentView, levels: np.ndarray) -> str:
    e = _esc
    starts = {p.first_index: (rank, p) for rank, p in doc.passages}
    ends = {p.last_index for _, p in doc.passages}
    hit_set = {i for _, p in doc.passages for i in p.hit_indices}
    parts: list[str] = []
    pos = 0
    text = doc.text
    for s, level, score in zip(doc.sentences, levels, doc.scores, strict=True):
        if s.start > pos:
            parts.append(e(text[pos : s.start]))
        if s.index in starts:
            rank, _ = starts[s.index]
            parts.append(f'<span class="passage" id="p{rank}"><span class="badge">#{rank}</span>')
        cls = "s hit" if s.index in hit_set else "s"
        style = f' style="background:rgba(255,170,0,{0.85 * float(level):.3f})"' if level > 0 else ""
        body = text[s.start : s.end] if text[s.start : s.end] == s.text else s.text
        parts.append(f'<span class="{cls}"{style} title="sentence {s.index} &middot; similarity {float(score):.3f}">'
                     f"{e(body)}</span>")
        if s.index in ends:
            parts.append("</span>")
        pos = max(pos, s.end)
    if pos < len(text):
        parts.append(e(text[pos:]))
    return "".join(parts)


def _anchor(doc_id: str) -> str:
    return "doc-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in doc_id)


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def _cosine(p: Passage) -> str:
    return "" if p.cosine is None else f" &middot; cosine {p.cosine:.3f}"
