"""The next steps' batches, built on a background thread while the current step trains.

Why: drawing a batch, laying it out and padding it is host work that a GPU step would
otherwise wait for. The producer draws exactly the batches the stage still needs, in order,
and records the data stream's random state after each one, so a checkpoint saves the state
of the batches actually trained on (not of those already drawn ahead) and a resumed run
draws the same batches as an uninterrupted one.
"""

from __future__ import annotations

import queue
import random
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from landmark_rag.train.examples import Batch

T = TypeVar("T")

__all__ = ["Prefetcher", "PreparedStep"]


@dataclass
class PreparedStep(Generic[T]):
    """One step's batch, what ``prepare`` made of it, and the stream's state after drawing it."""

    batch: Batch
    inputs: T
    rng_state: Any


class Prefetcher(Generic[T]):
    """``steps`` batches of ``batches``, each with ``prepare(batch)``, up to ``depth`` ahead.

    Iterate it (or call :meth:`next`); an exception in the producer is raised by the call
    that would have returned its batch. Use it as a context manager, or call :meth:`close`,
    so that a consumer that stops early also stops the thread.
    """

    _DONE = object()

    def __init__(
        self,
        batches: Iterator[Batch],
        steps: int,
        rng: random.Random,
        prepare: Callable[[Batch], T],
        depth: int = 2,
    ) -> None:
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=max(1, depth))
        self._stop = threading.Event()
        self._left = steps
        self._thread = threading.Thread(
            target=self._produce, args=(batches, steps, rng, prepare), name="landmark-rag-prefetch", daemon=True
        )
        self._thread.start()

    def _produce(self, batches: Iterator[Batch], steps: int, rng: random.Random, prepare: Callable[[Batch], T]) -> None:
        try:
            for _ in range(steps):
                batch = next(batches)
                item: Any = PreparedStep(batch, prepare(batch), rng.getstate())
                if not self._put(item):
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
            self._put(exc)
            return
        self._put(self._DONE)

    def _put(self, item: Any) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def next(self) -> PreparedStep[T]:
        """The next step; ``StopIteration`` after the last one."""
        if self._left <= 0:
            raise StopIteration
        item = self._queue.get()
        if isinstance(item, BaseException):
            self.close()
            raise item
        if item is self._DONE:
            raise StopIteration
        self._left -= 1
        return item

    def __iter__(self) -> Iterator[PreparedStep[T]]:
        while True:
            try:
                yield self.next()
            except StopIteration:
                return

    def close(self) -> None:
        """Stop the producer (it may be waiting to hand over a batch) and wait for it."""
        self._stop.set()
        self._thread.join(timeout=30)

    def __enter__(self) -> Prefetcher[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
