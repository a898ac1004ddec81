"""Document preparation in a worker process while this process runs the encoder.

Why: ``encode_documents`` prepares the next group of documents on a producer thread while
the current group runs (``runtime.prefetch.Prefetch``). Tokenising releases the GIL, but the
rest of that preparation is Python (sentence records, id arrays, cutting long sentences), and
so is every forward pass's dispatch: on one GIL they take turns. In a worker process the
segmentation and tokenisation of upcoming documents take nothing from this process's GIL.

Off unless asked for. On the one machine it could be measured on (2 cores, busy either way;
docs/benchmarks.md, "Indexing throughput on a GPU") it was ahead or level in 6 paired runs of
96 documents (the 24 SQuAD articles x 4) through a 1-layer model, 0.51-0.55 of one tokenizer
thread against 0.48-0.55, but behind with 24 or 48 documents and with a forward pass that
costs nothing. It is meant for a host with cores to spare next to a GPU, where it is yet to
be measured.

What runs there: segmentation with the default segmenter (sentencex) and
``encode.prepare.measure_documents``, the very code the encoder runs when it prepares a
chunk itself, with the encoder's tokenizer loaded from its backend's JSON. What comes back is
compact (each document's sentence spans, its ids in one array, their lengths); this process
rebuilds the sentences from the text it holds.

How: one worker per process, started by the first large call and reused by later ones. It is
a fresh interpreter (``python -c``) that imports this module, numpy, tokenizers and sentencex,
but neither torch nor the caller's ``__main__`` (no main guard needed, nothing forked from a
process that has torch's threads). Requests and results travel as pickles over two pipes of
its own; its stdout and stderr are the caller's. Until the worker is up and has tokenised
:func:`segment.tokens.probe_texts` exactly as this process does, chunks are prepared here,
and so is any chunk the worker did not deliver because it ended (logged once; nothing is
lost). An exception a task raises there is raised here, as itself, when that chunk is due.

``LANDMARK_RAG_PREPARE_PROCESS=1`` (or ``LandmarkEncoder.prepare_process = True``) turns it on
for calls of more than one group of documents (a smaller call has nothing to overlap);
``LANDMARK_RAG_PREPARE_PROCESS=0`` keeps it off whatever an encoder says.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib
import itertools
import json
import logging
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future
from typing import IO, Any

import numpy as np

logger = logging.getLogger(__name__)

#: Environment variable: ``1``/``true``/``yes``/``on`` uses the worker for large calls,
#: ``0``/``false``/``no``/``off`` never (whatever ``LandmarkEncoder.prepare_process`` says).
ENV_SWITCH = "LANDMARK_RAG_PREPARE_PROCESS"
#: The task that prepares a chunk there (named, not pickled: the worker imports it).
TASK = f"{__name__}:prepare_texts"
#: Workers started in this process after which, if each of them ended unexpectedly, no more are.
MAX_STARTS = 3

_HEADER = struct.Struct("<Q")
_OFF = ("0", "false", "no", "off")
_ON = ("1", "true", "yes", "on")


def wanted(setting: bool | None) -> bool:
    """Whether a large call prepares its documents in the worker: never where the environment
    switch says no or there are no POSIX pipes to hand over; else ``setting`` (the encoder's
    ``prepare_process``) when given, else where the switch says yes. Not by default: on the
    one machine it was measured on (2 cores) it gained as often as it lost (see the module)."""
    env = os.environ.get(ENV_SWITCH, "").strip().lower()
    if env in _OFF or os.name != "posix":
        return False
    if setting is not None:
        return setting
    return env in _ON


class WorkerGone(RuntimeError):
    """The worker process ended, or could not be started: its chunks are prepared here."""


class PreparationWorker:
    """One worker process and the pipes to it; tasks are answered in the order they were sent."""

    def __init__(self) -> None:
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
            f"from {__name__} import serve; serve(int(sys.argv[2]), int(sys.argv[3]))"
        )
        self._process: subprocess.Popen[bytes] | None = None
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-c", code, json.dumps(paths), str(requests_r), str(results_w)],
                pass_fds=(requests_r, results_w), stdin=subprocess.DEVNULL, close_fds=True,
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
        self._requests: IO[bytes] = os.fdopen(requests_w, "wb")
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
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    # ------------------------------------------------------------------ tasks
    def submit(self, target: str, *args: Any) -> Future[Any]:
        """Run ``target`` (``"module:function"``) on ``args`` there; the future holds its
        result, its exception, or :class:`WorkerGone`."""
        future: Future[Any] = Future()
        with self._lock:
            if self._gone:
                future.set_exception(WorkerGone("the preparation process has ended"))
                return future
            task = next(self._ids)
            self._pending[task] = future
        try:
            with self._write_lock:
                _send(self._requests, ("call", task, target, args))
        except (OSError, ValueError) as exc:  # the pipe closed under us: the worker has ended
            with self._lock:
                lost = self._pending.pop(task, None)
            if lost is not None:
                lost.set_exception(WorkerGone(f"the preparation process has ended ({exc})"))
        return future

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
                loaded = self.submit(f"{__name__}:load_tokenizer", key, text, probes)
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
                    _send(self._requests, ("exit",))
            except (OSError, ValueError):
                pass
        for stream in (self._requests, self._results):
            try:
                stream.close()
            except (OSError, ValueError):
                pass
        try:
            self._process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def _read(self) -> None:
        try:
            while True:
                message = _recv(self._results)
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


_WORKER: PreparationWorker | None = None
_STARTS = 0
_WORKER_LOCK = threading.Lock()


def shared_worker() -> PreparationWorker | None:
    """This process's worker, started on first use (and again after one ended, up to
    :data:`MAX_STARTS` starts); ``None`` once it cannot be had."""
    global _WORKER, _STARTS
    with _WORKER_LOCK:
        if _WORKER is not None and _WORKER.alive:
            return _WORKER
        if _STARTS >= MAX_STARTS:
            return None
        if _WORKER is not None:
            _WORKER.close()
        _STARTS += 1
        _WORKER = PreparationWorker()
        return _WORKER if _WORKER.alive else None


def close_shared_worker() -> None:
    """End this process's worker, if one runs (at exit; tests)."""
    global _WORKER
    with _WORKER_LOCK:
        if _WORKER is not None:
            _WORKER.close()
            _WORKER = None


