"""``ray_index``: the ``landmark-rag index`` pipeline on a Ray cluster, through Ray Data.

The driver does what needs one global view and is cheap: it checks the store is reachable,
discovers files (same ids, same duplicate-id rule as the core), settles the model against
the store's recorded identity, reads the manifest **once**, and writes the summary. The
work - decoding, the content-hash skip, encoding, writing - runs in ``map_batches`` over an
actor pool of :class:`~landmark_rag.distributed.worker.EncodeWorker` (one model per actor).

Exactly-once without coordination: sentence ids are deterministic (``doc_id:index``) and the
store replaces a document under the manifest protocol (``writing -> sentences ->
complete``), so a batch that Ray retries after a worker died is written again, not added
again; a half-written document stays hidden from queries until some attempt completes it.
A run that is interrupted altogether leaves those documents without a complete hash, so the
next run picks up exactly them.

Stores: a Chroma **server** (``http://HOST:PORT``) is written by every actor in parallel. A
local **folder** works too, but SQLite has one writer, so the actors send their vectors to
the driver, which writes them; use a server for real scale-out.
"""

from __future__ import annotations

import logging
import math
import os
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from landmark_rag.distributed.cluster import cluster_resources, connect
from landmark_rag.distributed.worker import EncodeWorker, InjectedFault, load_identity
from landmark_rag.ingest import (
    FileOutcome,
    IndexReport,
    SourceFile,
    discover_files,
    duplicate_ids,
    manifest_state,
    model_source,
    prune_missing,
    record_model,
    recorded_dim,
)
from landmark_rag.ingest.identity import store_model
from landmark_rag.store import DEFAULT_COLLECTION, ChromaSentenceStore, StoreError, make_client

if TYPE_CHECKING:
    import ray.data

#: Default token budget of one encoding group inside a worker (~16k tokens, like the core).
BATCH_TOKENS = 16_384
#: Characters per token used to turn the token budget into the core's character budget.
CHARS_PER_TOKEN = 4
#: Most documents handed to a worker at once (Ray Data batch); smaller for small inputs so
#: that every worker gets work and a retried batch is cheap.
MAX_ROWS_PER_BATCH = 64


class StoreUnavailableError(ConnectionError):
    """The Chroma server (or folder) given as ``db`` cannot be opened."""


