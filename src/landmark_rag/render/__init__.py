"""Presenting retrieval results: hit highlighting and the HTML page of ``query --html``."""

from landmark_rag.render.collect import DocumentView, document_views, passage_hits, passage_source
from landmark_rag.render.highlight import hit_segments
from landmark_rag.render.html import render_page, shade_levels

__all__ = [
    "DocumentView",
    "document_views",
    "hit_segments",
    "passage_hits",
    "passage_source",
    "render_page",
    "shade_levels",
]
