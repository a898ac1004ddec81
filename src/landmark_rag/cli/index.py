"""``landmark-rag index PATH...``: encode PDF, Word, HTML, Markdown and text files chunking-free into a store."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import typer

from landmark_rag.cli import app
from landmark_rag.cli._common import (
    EXIT_INTERRUPTED,
    CollectionOption,
    DbOption,
    DeviceOption,
    console,
    err_console,
    export_for_queries,
    fail,
    local_db_path,
    make_client,
    model_errors,
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
    batch_size: int = typer.Option(16, "--batch-size", min=1, help="Encoder windows per batch on a CPU (on CUDA batches are sized by padded tokens from free memory)."),
    collection: str = CollectionOption,
    pooling: str | None = typer.Option(
        None, "--pooling", help="Override the model's pooling: landmark, mean or sentence (new stores only)."
    ),
    prune: bool = typer.Option(
        False, "--prune", help="Also delete documents whose file no longer exists or holds no document now (emptied, binary)."
    ),
    device: str | None = DeviceOption,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    ray: str | None = typer.Option(
        None, "--ray", help="Run on Ray: local, auto (this machine's cluster) or ray://HOST:PORT (needs [ray])."
    ),
    workers: int | None = typer.Option(None, "--workers", min=1, help="Ray: encoder actors (one model each)."),
    gpus_per_worker: float = typer.Option(0.0, "--gpus-per-worker", min=0.0, help="Ray: GPUs per actor."),
    compile_model: bool = typer.Option(
        False, "--compile",
        help="torch.compile the encoder: faster on CPU, same vectors, but it compiles first (figures in "
        "docs/benchmarks.md); for long local runs.",
    ),
) -> None:
    """Index PDF, Word (.docx), HTML, Markdown and plain-text files.

    One vector per sentence, each computed in its document's context; every sentence keeps
    its page (PDF) and nearest heading. PDF, Word and HTML need the documents extra (pip
    install 'landmark-rag[documents]'). Document ids are paths relative to the folder
    given (a file given directly: its name). Unchanged files are skipped; changed files
    replace their old sentences; binary, undecodable, empty, scanned (no text layer),
    encrypted and damaged files are reported with their reason and skipped. A changed
    document stays visible in its previous version until its new one is complete; an
    interrupted run (or a store that fails, exit code 1) leaves every unfinished document in
    its previous version: run the same command again to finish.
    """
    if ray is not None or workers is not None or gpus_per_worker:
        return _index_on_ray(paths, db, ray, workers, gpus_per_worker, model=model, glob=glob, batch_size=batch_size,
                             collection=collection, pooling=pooling, prune=prune, device=device, quiet=quiet)
    from landmark_rag.ingest import find_files
    from landmark_rag.store import StoreError, recorded_model

    db_dir = local_db_path(db)
    try:
        found = find_files(paths, glob=glob, exclude=[db_dir] if db_dir else [])
    except OSError as exc:  # missing path, link loop, FIFO given directly
        fail(str(exc))
    if not found.files and not found.skipped and not prune:  # --prune over an emptied folder has work
        where = ", ".join(str(p) for p in paths) + (f" matching --glob {glob!r}" if glob else "")
        fail(f"no files to index in {where} (nothing was created)")
    # lazy: with the store's own model nothing can mismatch, so the model (seconds of torch,
    # transformers and weights) is loaded only once a file turns out to need encoding, and a
    # re-run over unchanged files never loads it
    index = open_index(db, collection, model=model, device=device, overrides={"pooling": pooling} if pooling else None,
                       create=True, lazy=True, compile_model=compile_model)
    index.record_identity()  # a writer marks the collection with its model before writing
    if not quiet:
        source = recorded_model(index.sentence_store)[0]
        loaded = index.loaded_encoder
        name = loaded.model_name if loaded is not None else index.sentence_store.identity().get("model_name") or source
        err_console.print(f"model {name} ({source}), {len(found.files)} files, store {db} [{collection}]", markup=False)
    try:
        with model_errors(model):
            report = index.add_files(found, prune=prune, batch_size=batch_size, show_progress=not quiet)
        if index.loaded_encoder is not None and not report.interrupted:
            export_for_queries(index.loaded_encoder)  # the model is loaded now: later cold queries skip torch
        _finish(report, index.sentence_store)
    except StoreError as exc:
        _store_failed(exc)


def _finish(report, store) -> None:
    """Summary table, then exit 130 if the run was interrupted."""
    _summary(report, store.count_sentences(), len(store.documents()))
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
        table.add_row("pruned", f"{len(report.pruned)} (file gone or no document now)")
    if report.tokens:
        speed = f"{report.tokens:,} tokens in {report.seconds:.1f} s ({report.tokens_per_second:,.0f} tok/s)"
    else:  # everything unchanged or skipped: nothing was encoded, so there is no speed to report
        speed = f"nothing to encode ({report.seconds:.1f} s)"
    table.add_row("speed", speed)
    table.add_row("store", Text(f"{total_docs} documents, {total_sentences:,} sentences"))
    console.print(table)
    for o in report.with_status("skipped"):
        console.print(f"  skipped {o.source}: {o.reason}", markup=False)


def _index_on_ray(paths, db, address, workers, gpus_per_worker, *, model, glob, batch_size, collection, pooling,
                  prune, device, quiet) -> None:
    """``--ray``: the same run through :func:`landmark_rag.distributed.ray_index`; same summary and exit codes."""
    try:
        from landmark_rag.distributed import RayConnectionError, StoreUnavailableError, ray_index
    except ImportError as exc:
        fail(f"--ray needs the ray extra: pip install 'landmark-rag[ray]' ({exc})")
    from landmark_rag.cli._common import EXIT_MISMATCH
    from landmark_rag.encode import ModelNotFoundError
    from landmark_rag.store import ChromaSentenceStore, StoreError, StoreMismatchError

    if not quiet:
        err_console.print(f"ray {address or 'default'}, store {db} [{collection}]", markup=False)
    try:
        report = ray_index(
            paths, db, model=model, collection=collection, workers=workers, gpus_per_worker=gpus_per_worker,
            batch_size=batch_size, ray_address=address, prune=prune, glob=glob, device=device,
            overrides={"pooling": pooling} if pooling else None, show_progress=not quiet,
        )
    except StoreMismatchError as exc:
        fail(str(exc), EXIT_MISMATCH)
    except StoreError as exc:
        _store_failed(exc)
    except (FileNotFoundError, ModelNotFoundError, RayConnectionError, StoreUnavailableError, ValueError) as exc:
        fail(str(exc))
    store = ChromaSentenceStore.open(collection_name=collection, client=make_client(db), create=False)
    _finish(report, store)


def _store_failed(exc: Exception) -> NoReturn:
    """One line for a store failure mid-run (local or ``--ray``): how much was written, and that
    every other document keeps its previous version, so re-running the command is safe."""
    from landmark_rag.ingest import StoreFailedError

    written = len(exc.report.with_status("indexed", "updated")) if isinstance(exc, StoreFailedError) else 0
    fail(
        f"{exc}. {written} document(s) were written before the failure; every other document keeps its "
        "previous version. Run the same command again when the store is reachable."
    )
