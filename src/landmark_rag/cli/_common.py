"""Helpers shared by the ``index``, ``query``, ``info`` and ``demo`` commands.

Options that mean the same everywhere are defined once; opening a store and loading the
model it was built with is done once, with errors turned into one clear line and a
non-zero exit code instead of a traceback. Exit codes: 1 = nothing to work on (no store,
no such path, model not found), 2 = bad usage (Typer's own), 3 = the store was built with a
different model, 130 = interrupted.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from landmark_rag.render.terminal import TerminalConsole

if TYPE_CHECKING:
    from landmark_rag.encode import LandmarkEncoder
    from landmark_rag.store import ChromaSentenceStore

EXIT_NOT_FOUND = 1
EXIT_MISMATCH = 3
EXIT_INTERRUPTED = 130

DEFAULT_DB = "./landmark_db"  # same as landmark_rag.store.DEFAULT_DB (not imported: keeps --help fast)
DEFAULT_COLLECTION = "landmark"

DB_HELP = "Store: a directory (Chroma PersistentClient) or http://HOST:PORT of a Chroma server."
DbOption = typer.Option(DEFAULT_DB, "--db", envvar="LANDMARK_RAG_DB", help=DB_HELP)
CollectionOption = typer.Option(DEFAULT_COLLECTION, "--collection", help="Chroma collection name.")
DeviceOption = typer.Option(None, "--device", help="cpu, cuda, mps (default: the best available).")

# Everything printed goes through render.terminal.sanitize (document text is untrusted).
console = TerminalConsole(highlight=False, soft_wrap=True)  # passages are not re-wrapped: copy-paste stays exact
err_console = TerminalConsole(stderr=True, highlight=False, soft_wrap=True)  # an error stays one line


def fail(message: str, code: int = EXIT_NOT_FOUND) -> NoReturn:
    """Print one error line on stderr and exit with ``code``."""
    err_console.print("[bold red]error:[/] ", end="")
    err_console.print(message, markup=False)
    raise typer.Exit(code)


def is_url(db: str) -> bool:
    return db.startswith(("http://", "https://"))


def local_db_path(db: str) -> Path | None:
    """The store's directory when ``db`` is local (so indexing never descends into it)."""
    return None if is_url(db) else Path(db).expanduser().resolve()


def make_client(db: str) -> Any:
    """A Chroma client for ``db``, with an unreachable server reported clearly."""
    from landmark_rag.store import make_client as core_make_client

    try:
        client = core_make_client(os.fspath(Path(db).expanduser()) if not is_url(db) else db)
        if is_url(db):
            client.heartbeat()
    except Exception as exc:  # noqa: BLE001 - chromadb raises many kinds for a dead server
        fail(f"cannot open the store at {db}: {type(exc).__name__}: {exc}")
    return client


def open_existing_store(db: str, collection: str) -> ChromaSentenceStore:
    """Open a store that must already exist (query, info); never creates anything."""
    from landmark_rag.store import ChromaSentenceStore

    if not is_url(db) and not Path(db).expanduser().is_dir():
        fail(f"no store at {db}: run `landmark-rag index PATH --db {db}` first")
    client = make_client(db)
    try:
        return ChromaSentenceStore.open(collection_name=collection, client=client, create=False)
    except LookupError:
        fail(f"the store at {db} has no collection {collection!r}: run `landmark-rag index` first")


@functools.lru_cache(maxsize=4)
def _load(source: str, overrides: tuple[tuple[str, Any], ...], device: str | None) -> LandmarkEncoder:
    from landmark_rag.encode import LandmarkEncoder

    return LandmarkEncoder.from_pretrained(source, device=device, **dict(overrides))


def load_encoder(source: str, overrides: dict[str, Any] | None = None, device: str | None = None) -> LandmarkEncoder:
    """Load (once per process) the model ``source`` with config ``overrides``.

    Cached because one process may run several commands (``demo``, tests, notebooks calling
    the app), and loading costs seconds while the encoder is stateless between calls.
    """
    from landmark_rag.encode import ModelNotFoundError

    try:
        return _load(source, tuple(sorted((overrides or {}).items())), device)
    except ModelNotFoundError as exc:
        fail(str(exc))
    except ValueError as exc:  # e.g. an invalid pooling name
        fail(f"cannot load model {source!r}: {exc}", 2)


def encoder_for(
    store: ChromaSentenceStore | None,
    model: str | None,
    *,
    device: str | None = None,
    overrides: dict[str, Any] | None = None,
) -> tuple[LandmarkEncoder, str]:
    """The encoder to use with ``store`` and the model source to record for it.

    No ``--model`` (and no overrides) on an existing store: the model it was built with,
    set up exactly as at indexing time. Otherwise the model asked for (default: the
    package's), which the caller then checks against the store's identity.
    """
    from landmark_rag.ingest import model_source, recorded_model
    from landmark_rag.models import default_model

    if store is not None and model is None and not overrides:
        source, recorded = recorded_model(store)
        if source and Path(source).is_absolute() and not Path(source).exists():
            fail(f"the model this store was built with is no longer at {source}; pass --model with its new location")
        if source:
            return load_encoder(source, recorded, device), source
    source = model_source(model, default_model())
    return load_encoder(source, overrides, device), source


def check_store(store: ChromaSentenceStore, encoder: LandmarkEncoder) -> None:
    """Refuse (exit 3) a store built with another model or landmark set-up."""
    from landmark_rag.store import StoreMismatchError

    try:
        store.check_identity(encoder.config.identity())
    except StoreMismatchError as exc:
        fail(str(exc), EXIT_MISMATCH)


def open_store_for_writing(client: Any, collection: str, encoder: LandmarkEncoder) -> ChromaSentenceStore:
    """Open or create ``collection`` for ``encoder``; a different model's store exits 3."""
    from landmark_rag.store import ChromaSentenceStore, StoreMismatchError

    try:
        return ChromaSentenceStore.open(
            collection_name=collection, client=client, identity=encoder.config.identity(), create=True
        )
    except StoreMismatchError as exc:
        fail(str(exc), EXIT_MISMATCH)
    except Exception as exc:  # noqa: BLE001 - e.g. chromadb's InvalidArgumentError for a bad name
        fail(f"cannot open collection {collection!r}: {exc}")
