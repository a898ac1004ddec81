"""Presenting retrieval results: hit highlighting and the HTML page of ``query --html``."""

from landmark_rag.render.collect import (
    DocumentView,
    document_views,
    passage_hits,
    passage_location,
    passage_source,
)
from landmark_rag.render.highlight import hit_segments
from landmark_rag.render.html import render_page, shade_levels
from landmark_rag.render.terminal import TerminalConsole, json_dumps, sanitize

__all__ = [
    "DocumentView",
    "TerminalConsole",
    "document_views",
    "hit_segments",
    "json_dumps",
    "passage_hits",
    "passage_location",
    "passage_source",
    "render_page",
    "sanitize",
    "shade_levels",
]