def _forget_after_fork() -> None:
    # a forked child shares the parent's pipes to the worker: writing there would interleave
    # with the parent's requests, so the child starts its own worker if it needs one
    global _WORKER, _STARTS, _WORKER_LOCK
    _WORKER, _STARTS, _WORKER_LOCK = None, 0, threading.Lock()


atexit.register(close_shared_worker)
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


# ---------------------------------------------------------------------- the worker's side
#: Tokenizers the worker loaded, by key (a few: one per encoder that sent work).
_BACKENDS: OrderedDict[str, Any] = OrderedDict()


def load_tokenizer(key: str, text: str, probes: Sequence[str]) -> list[list[int]]:
    """(Worker) load a backend from its JSON under ``key``; the probes' ids, to be compared there."""
    from tokenizers import Tokenizer

    from landmark_rag.segment.tokens import TextTokenizer

    backend = Tokenizer.from_str(text)
    _BACKENDS[key] = TextTokenizer.from_backend(backend)
    while len(_BACKENDS) > 4:
        _BACKENDS.popitem(last=False)
    return [list(e.ids) for e in backend.encode_batch(list(probes), add_special_tokens=False)]


def prepare_texts(
    key: str, texts: Sequence[str], max_tokens: int, causal: bool
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(Worker) per text, ``(spans [n, 2], ids of all its sentences in one array, their lengths)``:
    default segmentation and ``encode.prepare.measure_documents`` with long sentences cut."""
    from landmark_rag.encode.prepare import measure_documents
    from landmark_rag.segment.segment import sentence_spans

    lists = [sentence_spans(t) for t in texts]
    n = len(texts)
    measured = measure_documents(texts, lists, _BACKENDS[key], max_tokens, causal, cut=[True] * n, doc_ids=[None] * n)
    out = []
    for sents, ids in measured:
        spans = np.array([(s.start, s.end) for s in sents], dtype=np.int64).reshape(-1, 2)
        lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
        flat = np.concatenate(ids).astype(np.int64, copy=False) if ids else np.zeros(0, dtype=np.int64)
        out.append((spans, flat, lengths))
    return out


def serve(requests_fd: int, results_fd: int) -> None:
    """(Worker) answer tasks until told to end or the caller's end of the pipe closes."""
    # Ctrl-C in a terminal reaches the whole process group: the caller decides what stops;
    # the worker ends when the caller closes its pipe
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with os.fdopen(requests_fd, "rb") as requests, os.fdopen(results_fd, "wb") as results:
        _send(results, ("ready", os.getpid()))
        while True:
            message = _recv(requests)
            if message is None or message[0] == "exit":
                return
            _, task, target, args = message
            try:
                value, ok = _resolve(target)(*args), True
            except Exception as exc:  # noqa: BLE001 - handed to the caller, raised there
                value, ok = _portable(exc), False
            _send(results, ("done", task, ok, value))


def _resolve(target: str) -> Any:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def _portable(exc: Exception) -> tuple[Exception, str]:
    """``(exc as it can travel, its traceback there)``: itself where it pickles, else its text."""
    import traceback

    detail = "".join(traceback.format_exception(exc)).rstrip()
    try:
        pickle.loads(pickle.dumps(exc))
        out = exc
    except Exception:  # noqa: BLE001 - an exception that does not pickle travels as its text
        out = RuntimeError(f"{type(exc).__name__}: {exc}")
    out.__traceback__ = None
    return out, detail


def _send(stream: IO[bytes], message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


def _recv(stream: IO[bytes]) -> Any:
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(head)
    data = stream.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)
