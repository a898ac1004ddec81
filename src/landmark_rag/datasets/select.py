"""Choosing articles: the one selection spec of ``landmark-rag train`` and ``landmark-rag eval``.

A spec is a string of comma-separated items, each one of

- a slice ``a:b`` of article indices, Python's meaning (either end may be left out, negative
  ends count from the end, ``:`` is every article; a slice past the end is just shorter);
- an index ``i`` (negative counts from the end);
- ``@FILE``: every title listed in that file, one per line (blank lines skipped; a line is a
  whole title, commas and colons included - the form for titles such as ``Jacksonville,_Florida``);
- a title.

A title matches an article's title or doc id, ignoring case, and selects every article it
matches. The result lists the articles in the order the items name them, each once; ``""``
selects none. A programmatic caller may pass a list of titles instead of a string: each entry
is then a whole title, never parsed as an index or split at commas.

Why one language: a training config's ``"val": "13:16"`` and an evaluation's ``--titles-file``
name the same articles of the same file, so the held-out articles of training and of evaluation
cannot drift apart through two parsers. An item that names nothing (an unknown title, an index
past the end, a malformed slice) is an error naming it, never a silently smaller selection.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from landmark_rag.datasets.records import Article
from landmark_rag.errors import LandmarkRagError

_SLICE = re.compile(r"(-?\d+)?\s*:\s*(-?\d+)?", re.ASCII)
_INDEX = re.compile(r"-?\d+", re.ASCII)


class SelectionError(LandmarkRagError, ValueError):
    """A selection spec names an article that is not in the data, or cannot be parsed."""


def select(articles: Sequence[Article], spec: str | Sequence[str]) -> list[Article]:
    """The articles ``spec`` names (see the module's docstring), in the spec's order, each once.

    Raises :class:`SelectionError` for an index past the end, a malformed slice, a missing
    titles file, or titles that match no article (all of them named in one message).
    """
    arts = list(articles)
    chosen: list[Article] = []
    seen: set[int] = set()
    unknown: list[str] = []

    def take(found: Sequence[Article]) -> None:
        for a in found:
            if id(a) not in seen:
                seen.add(id(a))
                chosen.append(a)

    by_name: dict[str, list[Article]] = {}
    for a in arts:
        for name in {a.title.casefold(), a.doc_id.casefold()}:
            by_name.setdefault(name, []).append(a)

    def title(name: str, *, slice_like: bool = False) -> None:
        found = by_name.get(name.casefold())
        if found:
            take(found)
        elif slice_like:
            raise SelectionError(f"article selection {name!r} is not a slice 'a:b' of integers, nor a title")
        else:
            unknown.append(name)

    if isinstance(spec, str):
        for item in (x.strip() for x in spec.split(",")):
            if not item:
                continue
            if m := _SLICE.fullmatch(item):
                start, stop = (int(x) if x is not None else None for x in m.groups())
                take(arts[start:stop])
            elif _INDEX.fullmatch(item):
                i = int(item)
                if not -len(arts) <= i < len(arts):
                    raise SelectionError(f"article {i} does not exist: the data has {len(arts)} articles")
                take([arts[i]])
            elif item.startswith("@"):
                for name in read_titles(item[1:].strip()):
                    title(name)
            else:
                title(item, slice_like=":" in item)
    else:
        for name in spec:
            if name.strip():
                title(name.strip())
    if unknown:
        names = ", ".join(repr(t) for t in unknown)
        raise SelectionError(f"no article titled {names} in the data ({len(arts)} articles)")
    return chosen


def read_titles(path: str | os.PathLike[str]) -> list[str]:
    """The titles a titles file lists: one per line, stripped, blank lines skipped."""
    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SelectionError(f"titles file {os.fspath(path)!r} does not exist") from None
    return [line.strip() for line in text.splitlines() if line.strip()]


__all__ = ["SelectionError", "read_titles", "select"]
