"""Why a file is not a document, in one line.

``DocumentError`` subclasses ``BadFileError`` (the reason a text file is not readable), so
every caller that skips undecodable text files with their reason (the indexer, the Ray
workers) skips a scanned, encrypted or corrupt PDF the same way, with no new handling.
Both live here, below the ingestion, which imports them from here.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from landmark_rag.errors import LandmarkRagError

#: The extra that installs the document libraries, and how to get it.
EXTRA_HINT = "needs the [documents] extra: pip install 'landmark-rag[documents]'"


class BadFileError(LandmarkRagError, ValueError):
    """A file that is not a readable document; ``reason`` is one short phrase."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class DocumentError(BadFileError):
    """A file that cannot be turned into document text; ``reason`` is one short line."""


class MissingExtraError(DocumentError):
    """The library for this format is not installed. Kept apart from damaged files so a
    caller can stop at the first one (one fix for all files) instead of skipping each."""

    def __init__(self, package: str, detail: str = "is not installed") -> None:
        super().__init__(f"{EXTRA_HINT} ({package} {detail})")
        self.package = package


def require(module: str, package: str | None = None) -> ModuleType:
    """Import an optional library at the moment a file needs it.

    Lazily, so ``import landmark_rag`` and text-only runs never pay for PDF or HTML
    libraries (tests/test_imports.py); a missing one becomes :class:`MissingExtraError`.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        # a library that is there but cannot import (a dependency of its own missing, as
        # trafilatura without lxml_html_clean) must not be reported as absent
        top = module.split(".")[0]
        detail = "is not installed" if exc.name == top else f"cannot be imported: {exc}"
        raise MissingExtraError(package or module, detail) from None