def ray_index(
    sources: Sequence[str | os.PathLike[str]] | ray.data.Dataset,
    db: str | os.PathLike[str],
    *,
    model: str | None = None,
    collection: str = DEFAULT_COLLECTION,
    workers: int | None = None,
    gpus_per_worker: float = 0,
    cpus_per_worker: float | None = None,
    batch_tokens: int = BATCH_TOKENS,
    batch_size: int = 16,
    ray_address: str | None = None,
    prune: bool = False,
    glob: str | None = None,
    overrides: dict[str, Any] | None = None,
    device: str | None = None,
    max_retries: int = 3,
    runtime_env: dict[str, Any] | None = None,
    show_progress: bool = True,
    _fault: dict[str, Any] | None = None,
) -> IndexReport:
    """Index ``sources`` into ``db`` on Ray; the result equals ``landmark-rag index``'s.

    ``sources``: files/folders (discovered on the driver; on a multi-node cluster they must
    be on a filesystem every node mounts at the same path), or a ``ray.data.Dataset`` with
    columns ``doc_id`` and ``text`` (str, or bytes decoded by the core's rules) plus optional
    metadata columns (stored with every sentence; ``source`` names the document in reports).
    ``db``: ``http://HOST:PORT`` of a Chroma server (every worker writes), or a local folder
    (the driver is the only writer). ``model``: as for ``landmark-rag index`` (default: the
    store's recorded model, else the package default); another model than the store's is
    refused with :class:`~landmark_rag.store.StoreMismatchError`. ``workers``: actors, each
    with its own model copy, ``gpus_per_worker`` GPUs and ``cpus_per_worker`` CPUs (its torch
    threads). ``batch_tokens``: approximate tokens encoded together by a worker.
    ``batch_size``: encoder windows per forward pass. ``ray_address``: see
    :func:`~landmark_rag.distributed.cluster.connect`. ``max_retries``: restarts of a dead
    worker and retries of its batch before the run fails. ``_fault``: test hook
    (:meth:`EncodeWorker._maybe_fail`).

    A ``KeyboardInterrupt`` ends the run with ``report.interrupted`` set, as in the core.
    """
    import ray
    import ray.data

    t_start = time.perf_counter()
    db = os.fspath(db)
    is_server = db.startswith(("http://", "https://"))
    client = _open_client(db)

    files: list[SourceFile] = []
    duplicates: dict[int, FileOutcome] = {}
    if isinstance(sources, ray.data.Dataset):
        dataset: ray.data.Dataset | None = sources
        _check_dataset(dataset)  # before anything is created in the store
    else:
        dataset = None
        local_db = None if is_server else [Path(db).expanduser().resolve()]
        files = discover_files(sources, glob=glob, exclude=local_db or [])
        duplicates = duplicate_ids(files)

    try:
        existing = ChromaSentenceStore.open(collection_name=collection, client=client, create=False)
    except LookupError:
        existing = None
    source, config = store_model(existing, model, overrides)  # the core's one rule for the store's model

    connect(ray_address, runtime_env=runtime_env)
    resources = cluster_resources()
    workers, cpus_per_worker = _sizing(workers, gpus_per_worker, cpus_per_worker, resources)
    remote_args = {"num_cpus": cpus_per_worker, "num_gpus": gpus_per_worker or 0}

    recorded = existing.identity() if existing is not None and model is None and not overrides else {}
    dim = recorded_dim(existing) if recorded else None
    if recorded and dim:
        identity = recorded  # the store's own model: workers check what they load against it
    else:
        # computed where workers run (the driver may have no GPU, or not the memory for the
        # model); the store refuses another model before anything is written
        identity, dim, _name = ray.get(ray.remote(**remote_args)(load_identity).remote(source, config, device))
    store = ChromaSentenceStore.open(collection_name=collection, client=client, identity=identity, create=True)
    record_model(store, source, dim)

    rows: list[dict[str, str]] = []
    if dataset is not None:
        total = None
    else:
        rows = [{"doc_id": f.doc_id, "path": str(f.path), "root": str(f.root)}
                for i, f in enumerate(files) if i not in duplicates]
        total = len(files)
    records = store.documents(include_incomplete=True)  # read once; every worker gets the same snapshot
    manifest = ray.put(manifest_state(store, records))
    # documents an earlier run left dirty (stopped after their commit, before their cleanup):
    # finished here when they come back unchanged, as the core path does (a changed one is
    # finished by its own new write)
    dirty = {doc_id for doc_id, md in records.items() if md.get("dirty")}

    report = IndexReport(outcomes=list(duplicates.values()))
    bar = tqdm(total=total, desc=f"indexing on ray ({workers} workers)", unit="doc", disable=not show_progress,
               dynamic_ncols=True, initial=len(duplicates))
    done = len(duplicates)
    ctx = ray.data.DataContext.get_current()
    saved = {k: getattr(ctx, k) for k in _CONTEXT}
    data_log = logging.getLogger("ray.data")
    notice_log = logging.getLogger("ray.data._internal.progress")  # filters act where a record is logged
    saved_level = data_log.level
    try:
        for key, value in _CONTEXT.items():
            setattr(ctx, key, value)
        data_log.setLevel(logging.WARNING)  # our bar replaces Ray Data's per-run INFO lines
        notice_log.addFilter(_quiet_progress_notice)
        out = None
        if dataset is None and rows:
            per_batch = min(MAX_ROWS_PER_BATCH, math.ceil(len(rows) / (2 * workers)))
            dataset = ray.data.from_items(rows, override_num_blocks=math.ceil(len(rows) / per_batch))
        else:
            per_batch = MAX_ROWS_PER_BATCH
        if dataset is not None:  # None: no files (or only duplicates), so no actors are started
            with warnings.catch_warnings():
                # Ray 2.60 deprecates passing max_restarts/max_task_retries this way but names
                # no replacement; they are what bounds the retries of a dying worker.
                warnings.simplefilter("ignore", DeprecationWarning)
                out = _map(dataset, remote_args, max_retries, per_batch, workers, {
                    "model": source, "overrides": config, "identity": identity,
                    "db": db if is_server else None, "collection": collection, "manifest": [manifest],
                    "device": device, "threads": max(1, int(cpus_per_worker)), "batch_size": batch_size,
                    "group_chars": batch_tokens * CHARS_PER_TOKEN, "fault": _fault,
                })
        t0 = time.perf_counter()
        batches = out.iter_batches(batch_format="pyarrow", batch_size=None) if out is not None else ()
        for batch in batches:
            for row in batch.to_pylist():
                outcome = FileOutcome(row["doc_id"], row["source"], row["status"], row["reason"] or None,
                                      int(row["sentences"]), int(row["tokens"]))
                if row.get("payload") is not None:
                    outcome = _write_on_driver(store, row["payload"], outcome)
                elif outcome.status == "unchanged" and outcome.doc_id in dirty:
                    store.clean_document(outcome.doc_id)
                report.outcomes.append(outcome)
                done += 1
                bar.update(1)
            elapsed = time.perf_counter() - t0
            bar.set_postfix_str(f"{report.tokens / max(elapsed, 1e-9):,.0f} tok/s", refresh=False)
    except KeyboardInterrupt:
        report.interrupted = True
        report.not_reached = (total - done) if total is not None else 0
    except Exception as exc:
        # a store failure (on the driver, or inside a worker, where Ray wraps it) stops the run
        # like the core's does: every unfinished document keeps its previous version
        cause = _store_failure(exc)
        if cause is None:
            raise
        report.not_reached = (total - done) if total is not None else 0
        error = cause if cause is exc else StoreError(str(cause))
        error.report = report  # type: ignore[attr-defined]  # what was done before the store failed
        if error is exc:
            raise
        raise error from exc
    finally:
        for key, value in saved.items():
            setattr(ctx, key, value)
        data_log.setLevel(saved_level)
        notice_log.removeFilter(_quiet_progress_notice)
        bar.close()
    report.seconds = time.perf_counter() - t_start
    if prune and not report.interrupted and files:
        roots = {f.root for f in files} | {Path(p).expanduser().resolve() for p in sources if Path(p).is_dir()}
        report.pruned = prune_missing(store, roots)
    return report


