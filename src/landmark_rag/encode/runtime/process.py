"""Document preparation in worker processes while this process runs the encoder.

Why: ``encode_documents`` prepares the next group of documents on a producer thread while
the current group runs (``runtime.prefetch.Prefetch``). Tokenising releases the GIL, but the
rest of that preparation is Python (sentence records, id arrays, cutting long sentences,
planning windows, padding), and so is every forward pass's dispatch: on one GIL they take
turns. On an H100's host (16 cores) that host half ran at 0.92 M tokens/s, a fifth of it in
the tokenizer and the rest Python, against 4.8 M for the device half: the GPU waited. In
worker processes the upcoming groups are prepared in parallel, and none of it takes this
process's GIL.

What runs there (:func:`prepare_group`, in ``runtime.process_worker`` with the rest of the
worker's side): segmentation with the default segmenter (sentencex),
``encode.prepare.measure_documents``, the layout's windows (``Layout.document_jobs``) and the
padded batches (``encode.batching``): the very code the encoder runs when it prepares a group
itself, with the encoder's tokenizer loaded from its backend's JSON and its layout without
the tokenizer (``Layout.portable``). What comes back is compact: each document's sentence
spans and token count, and the group's batches as plain arrays; this process rebuilds the
sentences from the text it holds and wraps the arrays as tensors.

How: a pool of workers per process, started by the first large call that wants them and
reused by later ones. Each is a fresh interpreter (``python -c``) that imports
``runtime.process_worker``, numpy, tokenizers and sentencex, but neither torch nor the
caller's ``__main__`` (no main guard needed, nothing forked from a process that has torch's
threads), tokenising on one thread when it is one of several. Requests and results travel
as pickles over two pipes of its own; its stdout and stderr are the caller's. Until a worker
is up and has tokenised :func:`segment.tokens.probe_texts` exactly as this process does,
groups are prepared here, and so is any group a worker did not deliver because it ended, or
that could not be sent (logged once; nothing is lost). A request a worker cannot read ends
it (the caller then prepares what it had) rather than leave the caller waiting. An
exception a task raises there is raised here, as itself, when that group is due.

When: by default for calls of more than one group of documents on an accelerator, when the
host has at least :data:`MIN_CORES` cores (:func:`pool_size`); on a CPU the workers would
take the cores the forward pass uses, so there they run only when asked
(``LANDMARK_RAG_PREPARE_PROCESS=1`` or ``LandmarkEncoder.prepare_process = True``).
``LANDMARK_RAG_PREPARE_PROCESS=0`` keeps them off whatever an encoder says;
``LANDMARK_RAG_PREPARE_WORKERS=N`` (or ``LandmarkEncoder.prepare_workers``) sets how many.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import itertools
import json
import logging
import os
import subprocess
import sys
import threading
import weakref
from concurrent.futures import Future
from typing import IO, Any

from landmark_rag.encode.runtime import process_worker
from landmark_rag.encode.runtime.process_worker import encode, recv, send, write

logger = logging.getLogger(__name__)

#: Environment variable: ``1``/``true``/``yes``/``on`` uses the workers for large calls,
#: ``0``/``false``/``no``/``off`` never (whatever ``LandmarkEncoder.prepare_process`` says).
ENV_SWITCH = "LANDMARK_RAG_PREPARE_PROCESS"
#: Environment variable: how many workers (when the encoder's ``prepare_workers`` is not set).
ENV_WORKERS = "LANDMARK_RAG_PREPARE_WORKERS"
#: The task that prepares a group there (named, not pickled: the worker imports it).
TASK = f"{process_worker.__name__}:prepare_group"
#: Starts beyond the pool's size after which, if those workers ended unexpectedly, no more are.
MAX_STARTS = 3
#: Host cores below which an accelerator's calls prepare on the producer thread by default:
#: with fewer, workers would take the cores this process's own thread and the device's
#: driver need.
MIN_CORES = 6
#: Most workers the default starts: beyond a dozen, the host's single thread that rebuilds
#: sentences and feeds the device is the bound, not preparation.
MAX_AUTO_WORKERS = 12
#: The worker's group task and the tokenizers it reads, reached through this module too (a
#: task is named by its module, and ``TASK`` may name this one).
prepare_group = process_worker.prepare_group
_BACKENDS = process_worker.BACKENDS

_OFF = ("0", "false", "no", "off")
_ON = ("1", "true", "yes", "on")


def wanted(setting: bool | None, accelerator: bool = False) -> bool:
    """Whether a large call prepares its documents in workers: never where the environment
    switch says no or there are no POSIX pipes to hand over; else ``setting`` (the encoder's
    ``prepare_process``) when given; else where the switch says yes, or for an
    ``accelerator`` (CUDA, MPS) on a host of at least :data:`MIN_CORES` cores. Not on a CPU by
    default: there the workers' tokenising takes the cores the forward pass runs on."""
    env = os.environ.get(ENV_SWITCH, "").strip().lower()
    if env in _OFF or os.name != "posix":
        return False
    if setting is not None:
        return setting
    return env in _ON or (accelerator and cores() >= MIN_CORES)


