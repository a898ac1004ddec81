"""The next steps' batches, built on a background thread while the current step trains.

Why: drawing a batch, laying it out and padding it is host work that a GPU step would
otherwise wait for. :func:`prepared_steps` draws exactly the batches a stage still needs, in
order, and records the data stream's random state after each one, so a checkpoint saves the
state of the batches actually trained on (not of those already drawn ahead) and a resumed run
draws the same batches as an uninterrupted one. The thread itself is the encoder's
(``encode.runtime.prefetch.Prefetch``): order kept, a producer's exception raised at its
step, the thread stopped when the consumer leaves early.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from landmark_rag.encode.runtime.prefetch import Prefetch
from landmark_rag.train.examples import Batch

T = TypeVar("T")

__all__ = ["PreparedStep", "prefetch_steps", "prepared_steps"]


@dataclass
class PreparedStep(Generic[T]):
    """One step's batch, what ``prepare`` made of it, and the stream's state after drawing it."""

    batch: Batch
    inputs: T
    rng_state: Any


def prepared_steps(
    batches: Iterator[Batch], steps: int, rng: random.Random, prepare: Callable[[Batch], T]
) -> Iterator[PreparedStep[T]]:
    """``steps`` batches of ``batches`` (drawn with ``rng``), each with ``prepare(batch)``."""
    for _ in range(steps):
        batch = next(batches)
        yield PreparedStep(batch, prepare(batch), rng.getstate())


def prefetch_steps(
    batches: Iterator[Batch], steps: int, rng: random.Random, prepare: Callable[[Batch], T], depth: int = 2
) -> Prefetch[PreparedStep[T]]:
    """:func:`prepared_steps` run ``depth`` steps ahead on a background thread (``depth`` 0: on
    the consumer's thread, one step at a time); use it as
    ``with prefetch_steps(...) as stream: next(stream)``."""
    return Prefetch(prepared_steps(batches, steps, rng, prepare), depth=depth, thread=depth > 0)
