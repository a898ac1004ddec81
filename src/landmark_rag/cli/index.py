"""``landmark-rag index PATH...``: encode plain-text files chunking-free into a Chroma store."""

from __future__ import annotations

from pathlib import Path

import typer

from landmark_rag.cli import app
from landmark_rag.cli._common import (
    EXIT_INTERRUPTED,
    CollectionOption,
    DbOption,
    DeviceOption,
    console,
    err_console,
    fail,
    local_db_path,
    open_index,
)


@app.command("index")
def index_command(
    paths: list[Path] = typer.Argument(..., help="Files or folders (searched recursively)."),
    db: str = DbOption,
    model: str | None = typer.Option(
        None, "--model", help="Model alias, directory or .gguf (default: the store's model, else the package default)."
    ),
    glob: str | None = typer.Option(None, "--glob", help="Only files matching this pattern, e.g. '*.md'."),
    batch_size: int = typer.Option(16, "--batch-size", min=1, help="Encoder windows per batch."),
    collection: str = CollectionOption,
    pooling: str | None = typer.Option(
        None, "--pooling", help="Override the model's pooling: landmark, mean or sentence (new stores only)."
    ),
    prune: bool = typer.Option(False, "--prune", help="Also delete documents whose file no longer exists."),
    device: str | None = DeviceOption,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Index .txt/.md and any other plain-text files.

    One vector per sentence, each computed in its document's context. Document ids are
    paths relative to the folder given (a file given directly: its name). Unchanged files
    are skipped; changed files replace their old sentences; binary, undecodable and empty
    files are reported and skipped. A changed document stays visible in its previous
    version until its new one is complete; an interrupted run (or a store that fails, exit
    code 1) leaves every unfinished document in its previous version: run the same command
    again to finish.
    """
    from landmark_rag.ingest import discover_files, index_files, prune_missing, recorded_model
    from landmark_rag.store import StoreError

    db_dir = local_db_path(db)
    unusable: list = []
    try:
        files = discover_files(paths, glob=glob, exclude=[db_dir] if db_dir else [], skipped=unusable)
    except OSError as exc:  # missing path, link loop, FIFO given directly
        fail(str(exc))
    overrides = {"pooling": pooling} if pooling else None
    index = open_index(db, collection, model=model, device=device, overrides=overrides, create=True)
    index.record_identity()  # a writer marks the collection with its model before writing
    encoder, store = index.encoder, index.store
    source = recorded_model(store)[0]
    if not quiet:
        err_console.print(f"model {encoder.model_name} ({source}), {len(files)} files, store {db} [{collection}]",
                          markup=False)
    try:
        report = index_files(files, encoder, store, batch_size=batch_size, show_progress=not quiet, skipped=unusable)
        if prune and not report.interrupted:
            roots = {f.root for f in files} | {Path(p).expanduser().resolve() for p in paths if Path(p).is_dir()}
            report.pruned = prune_missing(store, roots)
        totals = store.count_sentences(), len(store.documents())
    except StoreError as exc:
        done = getattr(exc, "report", None)
        written = len(done.with_status("indexed", "updated")) if done is not None else 0
        fail(
            f"{exc}. {written} document(s) were written before the failure; every other document keeps its "
            "previous version. Run the same command again when the store is reachable."
        )
    _summary(report, *totals)
    if report.interrupted:
        err_console.print(
            f"interrupted: {report.not_reached} file(s) not finished; unfinished documents keep their previous "
            "version (new ones are not visible yet). Run the same command again to complete the index.",
            markup=False,
        )
        raise typer.Exit(EXIT_INTERRUPTED)


def _summary(report, total_sentences: int, total_docs: int) -> None:
    from rich.table import Table
    from rich.text import Text

    c = report.counts()
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("indexed", f"{c['indexed']} new, {c['updated']} updated ({report.sentences:,} sentences)")
    table.add_row("unchanged", str(c["unchanged"]))
    table.add_row("skipped", str(c["skipped"]))
    if report.pruned:
        table.add_row("pruned", f"{len(report.pruned)} (file gone)")
    table.add_row("speed", f"{report.tokens:,} tokens in {report.seconds:.1f} s ({report.tokens_per_second:,.0f} tok/s)")
    table.add_row("store", Text(f"{total_docs} documents, {total_sentences:,} sentences"))
    console.print(table)
    for o in report.with_status("skipped"):
        console.print(f"  skipped {o.source}: {o.reason}", markup=False)
