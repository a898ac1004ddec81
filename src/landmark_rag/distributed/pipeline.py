"""``ray_index``: the ``landmark-rag index`` pipeline on a Ray cluster, through Ray Data.

The driver does what needs one global view and is cheap: it checks the store is reachable,
finds the files (the core's ``find_files``, ids and duplicate rule), settles the model
against the store's recorded identity, reads the manifest **once** (``StoreState``), and
records the outcomes as the core does (``tracked_run``). The work - decoding, the skip rule,
encoding, writing: the core's ``write_documents`` - runs in ``map_batches`` over an actor
pool of :class:`~landmark_rag.distributed.worker.EncodeWorker` (one model per actor).

Exactly-once without coordination: a document's write goes through the manifest protocol
(announce, sentences under a fresh version, commit, clean), so a batch that Ray retries
after a worker died is written again, never added twice; a half-written document stays
hidden from queries until some attempt completes it. A run that is interrupted altogether
leaves those documents without a complete version, so the next run picks up exactly them.

Stores: a Chroma **server** (``http://HOST:PORT``) is written by every actor in parallel. A
local **folder** works too, but SQLite has one writer, so the actors send what they encoded
to the driver, which writes them a group at a time (``store_outcomes``) and finishes documents left dirty
(``finish_unchanged``); use a server for real scale-out.
"""

from __future__ import annotations

import logging
import math
import os
import pickle
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from landmark_rag.distributed.cluster import cluster_resources, connect, node_resources
from landmark_rag.distributed.worker import EncodeWorker, load_identity
from landmark_rag.errors import LandmarkRagError
from landmark_rag.ingest import (
    GROUP_TOKENS,
    FileOutcome,
    FileSet,
    IndexReport,
    StoreFailedError,
    StoreState,
    find_files,
    finish_unchanged,
    indexed_elsewhere,
    prune_missing,
    readable_files,
)
from landmark_rag.ingest.write import GROUP_DOCS, StoredDocument, store_outcomes, tracked_run
from landmark_rag.store import (
    DEFAULT_COLLECTION,
    ChromaSentenceStore,
    StoreError,
    is_server_url,
    make_client,
    record_model,
    recorded_dim,
    store_model,
)

if TYPE_CHECKING:
    import pyarrow
    import ray.data

#: Default token budget of one encoding group inside a worker (the core's).
BATCH_TOKENS = GROUP_TOKENS
#: Most documents handed to a worker at once (Ray Data batch); smaller for small inputs so
#: that every worker gets work and a retried batch is cheap.
MAX_ROWS_PER_BATCH = 64


