"""What may reach a terminal: document text with its control characters removed.

Indexed files are untrusted input. Printed raw, an ESC sequence inside a document can set
the window title, write the clipboard (OSC 52), hide or rewrite earlier output, or move the
cursor; a lone carriage return can overwrite what was printed before it. So every string
the command line prints to a terminal goes through :func:`sanitize`, applied in one place:
:class:`TerminalConsole` cleans each text segment just before rich adds its own styling,
so no caller can forget it. Machine output (``--json``) keeps the characters, escaped
(:func:`json_dumps`), because there they are data and must round-trip exactly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.segment import Segment

#: Whole escape sequences: CSI (``ESC [`` ... final byte), OSC / DCS / SOS / PM / APC strings
#: (up to BEL or ST; unterminated, only the introducer goes), and two-byte ``ESC X``;
#: the same with the 8-bit C1 introducers (U+009B CSI, U+009D OSC, ...).
_ESCAPE_SEQUENCE = re.compile(
    r"""
    (?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?                      # CSI
    | (?:\x1b[\]PX^_]|[\x90\x98\x9d-\x9f])(?:[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c))?  # OSC, DCS, SOS, PM, APC
    | \x1b[ -/]*[0-~]?                                      # other ESC sequences
    """,
    re.VERBOSE | re.DOTALL,
)
#: Control characters left after the sequences are gone: C0 except tab and newline, DEL,
#: C1. ``\r\n`` becomes ``\n`` first so Windows line ends keep their line breaks.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: Characters that ``json.dumps(..., ensure_ascii=False)`` leaves raw but a terminal may act on.
_JSON_RAW_CONTROL = re.compile(r"[\x7f-\x9f]")


def sanitize(text: str) -> str:
    """``text`` without escape sequences and control characters (tab and newline kept)."""
    if text.isprintable():
        return text  # the common case costs one C-level scan
    text = _ESCAPE_SEQUENCE.sub("", text.replace("\r\n", "\n"))
    return _CONTROL.sub("", text)


def json_dumps(payload: Any, **kwargs: Any) -> str:
    """``json.dumps`` with non-ASCII kept readable but every control character escaped.

    JSON escapes C0 characters itself; DEL and C1 (e.g. U+009B, an 8-bit CSI) are legal raw
    in JSON strings, so they are written as ``\\u00XX`` here (still the same JSON value).
    """
    text = json.dumps(payload, ensure_ascii=False, **kwargs)
    return _JSON_RAW_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class TerminalConsole(Console):
    """A rich ``Console`` that passes every printed text segment through :func:`sanitize`.

    rich already drops a few control codes (BEL, backspace, CR, VT, FF) from ``Text`` but
    passes ESC through, and plain ``print``-ed strings are not ``Text``; cleaning the
    segments (rich's own control segments and styles are kept) covers every route.
    """

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            segment if segment.control else Segment(sanitize(segment.text), segment.style, segment.control)
            for segment in buffer
        )


__all__ = ["TerminalConsole", "json_dumps", "sanitize"]
