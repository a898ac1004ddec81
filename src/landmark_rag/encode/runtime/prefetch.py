"""A producer thread one step ahead of its consumer, in order, with errors where they occur.

Why a module of its own: the write path (``ingest.write``) overlaps reading and preparing the
next group of documents with encoding the current one, and it must not import torch (an
unchanged re-index or a cold CLI command never loads the model stack); the encoder and the
trainer use the same class.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import Generic, TypeVar

T = TypeVar("T")

__all__ = ["Prefetch", "PrefetchStopped"]

logger = logging.getLogger(__name__)

#: Seconds a Ctrl-C waits for the producer's current item (a large file's extraction, a group's
#: preparation) before leaving the thread to end on its own at its next item.
INTERRUPT_WAIT = 5.0


class PrefetchStopped(RuntimeError):
    """Raised to a consumer on another thread whose producer was stopped before it ended."""


class Prefetch(Generic[T]):
    """Iterate ``items`` on a producer thread, ``depth`` items ahead of the consumer.

    Why: preparing the next group of documents (segmentation, tokenisation, window planning,
    padding) is host work that a device would otherwise wait for; on this thread it runs
    while the current group's forward passes do (tokenizers and numpy release the GIL).

    Items come out in order, each once. An exception the producer raises is raised to the
    consumer at the item where it happened, after every item before it. Leaving the ``with``
    block early (the consumer's own exception, a ``break``) stops the producer and joins it; on
    Ctrl-C it waits at most :data:`INTERRUPT_WAIT` seconds for the producer's current item.
    ``thread=False`` iterates ``items`` in the consumer's thread instead (nothing to overlap);
    ``name`` names the thread.
    """

    _DONE = object()

    def __init__(self, items: Iterable[T], depth: int = 1, *, thread: bool = True, name: str = "landmark-prepare") -> None:
        self._items = items
        self._queue: queue.Queue[tuple[object, BaseException | None]] = queue.Queue(maxsize=max(1, depth))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, name=name, daemon=True) if thread else None

    def __enter__(self) -> Iterator[T]:
        if self._thread is None:
            return iter(self._items)
        self._thread.start()
        return self._consume()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        interrupted = exc_type is not None and issubclass(exc_type, KeyboardInterrupt)
        self.close(timeout=INTERRUPT_WAIT if interrupted else None)

    def close(self, timeout: float | None = None) -> None:
        """Stop the producer (it ends at its next item) and wait for it: at most ``timeout``
        seconds (a Ctrl-C must not wait for a long item), after which it is left to end on its
        own (a daemon thread that puts nothing more anywhere)."""
        if self._thread is None:
            return
        self._stop.set()
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._thread.is_alive():
            if deadline is not None and time.monotonic() > deadline:
                logger.warning("the %s thread is still on its current item; it ends on its own", self._thread.name)
                return
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
            try:
                item, exc = self._queue.get(timeout=0.1)
            except queue.Empty:
                # a consumer on another thread (a stage of a pipeline) must not wait for ever on
                # a producer that close() stopped before it could say it ended
                if self._stop.is_set() and self._thread is not None and not self._thread.is_alive() and self._queue.empty():
                    raise PrefetchStopped(f"the {self._thread.name} thread was stopped") from None
                continue
            if item is self._DONE:
                if exc is not None:
                    raise exc
                return
            yield item  # type: ignore[misc]
