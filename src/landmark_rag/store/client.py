"""Chroma clients and collections: creating them, re-opening them, turning their failures into one error.

Everything here is about talking to Chroma, nothing about what is stored: the one place a
client is made (:func:`make_client`) and a ``db`` is told to be a server
(:func:`is_server_url`), the pair of collections a store uses (:class:`Collections`, which
re-opens a local folder that another process wrote to), and :func:`store_errors`, which
turns whatever the client raises into :class:`StoreError`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from landmark_rag.errors import LandmarkRagError

DEFAULT_DB = "./landmark_db"
DEFAULT_COLLECTION = "landmark"
#: ``db`` value for a store that lives in memory only (tests, notebooks, one-off runs).
MEMORY = ":memory:"
#: Records per Chroma call when the client does not say how many it takes.
FALLBACK_BATCH = 1000


class StoreError(LandmarkRagError, RuntimeError):
    """The store itself failed (server gone, disk full, database locked): not the document's fault.

    Raised by writes so that callers stop instead of treating the failure as a bad input
    file; the document's previous version is still visible (see ``store/manifest.py``).
    """


def is_server_url(db: str | os.PathLike[str] | None) -> bool:
    """Whether ``db`` names a Chroma server (``http(s)://host:port``) rather than a folder."""
    return db is not None and os.fspath(db).startswith(("http://", "https://"))


def missing_store_folder(db: str | os.PathLike[str] | None) -> bool:
    """Whether ``db`` names a local store folder that does not exist (a server or memory never
    does): nothing there to read, and a PersistentClient would create it to find nothing."""
    target = os.fspath(db) if db is not None else DEFAULT_DB
    return target != MEMORY and not is_server_url(target) and not Path(target).expanduser().is_dir()


def make_client(db: str | os.PathLike[str] | None = None) -> Any:
    """The one place a Chroma client is created.

    ``http(s)://host:port`` -> HttpClient (checked with a heartbeat, so an unreachable
    server fails here rather than at the first query); ``":memory:"`` -> EphemeralClient
    (nothing written to disk); anything else is a directory for a PersistentClient
    (``None``: ``./landmark_db``).
    """
    import chromadb

    target = os.fspath(db) if db is not None else DEFAULT_DB
    if target == MEMORY:
        return chromadb.EphemeralClient()
    if is_server_url(target):
        url = urlparse(target)
        client = chromadb.HttpClient(
            host=url.hostname or "localhost", port=url.port or (443 if url.scheme == "https" else 8000),
            ssl=url.scheme == "https",
        )
        client.heartbeat()
        return client
    path = Path(target).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(path))


def manifest_name(name: str) -> str:
    """The manifest collection that goes with sentence collection ``name``."""
    return f"{name}__documents"


class CollectionNotFoundError(LookupError):
    """A store has no collection of that name; ``available`` lists the ones it has (so the
    message can say what to ask for instead)."""

    def __init__(self, name: str, available: list[str]) -> None:
        self.name = name
        self.available = list(available)
        super().__init__(f"no collection {name!r} in this store ({self.listing()})")

    def listing(self) -> str:
        if not self.available:
            return "it has no collections"
        return "its collections: " + ", ".join(repr(c) for c in self.available)


def sentence_collections(client: Any) -> list[str]:
    """Names of the sentence collections in a store, sorted (manifests left out); empty when
    they cannot be listed."""
    try:
        found = client.list_collections()
    except Exception:  # noqa: BLE001 - a listing is only ever used to explain another error
        return []
    names = sorted(str(getattr(c, "name", c)) for c in found)
    return [n for n in names if not n.endswith("__documents")]


def open_collections(client: Any, name: str, *, create: bool, metadata: dict[str, Any]) -> tuple[Any, Any | None]:
    """The sentence collection ``name`` and its manifest (``None`` when there is none).

    ``create``: make both when missing, the sentence collection with ``metadata``; else a
    missing sentence collection raises ``LookupError``.
    """
    if create:
        collection = client.get_or_create_collection(name, metadata=metadata, embedding_function=None)
        return collection, client.get_or_create_collection(manifest_name(name), embedding_function=None)
    try:
        collection = client.get_collection(name, embedding_function=None)
    except Exception as exc:  # chromadb raises NotFoundError / ValueError by version
        raise CollectionNotFoundError(name, sentence_collections(client)) from exc
    try:
        manifest = client.get_collection(manifest_name(name), embedding_function=None)
    except Exception:  # noqa: BLE001 - a collection written without the protocol
        manifest = None
    return collection, manifest


def manifest_beside(collection: Any, *, create: bool) -> Any | None:
    """The manifest of a collection someone else opened (e.g. LlamaIndex's), in its tenant and
    database; ``None`` when it has none (``create``: made when missing)."""
    from chromadb.api.models.Collection import Collection

    server = collection._client
    where = {"tenant": collection.tenant, "database": collection.database}
    try:
        if create:
            model = server.get_or_create_collection(name=manifest_name(collection.name), **where)
        else:
            model = server.get_collection(name=manifest_name(collection.name), **where)
    except Exception:  # noqa: BLE001 - no manifest: a collection written without the protocol
        return None
    return Collection(client=server, model=model, embedding_function=None)


