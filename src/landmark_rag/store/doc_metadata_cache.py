"""Where the store's table of per-document metadata (``store/doc_metadata.py``) is kept between processes.

Deriving the table reads every visible sentence's metadata (5.5 s at 60,000 sentences on a
2-core machine, about a minute at a million), which each new process would otherwise pay on
its first dense search filtered on user metadata. A local store keeps it in
``<db>/landmark_doc_metadata/<collection>.json``, as the lexical index keeps its terms beside
the store (``store/lexical_cache.py``); a server or in-memory store keeps it in memory only.

The file is only ever a copy, never trusted on its own:

- it names the sentence and manifest collections it was read from (their Chroma ids, so a
  collection deleted and made again under the same name is another store) and the format;
  a file naming others, of another format, torn or unreadable is ignored and rewritten;
- each document's entry carries the version key of the manifest record it was read under
  (``manifest.version_key``: a fresh id for every write of the document), and the table keeps
  an entry only while the document's current record has that key; every other document is
  read again from the sentences. A file several generations old thus costs reading the
  documents written since, and one from the current generation costs one manifest read;
- whether the store holds sentences no record accounts for is counted again on every load,
  never taken from the file.

It is written to a staging folder and renamed over the old file, so a reader sees an old or a
new file, never a torn one; a folder that cannot be written leaves the table in memory.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from landmark_rag.staging import remove_leftovers, staging_dir
from landmark_rag.store.lexical_cache import safe_name

DOC_TABLE_DIR = "landmark_doc_metadata"
#: bump when the file's entries change meaning (what ``lexical_filter.shared_metadata``
#: returns, what a version means), so files of earlier releases are rebuilt, not misread
FORMAT = 1


@dataclass(frozen=True)
class DocEntry:
    """One visible document as the table holds it."""

    key: str  # the record's version key when read (``manifest.version_key``)
    version: str | None  # the version its sentence ids carry (None: ids not derivable)
    n: int  # its visible sentences
    shared: dict[str, Any]
    varying: list[str]


@dataclass(frozen=True)
class CachedTable:
    """What a file holds: the entries, and the manifest generation they were synced at."""

    generation: str
    docs: dict[str, DocEntry]


class DocTableCache:
    """The file of one store's table (``path`` ``None``: memory only); ``signature`` says which
    collections and which format it is of (see the module docstring)."""

    def __init__(self, path: Path | None, signature: dict[str, Any]) -> None:
        self.path = path
        self.signature = signature

    @classmethod
    def beside(cls, collection: Any, manifest: Any | None, local_path: str | None) -> DocTableCache:
        """The cache of a store's table: beside a local store, in memory for a server or an
        in-memory store, or where the collections do not say which they are."""
        ids = [getattr(c, "id", None) for c in (collection, manifest)]
        name = getattr(collection, "name", None)
        if local_path is None or manifest is None or None in ids or not isinstance(name, str):
            return cls(None, {})
        signature = {"format": FORMAT, "collection": str(ids[0]), "manifest": str(ids[1])}
        return cls(Path(local_path) / DOC_TABLE_DIR / f"{safe_name(name)}.json", signature)

    def load(self) -> CachedTable | None:
        """The cached table, or ``None`` (no file, another store or format, unreadable)."""
        if self.path is None:
            return None
        try:
            meta = json.loads(self.path.read_text(encoding="utf-8"))
            if not isinstance(meta, dict) or meta.get("signature") != self.signature:
                return None
            generation = meta["generation"]
            if not isinstance(generation, str):
                return None
            docs = {}
            for row in meta["docs"]:
                d, entry = _entry(row)
                docs[d] = entry
        except (OSError, ValueError, KeyError, TypeError):
            return None  # absent, torn or not ours: rebuilt from the store
        return CachedTable(generation, docs)

    def save(self, table: CachedTable) -> bool:
        """Replace the file with ``table`` at once; ``False`` when it cannot be written (a
        read-only folder, metadata JSON cannot hold): the table then lives in memory only."""
        if self.path is None:
            return False
        try:
            text = json.dumps({
                "signature": self.signature,
                "generation": table.generation,
                "docs": [[d, e.key, e.version, e.n, e.shared, e.varying] for d, e in table.docs.items()],
            })
        except (TypeError, ValueError):
            return False
        folder, name = self.path.parent, self.path.name
        try:
            folder.mkdir(parents=True, exist_ok=True)
            tmp = staging_dir(folder, prefix=f".{name}.tmp-")
        except OSError:
            return False
        try:
            (tmp / name).write_text(text, encoding="utf-8")
            os.replace(tmp / name, self.path)
            return True
        except OSError:
            return False  # a read-only or full disk: memory only
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            # staging folders a killed process left behind go with a later save
            remove_leftovers(folder, (f".{name}.tmp-",))


def _entry(row: Any) -> tuple[str, DocEntry]:
    """One document of a file, checked field by field (``TypeError``: not an entry)."""
    d, key, version, n, shared, varying = row
    if not (
        isinstance(d, str) and isinstance(key, str) and (version is None or isinstance(version, str))
        and isinstance(n, int) and not isinstance(n, bool) and n >= 0 and isinstance(shared, dict)
        and isinstance(varying, list) and all(isinstance(k, str) for k in varying)
    ):
        raise TypeError(f"not a document entry: {row!r}")
    return d, DocEntry(key, version, n, shared, varying)


__all__ = ["DOC_TABLE_DIR", "FORMAT", "CachedTable", "DocEntry", "DocTableCache"]
