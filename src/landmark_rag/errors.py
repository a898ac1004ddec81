"""The base of the errors landmark-rag raises on purpose.

``except LandmarkRagError`` catches every refusal and failure the package reports itself (a
store that failed, a store built with another model, a file that is not a document), and
nothing that is a bug. Each subclass also keeps the builtin base it always had
(``ValueError``, ``RuntimeError``, ``OSError``, ``ConnectionError``), so existing ``except``
clauses keep working.
"""

from __future__ import annotations


class LandmarkRagError(Exception):
    """An error landmark-rag raises on purpose (see the module docstring)."""


__all__ = ["LandmarkRagError"]
