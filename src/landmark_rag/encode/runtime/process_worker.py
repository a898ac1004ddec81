"""The preparation worker's own side: the loop a worker process runs, its tasks, and the
framing of the messages both ends of its pipes exchange.

Why its own module: this is all a worker process imports (``runtime.process`` starts it with
``python -c`` and a line that imports :func:`serve` from here), so what the worker loads is
visible at a glance: numpy, and, lazily, tokenizers, sentencex and the encoder's
torch-free preparation code (``encode.prepare``, ``encode.batching``); never torch, nor
the pool's side (``runtime.process``), nor the caller's ``__main__``. The caller's side
uses the same framing (:func:`send`, :func:`recv`).

A message is a pickle behind an 8-byte little-endian length. Requests are
``("call", task id, "module:function", args)`` or ``("exit",)``; answers are
``("ready", pid)`` once, then ``("done", task id, ok, value or (exception, traceback))``.
"""

from __future__ import annotations

import importlib
import os
import pickle
import queue
import signal
import struct
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import IO, Any

import numpy as np

_HEADER = struct.Struct("<Q")

#: Tokenizers the worker loaded, by key (a few: one per encoder that sent work). A process that
#: runs :func:`prepare_group` itself, to measure it, registers its tokenizer here.
BACKENDS: OrderedDict[str, Any] = OrderedDict()


def load_tokenizer(key: str, text: str, probes: Sequence[str]) -> list[list[int]]:
    """(Worker) load a backend from its JSON under ``key``; the probes' ids, to be compared there."""
    from tokenizers import Tokenizer

    from landmark_rag.segment.tokens import TextTokenizer

    backend = Tokenizer.from_str(text)
    # kept for the worker's life: the caller remembers what each worker has loaded
    BACKENDS[key] = TextTokenizer.from_backend(backend)
    return [list(e.ids) for e in backend.encode_batch(list(probes), add_special_tokens=False)]


def prepare_group(
    key: str, texts: Sequence[str], layout: Any, batch_size: int, batch_tokens: int | None
) -> tuple[list[tuple[np.ndarray, int]], int, list[Any]]:
    """(Worker) a group of texts made ready for the device, as ``LandmarkEncoder`` makes one:
    per text ``(sentence spans [n, 2], its tokens)``; the tokens laid out (each sentence
    capped to a window); the group's padded batches (``encode.batching.plan_batches``).
    ``layout``: the encoder's ``Layout.portable()``."""
    from landmark_rag.encode.batching import plan_batches
    from landmark_rag.encode.prepare import measure_documents
    from landmark_rag.segment.segment import sentence_spans

    lists = [sentence_spans(t) for t in texts]
    n = len(texts)
    measured = measure_documents(
        texts, lists, BACKENDS[key], layout.max_sentence_tokens, layout.causal, cut=[True] * n, doc_ids=[None] * n
    )
    docs: list[tuple[np.ndarray, int]] = []
    toks = []
    for sents, ids in measured:
        spans = np.array([(s.start, s.end) for s in sents], dtype=np.int64).reshape(-1, 2)
        docs.append((spans, sum(len(x) for x in ids)))
        toks.append(layout.cap_ids(ids))
    laid = sum(len(x) for doc in toks for x in doc)
    return docs, laid, plan_batches(layout, toks, batch_size, batch_tokens)


def serve(requests_fd: int, results_fd: int) -> None:
    """(Worker) answer tasks until told to end or the caller's end of the pipe closes."""
    # Ctrl-C in a terminal reaches the whole process group: the caller decides what stops;
    # the worker ends when the caller closes its pipe
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with os.fdopen(requests_fd, "rb") as requests, os.fdopen(results_fd, "wb") as results:
        # requests are read as they come, while a task runs: a caller sending its next group
        # to this busy worker does not wait, on a full pipe, for the current one to end
        inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()

        def read() -> None:
            try:
                while True:
                    message = recv(requests)
                    if message is None or message[0] == "exit":
                        return
                    inbox.put(message)
            finally:  # a request that cannot be read ends the worker: the caller prepares its groups
                inbox.put(None)

        threading.Thread(target=read, name="landmark-prepare-requests", daemon=True).start()
        send(results, ("ready", os.getpid()))
        while True:
            message = inbox.get()
            if message is None or message[0] == "exit":
                return
            _, task, target, args = message
            try:
                value, ok = _resolve(target)(*args), True
            except Exception as exc:  # noqa: BLE001 - handed to the caller, raised there
                value, ok = _portable(exc), False
            send(results, ("done", task, ok, value))


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


def send(stream: IO[bytes], message: Any) -> None:
    """``message`` framed and written (:func:`encode`, :func:`write`)."""
    write(stream, encode(message))


def encode(message: Any) -> bytes:
    """``message`` as the bytes :func:`write` frames; apart from it so that a message that does
    not pickle fails before anything of it reaches the pipe."""
    return pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)


def write(stream: IO[bytes], data: bytes) -> None:
    """``data`` behind its length, all of it, however little each write of the stream takes."""
    for part in (_HEADER.pack(len(data)), data):
        view = memoryview(part)
        while view:  # an unbuffered stream may take part of it per call
            view = view[stream.write(view) or 0 :]
    stream.flush()


def recv(stream: IO[bytes]) -> Any:
    """The next message; ``None`` once the stream has ended, or ended in the middle of one."""
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(head)
    data = stream.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)