class StoreUnavailableError(LandmarkRagError, ConnectionError):
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
    worker and retries of its batch before the run fails.

    A ``KeyboardInterrupt`` ends the run with ``report.interrupted`` set, and a failing store
    raises ``StoreFailedError`` with the report, as in the core.
    """
    import ray.data

    t_start = time.perf_counter()
    db = os.fspath(db)
    client = _open_client(db)
    found: FileSet | None = None
    inputs: FileSet | ray.data.Dataset
    if isinstance(sources, ray.data.Dataset):
        _check_dataset(sources)  # before anything is created in the store
        inputs = sources
    else:
        found = inputs = find_files(
            sources, glob=glob, exclude=[] if is_server_url(db) else [Path(db).expanduser().resolve()]
        )
    try:
        existing = ChromaSentenceStore.open(collection_name=collection, client=client, create=False)
    except LookupError:
        existing = None
    source, config = store_model(existing, model, overrides)  # the core's one rule for the store's model

    connect(ray_address, runtime_env=runtime_env)
    workers, cpus_per_worker = _sizing(
        workers, gpus_per_worker, cpus_per_worker, cluster_resources(), node_resources() if gpus_per_worker else None
    )
    remote_args = {"num_cpus": cpus_per_worker, "num_gpus": gpus_per_worker or 0}
    own_model = existing is not None and model is None and not overrides
    identity, dim = _identity(existing if own_model else None, source, config, device, remote_args)
    store = ChromaSentenceStore.open(collection_name=collection, client=client, identity=identity, create=True)
    record_model(store, source, dim)

    worker_kwargs = {
        "model": source, "overrides": config, "identity": identity, "db": db if is_server_url(db) else None,
        "collection": collection, "device": device, "threads": max(1, int(cpus_per_worker)),
        "batch_size": batch_size, "group_tokens": batch_tokens,
    }
    report = _run(store, inputs, worker_kwargs, remote_args, workers, max_retries, show_progress)
    report.seconds = time.perf_counter() - t_start
    if prune and not report.interrupted and found is not None and found.files:
        report.pruned = prune_missing(store, found.roots, report.outcomes)
    return report


def _identity(
    existing: ChromaSentenceStore | None, source: str, config: dict[str, Any], device: str | None,
    remote_args: dict[str, Any],
) -> tuple[dict[str, Any], int]:
    """The identity and dimension of the model the workers will load: the store's own, as
    recorded (``existing``: a store whose own model is used), else as a worker loads it."""
    import ray

    recorded = existing.identity() if existing is not None else {}
    dim = recorded_dim(existing) if recorded else None
    if recorded and dim:
        return recorded, dim  # workers check what they load against it
    # computed where workers run (the driver may have no GPU, or not the memory for the
    # model); the store refuses another model before anything is written
    identity, dim, _name = ray.get(ray.remote(**remote_args)(load_identity).remote(source, config, device))
    return identity, dim


def _run(
    store: ChromaSentenceStore, inputs: FileSet | ray.data.Dataset, worker_kwargs: dict[str, Any],
    remote_args: dict[str, Any], workers: int, max_retries: int, show_progress: bool,
) -> IndexReport:
    """The actor-pool stage and the driver's side of it: every outcome row is settled
    (:func:`_settle`) and recorded as the core records its own."""
    import ray
    import ray.data

    state = StoreState.read(store)  # read once; every worker gets the same snapshot
    if isinstance(inputs, FileSet):  # one file, one document, as the core's add_files
        inputs = indexed_elsewhere(state, inputs)
    worker_kwargs = {**worker_kwargs, "manifest": [ray.put(state)]}
    report = IndexReport()
    total = len(inputs.files) + len(inputs.skipped) if isinstance(inputs, FileSet) else None
    with _quiet_ray_data(), tracked_run(report, total=total, desc=f"indexing on ray ({workers} workers)",
                                       show_progress=show_progress, errors="report") as progress:
        dataset: ray.data.Dataset | None
        per_batch = MAX_ROWS_PER_BATCH
        if isinstance(inputs, FileSet):
            files, skipped = readable_files(inputs)
            for outcome in skipped:
                progress.add(outcome)
            rows = [{"doc_id": f.doc_id, "path": str(f.path), "root": str(f.root)} for f in files]
            per_batch = min(MAX_ROWS_PER_BATCH, math.ceil(len(rows) / (2 * workers))) if rows else 1
            dataset = ray.data.from_items(rows, override_num_blocks=math.ceil(len(rows) / per_batch)) if rows else None
        else:
            dataset = inputs
        if dataset is None:  # no files (or only duplicates): no actors are started
            return report
        out = _map(dataset, remote_args, max_retries, per_batch, workers, worker_kwargs)
        try:
            for batch in out.iter_batches(batch_format="pyarrow", batch_size=None):
                # typed as any batch format; batch_format="pyarrow" makes it a Table
                rows = cast("pyarrow.Table", batch).to_pylist()
                for outcome in _settle(store, state, rows, worker_kwargs["db"] is None):
                    progress.add(outcome)
        except Exception as exc:
            # a store failure inside a worker arrives wrapped by Ray: stop as the core does
            cause = _store_failure(exc)
            if cause is None or cause is exc:
                raise
            for outcome in _done_before(cause):
                progress.add(outcome)
            raise StoreError(str(cause)) from exc
    return report


def _settle(
    store: ChromaSentenceStore, state: StoreState, rows: list[dict[str, Any]], driver_writes: bool
) -> Iterator[FileOutcome]:
    """Workers' outcome rows, in order, finished on the driver where the driver is the one
    writer: the documents the workers encoded are written (consecutive ones together, the
    manifest's protocol once per group of up to ``GROUP_DOCS``, as the core's write path
    does), an unchanged one left dirty is finished."""
    pending: list[tuple[StoredDocument, FileOutcome]] = []
    for row in rows:
        outcome = FileOutcome(row["doc_id"], row["source"], row["status"], row["reason"] or None,
                              int(row["sentences"]), int(row["tokens"]))
        if row.get("payload") is not None:
            pending.append((pickle.loads(row["payload"]), outcome))
            if len(pending) >= GROUP_DOCS:
                yield from store_outcomes(store, pending)
                pending = []
            continue
        yield from store_outcomes(store, pending)
        pending = []
        if driver_writes and outcome.status == "unchanged":
            finish_unchanged(store, state, outcome.doc_id)
        yield outcome
    yield from store_outcomes(store, pending)


@contextmanager
def _quiet_ray_data() -> Iterator[None]:
    """Ray Data's settings for the run (:data:`_CONTEXT`) and quiet logs, restored afterwards."""
    import ray.data

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
        with warnings.catch_warnings():
            # Ray 2.60 deprecates passing max_restarts/max_task_retries this way but names
            # no replacement; they are what bounds the retries of a dying worker.
            warnings.simplefilter("ignore", DeprecationWarning)
            yield
    finally:
        for key, value in saved.items():
            setattr(ctx, key, value)
        data_log.setLevel(saved_level)
        notice_log.removeFilter(_quiet_progress_notice)


