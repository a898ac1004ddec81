"""Metadata filters inside the lexical index: the rows a ``where`` lets through, as a mask.

A search within part of a store (``where={"doc_id": ...}``, a user's ``{"source": ...}``)
would otherwise rank every sentence of the store and ask Chroma, batch after batch, which of
the best candidates pass: a one-document filter passes a few of 60,000 sentences, so that
took many reads of thousands of ids (0.5-5 s a query, against 15-20 ms unfiltered). The
index knows instead, for each document it holds, the metadata all its indexed sentences share
(``doc_id``; the user's metadata of a document the store wrote; a framework's per-document
fields), so most filters become a mask over its rows, applied to the scores before ranking.

Evaluated here: equality (``{"k": v}``, ``{"k": {"$eq": v}}``) and ``$in`` on a key that no
indexed document has varying between its sentences, and ``$and`` / ``$or`` of those. Values
match as Chroma matches them: numbers by value (``1`` matches ``1.0``), booleans only
booleans, strings only strings; a sentence without the key never matches. Anything else
(``$ne``, ``$gt``, ``$contains``, a key such as ``sentence_index`` that differs within a
document, a key the index keeps no values of) is the *rest* of the filter: :meth:`RowFilter.split`
returns it for the caller to ask the store about, on the candidates the mask let through.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import reduce
from typing import Any

import numpy as np

from landmark_rag.store.schema import DOC_HASH, VERSION

#: Keys the index does not keep per document (each document's own write identifiers: long,
#: and nobody filters on them); a filter on them is left to the store.
UNKEPT = (DOC_HASH, VERSION)

_Value = tuple[str, Any]  # a metadata value as it matches: ("n", 1.0), ("b", True), ("s", "x")


def shared_metadata(records: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    """What the metadata of one document's indexed sentences (``records``) says for filtering:
    the key/value pairs every one of them carries alike, and the keys some carry and others
    lack or carry with another value (sorted). Keys of :data:`UNKEPT` are left out of both."""
    if not records:
        return {}, []
    shared = {k: v for k, v in records[0].items() if k not in UNKEPT and _norm(v) is not None}
    seen = set(records[0])
    for md in records[1:]:
        seen.update(md)
        for k in [k for k, v in shared.items() if k not in md or _norm(md[k]) != _norm(v)]:
            del shared[k]
    varying = sorted(k for k in seen if k not in shared and k not in UNKEPT)
    return shared, varying


class RowFilter:
    """Masks over an index's rows from filters on its documents' shared metadata.

    ``shared[i]`` / ``varying[i]``: what :func:`shared_metadata` said of document ``i``;
    ``rows[i]``: its number of rows (a document's rows are consecutive, in document order).
    Built once per index state; the value index of a key is built on the first filter on it.
    """

    def __init__(self, shared: Sequence[Mapping[str, Any]], varying: Sequence[Sequence[str]], rows: Sequence[int]) -> None:
        if not len(shared) == len(varying) == len(rows):
            raise ValueError("one shared metadata, varying keys and row count per document expected")
        self._shared = list(shared)
        self._varying = {k for keys in varying for k in keys}
        self._row_doc = np.repeat(np.arange(len(rows), dtype=np.int64), np.asarray(rows, dtype=np.int64))
        self._values: dict[str, dict[_Value, list[int]]] = {}

    def split(self, where: Mapping[str, Any]) -> tuple[np.ndarray | None, dict[str, Any] | None]:
        """``(mask, rest)``: a boolean mask over the rows for the part of ``where`` evaluated
        here (``None``: no part was), and the part the store must still evaluate (``None``:
        none; then the mask is the whole filter). A row passes ``where`` iff it passes both."""
        mask, rest = self._split(where)
        return (None if mask is None else mask[self._row_doc]), rest

    def documents(self, where: Mapping[str, Any]) -> np.ndarray | None:
        """A boolean mask over the documents (in the order given) whose sentences pass
        ``where``, when it is evaluated here whole; ``None`` when any part is left to the store."""
        mask, rest = self._split(where)
        return mask if rest is None else None

    def _split(self, where: Any) -> tuple[np.ndarray | None, dict[str, Any] | None]:
        if not isinstance(where, Mapping) or len(where) != 1:
            return None, dict(where) if isinstance(where, Mapping) else where
        ((key, value),) = where.items()
        if key in ("$and", "$or"):
            if not isinstance(value, list) or not value:
                return None, dict(where)
            parts = [self._split(p) for p in value]
            masks = [m for m, _ in parts if m is not None]
            rest = [r for _, r in parts if r is not None]
            if key == "$or":  # all evaluated here, or all left to the store
                return (_combine(np.logical_or, masks), None) if len(masks) == len(parts) and not rest else (None, dict(where))
            return _combine(np.logical_and, masks), None if not rest else rest[0] if len(rest) == 1 else {"$and": rest}
        mask = None if str(key).startswith("$") else self._leaf(str(key), value)
        return (mask, None) if mask is not None else (None, dict(where))

    def _leaf(self, key: str, condition: Any) -> np.ndarray | None:
        """The documents passing ``{key: condition}``, or ``None`` when it is not evaluated here."""
        if key in self._varying or key in UNKEPT:
            return None
        if isinstance(condition, Mapping):
            if len(condition) != 1:
                return None
            ((op, arg),) = condition.items()
            if op == "$eq":
                wanted = [arg]
            elif op == "$in" and isinstance(arg, list) and arg:
                wanted = arg
            else:
                return None
        else:
            wanted = [condition]
        values = [_norm(v) for v in wanted]
        if any(v is None for v in values):
            return None
        index = self._index(key)
        mask = np.zeros(len(self._shared), dtype=bool)
        for v in values:
            mask[index.get(v, [])] = True  # type: ignore[arg-type]
        return mask

    def _index(self, key: str) -> dict[_Value, list[int]]:
        """``value -> documents`` of one key (built on its first use, once per index state)."""
        index = self._values.get(key)
        if index is None:
            index = {}
            for i, md in enumerate(self._shared):
                if key in md:
                    index.setdefault(_norm(md[key]), []).append(i)  # type: ignore[arg-type]
            self._values[key] = index
        return index


def _combine(op: Any, masks: list[np.ndarray]) -> np.ndarray | None:
    """``op`` (``np.logical_and`` / ``np.logical_or``) over ``masks``; ``None`` for none."""
    return reduce(op, masks) if masks else None


def _norm(value: Any) -> _Value | None:
    """A metadata value as Chroma compares it (``None``: not a scalar Chroma stores)."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, int | float):
        return ("n", float(value))
    if isinstance(value, str):
        return ("s", value)
    return None


__all__ = ["UNKEPT", "RowFilter", "shared_metadata"]