class Collections:
    """A store's two collections (sentences and manifest), kept current for this process.

    A Chroma PersistentClient keeps its vector index in memory: after another process
    writes, counts and metadata (read from SQLite) are new but searches run on the old
    index and filtered searches fail ("Error finding id"). The database file changes on
    every write, so comparing its size and modification time (one ``stat``) tells when to
    re-open (tens of milliseconds): :meth:`fresh` does that before every read and write.
    Server and in-memory stores are always current.
    """

    def __init__(self, collection: Any, manifest: Any | None = None) -> None:
        self.collection = collection
        self.manifest = manifest
        self.local_path = local_path(collection)
        self._lock = threading.Lock()
        self._seen = _signature(self.local_path) if self.local_path else None

    def fresh(self) -> None:
        """Re-open a local store that another process changed since this one last looked."""
        path = self.local_path
        if path is None:
            return
        now = _signature(path)
        if now == self._seen:
            return
        with self._lock:
            if now == self._seen:
                return
            self._reopen(path)
            # a write within the file clock's resolution may not move the mtime: a signature
            # taken that close to a write is not trusted, so the next read checks again
            self._seen = None if _recent(now) else now

    def own_write_done(self) -> None:
        """This process's own writes are visible to it: no re-open for them (a local store has
        one writing process at a time; see docs/reliability.md)."""
        if self.local_path is not None:
            self._seen = _signature(self.local_path)

    def batch_size(self) -> int:
        """Records per Chroma call: what the client takes, at most 5000."""
        try:
            return max(1, min(int(self.collection._client.get_max_batch_size()), 5000))
        except Exception:  # noqa: BLE001 - a wrapper or an older client
            return FALLBACK_BATCH

    def upsert_sentences(
        self, ids: Sequence[str], embeddings: Any, metadatas: Sequence[dict[str, Any]], documents: Sequence[str]
    ) -> None:
        """Write sentence records in batches the client accepts."""
        step = self.batch_size()
        for i in range(0, len(ids), step):
            self.collection.upsert(
                ids=list(ids[i : i + step]), embeddings=embeddings[i : i + step],
                metadatas=list(metadatas[i : i + step]), documents=list(documents[i : i + step]),
            )

    def delete_sentences(self, ids: Sequence[str]) -> None:
        """Delete sentence records in batches the client accepts."""
        step = self.batch_size()
        for i in range(0, len(ids), step):
            self.collection.delete(ids=list(ids[i : i + step]))

    def _reopen(self, path: str) -> None:
        import chromadb
        from chromadb.api.shared_system_client import SharedSystemClient

        # drop the shared (stale) system for this path without stopping it: other holders
        # of the old client keep working; this store gets a new client on fresh state
        SharedSystemClient._identifier_to_system.pop(path, None)
        client = chromadb.PersistentClient(path=path)
        self.collection = client.get_collection(self.collection.name, embedding_function=None)
        if self.manifest is not None:
            self.manifest = client.get_collection(self.manifest.name, embedding_function=None)


def merge_metadata(collection: Any, changes: dict[str, Any]) -> None:
    """Merge ``changes`` into a collection's metadata.

    Chroma replaces the whole metadata on ``modify`` and refuses to change ``hnsw:`` keys,
    so the others are carried over and those left out.
    """
    md = {k: v for k, v in (collection.metadata or {}).items() if not k.startswith("hnsw:")}
    md.update(changes)
    collection.modify(metadata=md)


@contextmanager
def store_errors(what: str) -> Iterator[None]:
    """Turn anything the Chroma client raises into :class:`StoreError` (saying what was being done).

    landmark-rag's own errors pass through unchanged (a refusal is not a store failure).
    """
    try:
        yield
    except LandmarkRagError:
        raise
    except Exception as exc:  # chromadb raises many kinds for one dead server
        raise StoreError(f"store failed while {what}: {type(exc).__name__}: {_one_line(exc)}") from exc


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:297] + "..."


def local_path(collection: Any) -> str | None:
    """The folder of a PersistentClient's collection (``None`` for a server or in memory)."""
    try:
        settings = collection._client.get_settings()
    except Exception:  # noqa: BLE001 - not a chromadb collection (or an older client)
        return None
    path = getattr(settings, "persist_directory", None)
    if not getattr(settings, "is_persistent", False) or not path or not Path(path, "chroma.sqlite3").exists():
        return None
    return str(path)


def _signature(path: str) -> tuple[Any, ...]:
    """What changes whenever any process writes the store: the SQLite files' size and mtime."""
    out: list[Any] = []
    for name in ("chroma.sqlite3", "chroma.sqlite3-wal"):
        try:
            st = os.stat(os.path.join(path, name))
        except OSError:
            out.append(None)
        else:
            out.append((st.st_mtime_ns, st.st_size, st.st_ino))
    return tuple(out)


def _recent(signature: tuple[Any, ...], within_s: float = 0.05) -> bool:
    newest = max((part[0] for part in signature if part is not None), default=0)
    return time.time_ns() - newest < within_s * 1e9


__all__ = [
    "DEFAULT_COLLECTION",
    "DEFAULT_DB",
    "MEMORY",
    "Collections",
    "StoreError",
    "is_server_url",
    "make_client",
    "manifest_name",
    "merge_metadata",
    "missing_store_folder",
    "store_errors",
]
