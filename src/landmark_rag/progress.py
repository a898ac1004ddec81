"""Progress bars that appear by themselves once work gets long.

The framework adapters (LlamaIndex, LangChain) default to ``show_progress=None``: the quick
calls frameworks make all the time (a query, a handful of nodes) print nothing, and a call
still running after :data:`AUTO_DELAY_S` seconds (an ingest of real documents on a CPU)
shows its bar, so a long ingest never looks hung. ``True`` shows a bar at once, ``False``
never (tqdm's ``delay`` does the waiting).
"""

from __future__ import annotations

from typing import Any

AUTO_DELAY_S = 3.0


def bar_options(show_progress: bool | None) -> dict[str, Any]:
    """tqdm keyword arguments for ``show_progress`` = True (now), None (after a few seconds), False (never)."""
    return {"disable": show_progress is False, "delay": 0.0 if show_progress else AUTO_DELAY_S}
