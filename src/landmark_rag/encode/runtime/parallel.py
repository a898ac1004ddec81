"""Data-parallel CPU encoding: several batches at once, each on fewer intra-op threads.

Why: a small encoder's forward pass on a few CPU cores spends a share of every operator in
OpenMP fork/join and in the serial parts between parallel regions (layer norms, softmax on
short rows, Python). Running ``workers`` batches concurrently, each with
``cores // workers`` intra-op threads, keeps every core busy through those gaps. torch
releases the GIL inside its operators, so Python threads are enough; each worker sets its
own thread count, which in torch's OpenMP backend is per calling thread. Vectors are the
same as sequential encoding (every window runs the same kernels, only on other threads).

The measured effect is in docs/benchmarks.md ("Indexing throughput side by side").
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Generic, TypeVar

import torch

T = TypeVar("T")


def auto_workers(device: torch.device) -> int:
    """Concurrent batches when the caller does not say: 2 on a CPU with at least 2 torch
    threads, else 1 (a GPU queues kernels on one stream; more threads would only contend)."""
    return 2 if device.type == "cpu" and torch.get_num_threads() >= 2 else 1


def run_batches(batches: Sequence[T], fn: Callable[[T], None], workers: int) -> None:
    """Call ``fn`` on every batch, ``workers`` at a time; the first exception propagates.

    The calling thread's torch thread count is restored afterwards, and so is the count
    that threads created later start with (torch keeps it process-wide as well).
    """
    if workers <= 1 or len(batches) <= 1:
        for b in batches:
            fn(b)
        return
    total = torch.get_num_threads()
    per_worker = max(1, total // workers)
    local = threading.local()

    def run(b: T) -> None:
        if getattr(local, "threads", None) != per_worker:
            torch.set_num_threads(per_worker)
            local.threads = per_worker
        fn(b)

    try:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="landmark-encode") as pool:
            for f in [pool.submit(run, b) for b in batches]:
                f.result()
    finally:
        torch.set_num_threads(total)


class Prefetch(Generic[T]):
    """Iterate ``items`` on a producer thread, ``depth`` items ahead of the consumer.

    Why: preparing the next group of documents (segmentation, tokenisation, window planning,
    padding) is host work that a device would otherwise wait for; on this thread it runs
    while the current group's forward passes do (tokenizers and numpy release the GIL).

    Items come out in order, each once. An exception the producer raises is raised to the
    consumer at the item where it happened, after every item before it. Leaving the ``with``
    block early (the consumer's own exception, a ``break``) stops the producer and joins it.
    ``thread=False`` iterates ``items`` in the consumer's thread instead (nothing to overlap).
    """

    _DONE = object()

    def __init__(self, items: Iterable[T], depth: int = 1, *, thread: bool = True) -> None:
        self._items = items
        self._queue: queue.Queue[tuple[object, BaseException | None]] = queue.Queue(maxsize=max(1, depth))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, name="landmark-prepare", daemon=True) if thread else None

    def __enter__(self) -> Iterator[T]:
        if self._thread is None:
            return iter(self._items)
        self._thread.start()
        return self._consume()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop the producer (it ends at its next item) and wait for it."""
        if self._thread is None:
            return
        self._stop.set()
        while self._thread.is_alive():
            try:  # unblock a producer waiting on a full queue
                self._queue.get(timeout=0.05)
            except queue.Empty:
                pass
        self._thread.join()

    def _put(self, entry: tuple[object, BaseException | None]) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _produce(self) -> None:
        try:
            for item in self._items:
                if not self._put((item, None)):
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
            self._put((self._DONE, exc))
            return
        finally:
            close = getattr(self._items, "close", None)
            if close is not None and self._stop.is_set():
                close()
        self._put((self._DONE, None))

    def _consume(self) -> Iterator[T]:
        while True:
            item, exc = self._queue.get()
            if item is self._DONE:
                if exc is not None:
                    raise exc
                return
            yield item  # type: ignore[misc]
