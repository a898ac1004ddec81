"""The ``landmark-rag`` command line (Typer: what the Python tooling around us uses).

Each sub-command lives in its own module and registers itself on ``app``; commands import
their heavy dependencies (torch, chromadb) inside the function so ``--help`` stays fast.
"""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="landmark-rag",
    help="Chunking-free retrieval over long documents with Landmark Embedding.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="markdown",
)


@app.callback()
def _root() -> None:
    # A callback keeps Typer in multi-command mode even while only one sub-command is
    # registered (otherwise ``landmark-rag eval ...`` is rejected as an extra argument).
    pass

# Sub-command modules; each defines functions decorated with @app.command().
_COMMAND_MODULES = ["index", "query", "info", "demo", "eval", "train"]


def _register() -> None:
    for name in _COMMAND_MODULES:
        try:
            importlib.import_module(f"landmark_rag.cli.{name}")
        except ModuleNotFoundError as exc:  # a command not written yet, or an optional extra missing
            if exc.name != f"landmark_rag.cli.{name}":
                raise


def main() -> None:
    _register()
    try:
        app()
    except Exception as exc:  # noqa: BLE001 - filtered below; anything else re-raises as before
        _exit_on_store_failure(exc)
        raise


def _exit_on_store_failure(exc: BaseException) -> None:
    """A store that fails mid-command (server stopped, connection lost) ends in one line, exit 1.

    Commands report the failures they expect themselves; this catches the rest of the store
    and network failures (e.g. a server that dies between two queries) instead of a traceback.
    """
    import sys

    module = type(exc).__module__ or ""
    from_store = type(exc).__name__ == "StoreError" or module.split(".")[0] in ("chromadb", "httpx", "httpcore")
    if not (from_store or isinstance(exc, ConnectionError)):
        return
    from landmark_rag.render.terminal import sanitize

    text = " ".join(str(exc).split())
    sys.stderr.write(sanitize(f"error: the store failed: {type(exc).__name__}: {text}") + "\n")
    raise SystemExit(1)
