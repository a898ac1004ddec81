"""Helpers shared by the ``index``, ``query``, ``info`` and ``demo`` commands.

Options that mean the same everywhere are defined once; opening a store and loading the
model it was built with is done once, with errors turned into one clear line and a
non-zero exit code instead of a traceback. Exit codes: 1 = nothing to work on (no store,
no such path, model not found), 2 = bad usage (Typer's own), 3 = the store was built with a
different model, 130 = interrupted.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from landmark_rag.render.terminal import TerminalConsole

if TYPE_CHECKING:
    from landmark_rag.index import LandmarkIndex
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


def check_choice(value: str | None, choices: tuple[str, ...], param_hint: str) -> None:
    """Refuse an option value outside ``choices`` (case ignored) as bad usage, exit code 2,
    before anything slow (loading a model, indexing) has run."""
    if value is not None and value.lower() not in choices:
        raise typer.BadParameter(f"choose one of {', '.join(choices)}", param_hint=param_hint)


def local_db_path(db: str) -> Path | None:
    """The store's directory when ``db`` is local (so indexing never descends into it)."""
    from landmark_rag.store.client import is_server_url

    return None if is_server_url(db) else Path(db).expanduser().resolve()


def no_store_folder(db: str) -> bool:
    """Whether ``db`` names a local store folder that does not exist (nothing to read); for the
    CLI an in-memory store, empty in a new process, has nothing to read either."""
    from landmark_rag.store.client import MEMORY, missing_store_folder

    return db == MEMORY or missing_store_folder(db)


def make_client(db: str) -> Any:
    """A Chroma client for ``db`` (``store.make_client``), with an unreachable server reported clearly."""
    from landmark_rag.store import make_client as core_make_client

    try:
        return core_make_client(db)
    except Exception as exc:  # noqa: BLE001 - chromadb raises many kinds for a dead server
        fail(f"cannot open the store at {db}: {type(exc).__name__}: {exc}")


def open_existing_store(db: str, collection: str) -> ChromaSentenceStore:
    """Open a store that must already exist (query, info); never creates anything."""
    from landmark_rag.store import ChromaSentenceStore

    if no_store_folder(db):
        fail(f"no store at {db}: run `landmark-rag index PATH --db {db}` first")
    client = make_client(db)
    try:
        return ChromaSentenceStore.open(collection_name=collection, client=client, create=False)
    except LookupError as exc:
        fail(missing_collection(db, collection, exc))


def missing_collection(db: str, collection: str, exc: BaseException) -> str:
    """The line for a store without the collection asked for: the ones it has, or how to make one."""
    available = getattr(exc, "available", None)
    if available:
        names = ", ".join(available)
        return f"the store at {db} has no collection {collection!r}; it has: {names} (choose one with --collection NAME)"
    return f"the store at {db} has no collection {collection!r}: run `landmark-rag index` first"


def open_index(
    db: str,
    collection: str,
    *,
    model: str | None = None,
    device: str | None = None,
    overrides: dict[str, Any] | None = None,
    create: bool,
    lazy: bool = False,
    compile_model: bool = False,
) -> LandmarkIndex:
    """``LandmarkIndex.open`` with its errors turned into one line and an exit code.

    ``create=False`` (query): the store must already exist and nothing is written.
    ``lazy``/``compile_model``: see ``LandmarkIndex.open`` (``index``).
    """
    from landmark_rag.encode import ModelNotFoundError
    from landmark_rag.index import LandmarkIndex

    if not create and no_store_folder(db):
        fail(f"no store at {db}: run `landmark-rag index PATH --db {db}` first")
    client = make_client(db)
    with model_errors(model):
        try:
            return LandmarkIndex.open(
                db, collection=collection, model=model, device=device, overrides=overrides, create=create,
                client=client, lazy=lazy, compile_encoder=compile_model,
            )
        except LookupError as exc:
            fail(missing_collection(db, collection, exc))
        except (ValueError, ModelNotFoundError):
            raise  # the model's errors: model_errors
        except Exception as exc:  # noqa: BLE001 - e.g. chromadb's InvalidArgumentError for a bad name
            fail(f"cannot open collection {collection!r}: {exc}")


@contextmanager
def model_errors(model: str | None) -> Iterator[None]:
    """Errors of choosing and loading a store's model, as one line and an exit code (a lazily
    loaded model raises them during ``index``, when the first file needs encoding)."""
    from landmark_rag.encode import ModelNotFoundError
    from landmark_rag.store import ModelNotRecordedError, StoreMismatchError

    try:
        yield
    except ModelNotRecordedError as exc:
        fail(str(exc), 2)
    except StoreMismatchError as exc:
        fail(str(exc), EXIT_MISMATCH)
    except ModelNotFoundError as exc:
        fail(str(exc))
    except ValueError as exc:  # e.g. an invalid pooling name
        fail(f"cannot load model {model!r}: {exc}" if model else f"cannot load the store's model: {exc}", 2)


def open_query_index(db: str, collection: str, *, model: str | None, device: str | None) -> LandmarkIndex:
    """A read-only index for ``query``: the store's model as exported to ONNX when the cache
    has it (no torch, no transformers: ``encode.export.onnx_query``), else :func:`open_index`.

    Only the store's own model on the CPU takes the fast path; ``--model`` or another device
    loads the torch encoder, which also checks it against the store.
    """
    if model is None and device in (None, "cpu"):
        from landmark_rag.encode.export.onnx_query import enabled, load_query_encoder

        if enabled():
            from landmark_rag.index import LandmarkIndex

            store = open_existing_store(db, collection)
            identity = store.identity()
            encoder = load_query_encoder(identity) if identity else None
            if encoder is not None:
                return LandmarkIndex(store, encoder)
    return open_index(db, collection, model=model, device=device, create=False)


def export_for_queries(encoder: Any) -> None:
    """Export ``encoder``'s query network for later cold queries (``encode.export.onnx_query``);
    a no-op when it already exists, is switched off, or the encoder cannot be exported."""
    from landmark_rag.encode.export.onnx_query import enabled, export_query_model, exportable

    if enabled() and exportable(encoder):
        export_query_model(encoder)
