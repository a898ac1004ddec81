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
    app()
