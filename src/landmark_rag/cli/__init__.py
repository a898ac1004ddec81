"""The ``landmark-rag`` command line (Typer: what the Python tooling around us uses).

Each sub-command lives in its own module and registers itself on ``app``; commands import
their heavy dependencies (torch, chromadb) inside the function so ``--help`` stays fast.
"""

from __future__ import annotations

import importlib
from types import MethodType
from typing import Any

import typer
from typer.core import TyperGroup

# Typer labels every value with its Python annotation (``<str>``, ``<list[Path]>``, and
# ``<bool>`` next to flags that take no value); help reads better with the plain
# click-style names, and a flag with none.
_PLAIN_LABELS = {
    "str": "TEXT",
    "int": "INTEGER",
    "int range": "INTEGER",  # the range itself is printed next to it ([x>=1])
    "float": "FLOAT",
    "float range": "FLOAT",
    "path": "PATH",
    "file": "FILE",
    "dir": "DIR",
}


def _plain_display_type(param: Any, ctx: Any) -> str:
    if getattr(param, "is_flag", False):
        return ""
    label = type(param).display_type(param, ctx)
    if not (label.startswith("<") and label.endswith(">")) or param.type_descriptor.is_choice:
        return label
    label = label[1:-1]
    if label.startswith("list[") and label.endswith("]"):
        label = label[5:-1]
    return _PLAIN_LABELS.get(label.lower(), label.upper())


class _PlainLabelGroup(TyperGroup):
    """The ``landmark-rag`` group: its commands' help shows ``TEXT``, ``PATH...``, no ``<bool>``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for command in (self, *self.commands.values()):
            for param in command.params:
                _plain(param)
            command.get_help_option = MethodType(_plain_help_option, command)  # type: ignore[method-assign]


def _plain(param: Any) -> Any:
    if param is not None and hasattr(param, "type_descriptor"):
        param.display_type = MethodType(_plain_display_type, param)
    return param


def _plain_help_option(command: Any, ctx: Any) -> Any:
    return _plain(type(command).get_help_option(command, ctx))  # --help is made on demand, not in params


app = typer.Typer(
    cls=_PlainLabelGroup,
    name="landmark-rag",
    help="Chunking-free retrieval over long documents with Landmark Embedding.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="markdown",
)


def _print_version(value: bool) -> None:
    if value:
        from landmark_rag import __version__

        typer.echo(f"landmark-rag {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
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
    except Exception as exc:  # filtered below; anything else re-raises as before
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