#: Ray Data settings for the run (restored afterwards): our own progress bar instead of
#: Ray's per-operator ones, quiet start, and the fault hook's error retried like a crash.
_CONTEXT: dict[str, Any] = {
    "enable_progress_bars": False,
    "print_on_execution_start": False,
    "enable_auto_log_stats": False,
    "actor_task_retry_on_errors": [InjectedFault],
}


def _quiet_progress_notice(record: logging.LogRecord) -> bool:
    """Drop Ray Data's notice that its progress bars are off (ours is on instead)."""
    return not record.getMessage().startswith("Progress bars disabled")


def _map(
    dataset: ray.data.Dataset, remote_args: dict[str, Any], max_retries: int, per_batch: int, workers: int,
    worker_kwargs: dict[str, Any],
) -> ray.data.Dataset:
    """The actor-pool stage: a fixed pool of ``workers`` EncodeWorkers, bounded restarts."""
    import ray.data

    return dataset.map_batches(
        EncodeWorker,
        fn_constructor_kwargs=worker_kwargs,
        compute=ray.data.ActorPoolStrategy(size=workers),
        batch_size=per_batch,
        batch_format="pyarrow",
        num_cpus=remote_args["num_cpus"],
        num_gpus=remote_args["num_gpus"],
        max_restarts=max_retries,
        max_task_retries=max_retries,
    )


def _open_client(db: str) -> Any:
    """A Chroma client for ``db`` (the core's; it heartbeats a server): an unreachable server
    fails here, before Ray starts."""
    try:
        client = make_client(db)
    except Exception as exc:  # noqa: BLE001 - chromadb raises many kinds for a dead server
        raise StoreUnavailableError(f"cannot open the store at {db}: {type(exc).__name__}: {exc}") from exc
    return client


def _sizing(
    workers: int | None, gpus: float, cpus: float | None, resources: dict[str, float]
) -> tuple[int, float]:
    """Actors and CPUs per actor: GPUs decide when asked for, else the cluster's CPUs."""
    total_cpus = max(1.0, resources.get("CPU", 1.0))
    if gpus and gpus > 0:
        if workers is None:
            workers = max(1, int(resources.get("GPU", 0) // gpus))
        return workers, cpus if cpus is not None else 1.0
    if workers is None:
        workers = max(1, int(total_cpus // (cpus or 2)))
    if cpus is None:
        cpus = max(1.0, float(int(total_cpus // workers)))
    if workers * cpus > total_cpus:
        raise ValueError(f"{workers} workers x {cpus:g} CPUs exceed the cluster's {total_cpus:g} CPUs")
    return workers, cpus


def _check_dataset(dataset: ray.data.Dataset) -> None:
    """Refuse a Dataset without ``doc_id``/``text`` or with a repeated ``doc_id`` (one pass over ids)."""
    columns = set(dataset.columns())
    missing = {"doc_id", "text"} - columns
    if missing:
        raise ValueError(f"the Dataset lacks column(s) {sorted(missing)}; it needs doc_id and text")
    ids = dataset.select_columns(["doc_id"]).to_pandas()["doc_id"]
    repeated = ids[ids.duplicated()].unique().tolist()
    if repeated:
        raise ValueError(f"doc_id must be unique; repeated: {repeated[:5]}{' ...' if len(repeated) > 5 else ''}")


def _write_on_driver(store: ChromaSentenceStore, payload: bytes, outcome: FileOutcome) -> FileOutcome:
    """Write a document a worker encoded (local folder store: the driver is the one writer)."""
    import pickle

    encoded, metadata, doc_hash = pickle.loads(payload)
    try:
        store.add_document(encoded, metadata=metadata, doc_hash=doc_hash)
    except StoreError:
        raise  # the store failed, not this document: the run stops (ray_index)
    except Exception as exc:  # noqa: BLE001 - reported like the core does, the run goes on
        return FileOutcome(outcome.doc_id, outcome.source, "skipped", f"failed to store: {type(exc).__name__}: {exc}")
    return outcome


def _store_failure(exc: BaseException) -> StoreError | None:
    """The :class:`StoreError` behind ``exc`` (itself, a cause, or what a Ray task error wraps)."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if not isinstance(e, BaseException) or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, StoreError):
            return e
        todo.extend([e.__cause__, e.__context__, getattr(e, "cause", None)])
    return None