#: Ray Data settings for the run (restored afterwards): our own progress bar instead of
#: Ray's per-operator ones, and a quiet start.
_CONTEXT: dict[str, Any] = {
    "enable_progress_bars": False,
    "print_on_execution_start": False,
    "enable_auto_log_stats": False,
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
    except Exception as exc:  # chromadb raises many kinds for a dead server
        raise StoreUnavailableError(f"cannot open the store at {db}: {type(exc).__name__}: {exc}") from exc
    return client


#: CPUs of each GPU node left to Ray Data's own tasks (reading, splitting blocks) and the
#: driver when GPU actors are given their node's CPUs: actors holding every CPU would starve
#: the reads that feed them.
NODE_CPU_RESERVE = 2

#: At most this many CPUs per GPU actor by default: its preparation pool (its CPUs less two)
#: stops at 12 workers (``encode.runtime.process``).
GPU_ACTOR_MAX_CPUS = 14


def _sizing(
    workers: int | None,
    gpus: float,
    cpus: float | None,
    resources: dict[str, float],
    nodes: Sequence[dict[str, float]] | None = None,
) -> tuple[int, float]:
    """Actors and CPUs per actor: GPUs decide when asked for, else the cluster's CPUs.

    A GPU actor prepares its documents in worker processes, one per CPU it has less two, and
    its GPU waits on them (docs/encoder.md, "Running on a GPU"), so by default it gets the CPUs
    its node can give each of the GPU actors it may hold: ``(node CPUs - NODE_CPU_RESERVE) //
    actors per node`` (as many as its GPUs fit, at most ``workers``), the smallest over the GPU
    nodes ``nodes`` lists, between 1 and ``GPU_ACTOR_MAX_CPUS``. Counting per node keeps every
    actor placeable on an idle cluster (node totals, not what is free now); without ``nodes``
    an actor asks for one CPU."""
    total_cpus = max(1.0, resources.get("CPU", 1.0))
    if gpus and gpus > 0:
        if workers is None:
            workers = max(1, _gpu_actors(resources.get("GPU", 0.0), gpus))
        if cpus is None:
            cpus = float(_gpu_actor_cpus(gpus, workers, nodes or []))
        return workers, cpus
    if workers is None:
        workers = max(1, int(total_cpus // (cpus or 2)))
    if cpus is None:
        cpus = max(1.0, float(int(total_cpus // workers)))
    if workers * cpus > total_cpus:
        raise ValueError(f"{workers} workers x {cpus:g} CPUs exceed the cluster's {total_cpus:g} CPUs")
    return workers, cpus


def _gpu_actors(node_gpus: float, gpus: float) -> int:
    """How many actors of ``gpus`` GPUs fit ``node_gpus`` GPUs, as Ray places them: a fraction
    of a GPU packs ``1 / gpus`` actors on each whole GPU (``1.0 // 0.2`` is 4 in floating
    point, Ray fits 5), whole GPUs divide the count."""
    eps = 1e-6
    if gpus < 1:
        return int(node_gpus + eps) * int(1.0 / gpus + eps)
    return int(node_gpus / gpus + eps)


def _gpu_actor_cpus(gpus: float, workers: int, nodes: Sequence[dict[str, float]]) -> int:
    """The default CPUs of each of ``workers`` actors with ``gpus`` GPUs: see :func:`_sizing`.
    A node holds at most as many of them as its GPUs fit, and never more than ``workers``."""
    shares = []
    for node in nodes:
        actors = min(_gpu_actors(node.get("GPU", 0.0), gpus), workers)
        if actors >= 1:
            shares.append(int(max(0.0, node.get("CPU", 0.0) - NODE_CPU_RESERVE) // actors))
    return max(1, min(GPU_ACTOR_MAX_CPUS, min(shares, default=1)))


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


def _done_before(failure: StoreError) -> list[FileOutcome]:
    """What a worker's batch did before its store failed (a Chroma server's writers are the
    workers): the outcomes of its partial report, committed documents among them, which no
    outcome row brings back (the batch's rows never arrive)."""
    return list(failure.report.outcomes) if isinstance(failure, StoreFailedError) else []


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