def cores() -> int:
    """The cores this process may use: its CPU affinity (a cpuset) where the platform says,
    else every core of the machine, and no more than the CPU quota of its cgroup v2 namespace
    allows (``/sys/fs/cgroup/cpu.max``: a container's ``--cpus``, a pod's limit), rounded up.
    Quotas set elsewhere (a parent cgroup, cgroup v1) are not seen."""
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        quota, period = open("/sys/fs/cgroup/cpu.max").read().split()[:2]  # noqa: SIM115 - one read
        if quota != "max":
            n = min(n, -(-int(quota) // int(period)))
    except (OSError, ValueError, ArithmeticError):
        pass
    return max(1, n)


def pool_size(setting: bool | None, workers: int | None, accelerator: bool = False) -> int:
    """How many workers a large call prepares in: 0 when :func:`wanted` says no; else
    ``workers`` (the encoder's ``prepare_workers``; 0: none) when given, else ``LANDMARK_RAG_PREPARE_WORKERS``,
    else for an accelerator the host's cores less four (for this process's threads and the
    driver's), at most :data:`MAX_AUTO_WORKERS`, and one on a CPU."""
    if not wanted(setting, accelerator):
        return 0
    if workers is None:
        env = os.environ.get(ENV_WORKERS, "").strip()
        if env:
            try:
                workers = int(env)
            except ValueError:
                raise ValueError(f"{ENV_WORKERS} must be a whole number, not {env!r}") from None
    if workers is None:  # asked for on a small host too: at least one
        return max(1, min(MAX_AUTO_WORKERS, cores() - 4)) if accelerator else 1
    if int(workers) < 0:
        raise ValueError(f"preparation workers must be 0 or more, not {workers}")
    return int(workers)


class WorkerGone(RuntimeError):
    """The worker process ended, or could not be started: its chunks are prepared here."""


class PreparationWorker:
    """One worker process and the pipes to it; tasks are answered in the order they were sent."""

    def __init__(self, threads: int | None = None) -> None:
        """``threads``: the tokenizer's threads there (``RAYON_NUM_THREADS``); ``None``: every core."""
        self._lock = threading.Lock()  # _pending and _gone
        self._write_lock = threading.Lock()  # one message at a time into the pipe
        self._register_lock = threading.Lock()  # _tokenizers
        self._pending: dict[int, Future[Any]] = {}
        self._gone = False
        self._ready = threading.Event()
        self._ids = itertools.count()
        self._tokenizers: dict[str, tuple[Future[Any], list[list[int]]]] = {}
        results_r, results_w = os.pipe()
        requests_r, requests_w = os.pipe()
        paths = [p for p in sys.path if isinstance(p, str) and p]
        code = (
            "import json, sys; sys.path[:0] = json.loads(sys.argv[1]); "
            f"from {process_worker.__name__} import serve; serve(int(sys.argv[2]), int(sys.argv[3]))"
        )
        env = None
        if threads is not None:  # several workers share the cores: each tokenizer gets its part
            env = {**os.environ, "RAYON_NUM_THREADS": str(threads), "RAYON_RS_NUM_CPUS": str(threads)}
        self._process: subprocess.Popen[bytes] | None = None
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-c", code, json.dumps(paths), str(requests_r), str(results_w)],
                pass_fds=(requests_r, results_w), stdin=subprocess.DEVNULL, close_fds=True, env=env,
            )
        except OSError as exc:
            logger.debug("no preparation process (%s); preparing here", exc)
        finally:  # the worker's ends of the pipes: it has its own copies
            os.close(requests_r)
            os.close(results_w)
        if self._process is None:
            os.close(results_r)
            os.close(requests_w)
            self._gone = True
            return
        self._results: IO[bytes] = os.fdopen(results_r, "rb")
        # unbuffered: nothing half-written can sit in a buffer that a forked child would flush
        self._requests: IO[bytes] = os.fdopen(requests_w, "wb", buffering=0)
        self._reader = threading.Thread(target=self._read, name="landmark-prepare-results", daemon=True)
        self._reader.start()

    # ------------------------------------------------------------------ state
    @property
    def alive(self) -> bool:
        """Whether tasks can still be sent (the worker has not ended)."""
        return not self._gone

    @property
    def ready(self) -> bool:
        """Whether the worker has started and answers tasks."""
        return self._ready.is_set() and not self._gone

    @property
    def pending(self) -> int:
        """Tasks sent and not yet answered."""
        with self._lock:
            return len(self._pending)

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    # ------------------------------------------------------------------ tasks
    def submit(self, target: str, *args: Any) -> Future[Any]:
        """Run ``target`` (``"module:function"``) on ``args`` there; the future holds its
        result, its exception, or :class:`WorkerGone`."""
        future: Future[Any] = Future()
        task = next(self._ids)
        try:
            data = encode(("call", task, target, args))
        except Exception as exc:  # noqa: BLE001 - e.g. an object of the caller's own: prepared there instead
            future.set_exception(WorkerGone(f"the task could not be sent ({type(exc).__name__}: {exc})"))
            return future
        with self._lock:
            if self._gone:
                future.set_exception(WorkerGone("the preparation process has ended"))
                return future
            self._pending[task] = future
        try:
            with self._write_lock:
                write(self._requests, data)
        except BaseException as exc:
            # a write cut short (the pipe closed, or Ctrl-C mid-message) leaves the worker's
            # stream unreadable: it is ended, and what it had is prepared by the caller
            self._abandon()
            with self._lock:
                lost = self._pending.pop(task, None)
            if lost is not None:
                lost.set_exception(WorkerGone(f"the preparation process has ended ({type(exc).__name__})"))
            if not isinstance(exc, Exception):
                raise
        return future

    def _abandon(self) -> None:
        """Mark the worker ended and end its process (its request stream may be garbled)."""
        with self._lock:
            self._gone = True
        if self._process is not None and self._process.poll() is None:
            self._process.kill()

    def tokenizer_key(self, tt: Any) -> str | None:
        """The worker's name for ``tt``'s backend (a ``segment.tokens.TextTokenizer``) once the
        worker tokenises the probe texts exactly as ``tt`` does; ``None`` until then, and for
        good when it does not (or ``tt`` has no backend to send)."""
        if tt.backend is None or not self.ready:
            return None
        key, text = _backend_json(tt)
        with self._register_lock:  # sent once, even when two callers get here together
            known = self._tokenizers.get(key)
            if known is None:
                probes = _probes(tt)
                expected = [list(e.ids) for e in tt.backend.encode_batch(probes, add_special_tokens=False)]
                loaded = self.submit(f"{process_worker.__name__}:load_tokenizer", key, text, probes)
                known = self._tokenizers[key] = (loaded, expected)
        future, expected = known
        if not future.done():
            return None
        try:
            return key if future.result() == expected else None
        except Exception:  # noqa: BLE001 - not loaded there: prepared here
            return None

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Ask the worker to end and wait a moment for it (then end it)."""
        with self._lock:
            was_gone, self._gone = self._gone, True
        if self._process is None:
            return
        if not was_gone:
            try:
                with self._write_lock:
                    send(self._requests, ("exit",))
            except (OSError, ValueError):
                pass
        self._close_streams()
        try:
            self._process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def _release_in_child(self) -> None:
        """(A forked child) close this copy's pipe ends without touching the buffered reader,
        whose lock the parent's reader thread may have held at the fork."""
        with contextlib.suppress(OSError, ValueError, AttributeError):
            self._requests.close()  # unbuffered: no lock, nothing to flush
        with contextlib.suppress(OSError, ValueError, AttributeError):
            self._results.raw.close()  # type: ignore[attr-defined]

    def _close_streams(self) -> None:
        for name in ("_requests", "_results"):
            stream = getattr(self, name, None)
            if stream is not None:
                try:
                    stream.close()
                except (OSError, ValueError):
                    pass

    def _read(self) -> None:
        try:
            while True:
                message = recv(self._results)
                if message is None:
                    break
                if message[0] == "ready":
                    self._ready.set()
                    continue
                _, task, ok, value = message
                with self._lock:
                    future = self._pending.pop(task, None)
                if future is None:
                    continue
                if ok:
                    future.set_result(value)
                else:
                    exc, detail = value
                    if hasattr(exc, "add_note"):  # pickling keeps no notes of some exceptions: added here
                        exc.add_note(f"raised in the preparation process {self.pid}:\n{detail}")
                    future.set_exception(exc)
        except Exception as exc:  # noqa: BLE001 - a broken pipe or message: the worker is treated as ended
            logger.debug("preparation process unreadable (%s: %s)", type(exc).__name__, exc)
        finally:
            with self._lock:
                self._gone = True
                lost, self._pending = list(self._pending.values()), {}
            for future in lost:
                future.set_exception(WorkerGone("the preparation process ended before it answered"))


_WORKERS: list[PreparationWorker] = []
_ORPHANS: list[PreparationWorker] = []  # a forked child's copies of the parent's workers
_STARTS = 0
_WORKER_LOCK = threading.Lock()


def shared_workers(n: int) -> list[PreparationWorker]:
    """This process's first ``n`` workers that are alive, started on first use and again after
    one ended (up to :data:`MAX_STARTS` starts beyond ``n`` in all); fewer, or none, once no
    more can be had. A worker of a pool of several tokenises on one thread (their processes
    share the cores); a lone worker's tokenizer has every core."""
    global _STARTS
    with _WORKER_LOCK:
        for worker in _WORKERS:
            if not worker.alive:
                worker.close()
        _WORKERS[:] = [w for w in _WORKERS if w.alive]
        threads = None if n <= 1 else 1
        while len(_WORKERS) < n and _STARTS < n + MAX_STARTS:
            _STARTS += 1
            worker = PreparationWorker(threads)
            if not worker.alive:
                break
            _WORKERS.append(worker)
        return _WORKERS[:n]


def close_shared_workers() -> None:
    """End this process's workers (at exit; tests; to start a pool of another size): a pool
    closed on purpose may be started again in full."""
    global _STARTS
    with _WORKER_LOCK:
        for worker in _WORKERS:
            worker.close()
        _WORKERS.clear()
        _STARTS = 0


def _forget_after_fork() -> None:
    # a forked child shares the parent's pipes to the worker: writing there would interleave
    # with the parent's requests, so the child starts its own worker if it needs one
    global _WORKERS, _STARTS, _WORKER_LOCK
    for worker in _WORKERS:  # the parent's: let go of here, so its workers see the parent's end alone
        worker._release_in_child()
    # kept referenced: a buffered reader freed here would wait for a lock its reader thread
    # held at the fork, a thread this child does not have
    _ORPHANS.extend(_WORKERS)
    _WORKERS, _STARTS, _WORKER_LOCK = [], 0, threading.Lock()


atexit.register(close_shared_workers)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)

_JSON: weakref.WeakKeyDictionary[Any, tuple[str, str]] = weakref.WeakKeyDictionary()


def _backend_json(tt: Any) -> tuple[str, str]:
    """``(key, JSON)`` of ``tt``'s backend, made once per ``TextTokenizer``."""
    known = _JSON.get(tt)
    if known is None:
        text = tt.backend.to_str()
        known = _JSON[tt] = (hashlib.sha1(text.encode("utf-8")).hexdigest(), text)
    return known


def _probes(tt: Any) -> list[str]:
    from landmark_rag.segment.tokens import probe_texts

    return probe_texts(tt.tokenizer)
