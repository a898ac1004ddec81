"""The device side of encoding: groups of padded batches in, each document's vectors out.

Why its own module: how a call's batches meet the device is a concern of its own, with its
own failure modes, apart from what ``LandmarkEncoder`` offers (loading, configuration, the
encode calls). :class:`DeviceScheduler` decides when each batch runs and what is done when
one fails:

* on a CPU a group's batches run to the end where they are called, several at once
  (``runtime.parallel``);
* on an accelerator (``deferred``) they are launched without waiting: each batch's vectors
  are copied back into pinned host memory behind it, and a group is finished (its copies
  waited for, its vectors scattered into its documents) only once the next group is
  launched (:func:`pipelined`), so the device always has work queued while the host gathers
  the last group's results;
* a batch that runs out of device memory is run again in halves, halved again while it does
  not fit;
* a ``torch.compile``d document model that fails is dropped, and the batch runs eagerly.

What it needs of the encoder is what its parameters name: the model pass on one batch (the
encoder's own: it knows the model, the layout and the precision), where the compiled model is
kept, the device, the vectors' width and the pad id. It never imports ``encode.encoder``: the
encoder is built on it, not the other way round.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple, Protocol

import numpy as np
import torch
from tqdm.auto import tqdm

from landmark_rag.encode.batching import BatchArrays, batch_jobs, pack_arrays
from landmark_rag.encode.config import Pooling
from landmark_rag.encode.layout import Job
from landmark_rag.encode.runtime.parallel import auto_workers, run_batches
from landmark_rag.types import EncodedDocument, Sentence

logger = logging.getLogger(__name__)


class Document(NamedTuple):
    """A document ready to lay out: its sentences and their token ids."""

    text: str
    doc_id: str | None
    sentences: list[Sentence]
    toks: list[np.ndarray]
    tokens: int  # text tokens as tokenised, before any cap (``EncodedDocument.tokens``)


class Packed(NamedTuple):
    """One batch ready for the device: padded ids and mask, and the pooling index."""

    arrays: BatchArrays  # the batch on the host: its rows' documents and sentences (and jobs again)
    ids: torch.Tensor  # int64 [rows, width] (pinned on CUDA)
    mask: torch.Tensor  # int64 [rows, width]
    # not named ``index``: a NamedTuple field of that name would hide tuple.index
    gather: torch.Tensor  # int64 [3, pooled]: row, span start, span end per pooled sentence, in row order
    padded: bool  # whether any row is shorter than the batch (read on the host: no device sync)
    spans: torch.Tensor | None  # int64 [2, tokens]: mean pooling's token index (``batching.span_tokens``)

    @property
    def jobs(self) -> list[Job]:
        return self.arrays.jobs()


class GroupPlan(NamedTuple):
    """A group of documents and its padded batches: what the scheduler is handed."""

    docs: list[Document]
    tokens: int
    batches: list[Packed]


class Launched(NamedTuple):
    """A group whose batches are under way: its vectors land in ``outs`` once each batch in
    flight is ready (``(batch, vectors in host memory, the event to wait for or None)``)."""

    plan: GroupPlan
    outs: list[np.ndarray]
    in_flight: list[tuple[Packed, torch.Tensor, Any]]


class HostForward(Protocol):
    """One batch through ``model`` (``None``: the eager model), pooled and L2-normalised, as a
    host array: the encoder's ``_forward_pool``. ``documents``: document windows (they may run
    under autocast; queries never do)."""

    def __call__(self, batch: Packed, mode: Pooling, model: Any = None, documents: bool = False) -> np.ndarray:
        ...


class DeviceForward(Protocol):
    """:class:`HostForward`'s vectors still on the device, nothing waited for (the encoder's
    ``_forward_pool_device``): what a deferred launch queues."""

    def __call__(self, batch: Packed, mode: Pooling, model: Any = None, documents: bool = False) -> torch.Tensor:
        ...


class CompiledHolder(Protocol):
    """Where the ``torch.compile``d document model is kept (``LandmarkEncoder`` is one). Read for
    every document batch, and set to ``None`` when it fails, so that the encoder goes on
    without it in this call and in the next."""

    document_model: Any


class DeviceScheduler:
    """Runs packed batches on one device and gathers their vectors (the module says how).

    Why it holds nothing between calls but references: the encoder makes one whenever a group
    or a call is due, from its settings as they are then, so what a caller changes between
    calls (``workers``, ``to()``, the compiled model, a forward replaced to measure the host
    side alone) holds without anything to keep in step."""

    def __init__(
        self,
        forward: HostForward,
        forward_device: DeviceForward,
        compiled: CompiledHolder,
        *,
        device: torch.device,
        dim: int,
        pad_id: int,
        workers: int | None,
        deferred: bool,
    ) -> None:
        """``workers``: batches run at once on a CPU (``None``: ``runtime.parallel.auto_workers``);
        ``deferred``: launch document batches without waiting for each (an accelerator's queue
        runs them in order; a CPU runs them as they are called)."""
        self.forward = forward
        self.forward_device = forward_device
        self.compiled = compiled
        self.device = device
        self.dim = dim
        self.pad_id = pad_id
        self.workers = workers
        self.deferred = deferred

    # ------------------------------------------------------------------ groups of documents
    def launch(self, plan: GroupPlan, mode: Pooling) -> Launched:
        """A group's batches under way, pooled by ``mode`` (the layout's document reduction): not
        deferred, run to the end here (batches in parallel, ``runtime.parallel``); deferred,
        launched without waiting for any (their vectors copied back into pinned memory as they
        are ready, :meth:`_launch_batch`)."""
        outs = [np.zeros((len(doc.sentences), self.dim), dtype=np.float32) for doc in plan.docs]
        if not self.deferred:
            self.run(plan.batches, outs, mode, documents=True)
            return Launched(plan, outs, [])
        in_flight = []
        for batch in plan.batches:
            launched = self._launch_batch(batch, outs, mode)
            if launched is not None:
                in_flight.append(launched)
        return Launched(plan, outs, in_flight)

    def _launch_batch(
        self, batch: Packed, outs: list[np.ndarray], mode: Pooling
    ) -> tuple[Packed, torch.Tensor, Any] | None:
        """``batch`` launched: ``(batch, its vectors in host memory once ready, the event that
        says when)``; ``None`` when it was run to the end at once instead (out of memory, or a
        compiled model that failed: :meth:`_forward_or_recover`)."""
        vecs = self._forward_or_recover(self.forward_device, batch, outs, mode, documents=True)
        if vecs is None:
            return None
        if vecs.device.type == "cpu":
            return batch, vecs, None
        host = torch.empty(vecs.shape, dtype=vecs.dtype, pin_memory=True)
        host.copy_(vecs, non_blocking=True)
        ready = torch.cuda.Event()
        # on the stream the copy was queued on: the encoder's device, which need not be the
        # current one (an encoder on cuda:1 in a process whose current device is cuda:0)
        ready.record(torch.cuda.current_stream(vecs.device))
        return batch, host, ready

    # ------------------------------------------------------------------ batches
    def run_jobs(
        self, jobs: list[Job], batch_size: int, outs: list[np.ndarray], mode: Pooling, show_progress: bool = False
    ) -> None:
        """Pool every job into ``outs`` (rows L2-normalised), ``batch_size`` jobs a batch."""
        pin = self.device.type == "cuda"
        mean = mode == Pooling.MEAN
        packed = [pack(batch, self.pad_id, pin, mean) for batch in batch_jobs(jobs, batch_size, None)]
        self.run(packed, outs, mode, show_progress)

    def run(
        self, batches: list[Packed], outs: list[np.ndarray], mode: Pooling, show_progress: bool = False,
        documents: bool = False,
    ) -> None:
        """Run ``batches`` to the end, their vectors into ``outs``: on a CPU several at once."""
        bar = tqdm(total=len(batches), desc="batches", disable=not show_progress)
        workers = self.workers if self.workers is not None else auto_workers(self.device)
        if self.device.type != "cpu":
            workers = 1

        def one(batch: Packed) -> None:
            self._run_batch(batch, outs, mode, documents)  # rows of outs are disjoint per job
            bar.update(1)

        run_batches(batches, one, workers)
        bar.close()

    def _run_batch(self, batch: Packed, outs: list[np.ndarray], mode: Pooling, documents: bool = False) -> None:
        pooled = self._forward_or_recover(self.forward, batch, outs, mode, documents)
        if pooled is not None:
            scatter(batch, pooled, outs)

    def _forward_or_recover(
        self, forward: HostForward | DeviceForward, batch: Packed, outs: list[np.ndarray], mode: Pooling,
        documents: bool,
    ) -> Any:
        """``forward(batch, mode, model, documents)``; ``None`` when the batch had to be run
        otherwise, its vectors then already in ``outs``: out of memory, in halves
        (:meth:`_run_halves`); a compiled model that failed, again without it."""
        model = self.compiled.document_model if documents else None
        out_of_memory = False
        try:
            return forward(batch, mode, model, documents)
        except torch.OutOfMemoryError:
            out_of_memory = True  # run below, once the failed attempt's tensors are let go
        except Exception as exc:  # e.g. inductor without a C++ compiler
            if model is None:
                raise
            self._drop_compiled(exc)
        if out_of_memory:
            self._run_halves(batch, outs, mode, documents)
        else:
            self._run_batch(batch, outs, mode, documents)
        return None

    def _run_halves(self, batch: Packed, outs: list[np.ndarray], mode: Pooling, documents: bool) -> None:
        """``batch``, which ran out of device memory, run again as two halves (each halved again
        while it does not fit; a single window is tried once more, then its error raised)."""
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        jobs = batch.jobs
        if len(jobs) == 1:  # what the cache held may be all it lacked; a second failure is the answer
            model = self.compiled.document_model if documents else None
            scatter(batch, self.forward(batch, mode, model, documents), outs)
            return
        half = len(jobs) // 2
        logger.warning("out of memory on a batch of %d windows; retrying in halves", len(jobs))
        pin = self.device.type == "cuda"
        mean = batch.spans is not None
        self._run_batch(pack(jobs[:half], self.pad_id, pin, mean), outs, mode, documents)
        self._run_batch(pack(jobs[half:], self.pad_id, pin, mean), outs, mode, documents)

    def _drop_compiled(self, exc: Exception) -> None:
        # compiling is an optimisation the user asked for, not a reason to lose the run
        logger.warning("torch.compile failed (%s: %s); encoding on without it", type(exc).__name__, exc)
        self.compiled.document_model = None


def auto_batch_tokens(model_config: Any, device: torch.device, max_length: int) -> int:
    """Padded tokens per batch on a CUDA device when the caller gives no ``batch_tokens``.

    The rule: a quarter of the device's free memory, divided by an upper estimate of
    what one token of a window holds at once in a forward pass (fp32-sized: 12 hidden
    vectors, 2 feed-forward intermediates, and one row of attention scores per head for
    a model without memory-efficient attention), between one window (``max_length``) and
    ``1 << 18`` tokens (beyond that a batch gets no faster per token)."""
    hidden = int(getattr(model_config, "hidden_size", 1024))
    inter = int(getattr(model_config, "intermediate_size", None) or 4 * hidden)
    heads = int(getattr(model_config, "num_attention_heads", 16))
    per_token = 4 * (12 * hidden + 2 * inter + heads * max_length)
    free, _total = torch.cuda.mem_get_info(device)
    # blocks torch's allocator holds but no tensor uses are free for a batch too
    free += torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    return int(min(max(free // 4 // per_token, max_length), 1 << 18))


def pipelined(plans: Iterable[GroupPlan], launch: Callable[[GroupPlan], Launched]) -> Iterator[list[EncodedDocument]]:
    """Each group's documents, in order; a group is finished (its vectors waited for) only once
    ``launch`` has set the next one's batches under way, so a deferring device always has the
    next group's work queued while the host gathers the last group's results.

    ``launch`` is a parameter (the encoder's ``_launch_group``) rather than a scheduler's own
    method so that each group is launched with the encoder's settings as they are when it is due."""
    launched: deque[Launched] = deque()
    for plan in plans:
        launched.append(launch(plan))
        if len(launched) > 1:
            yield finish(launched.popleft())
    while launched:
        yield finish(launched.popleft())


def finish(launched: Launched) -> list[EncodedDocument]:
    """A launched group's documents, once each of its batches in flight is ready."""
    plan, outs, in_flight = launched
    for batch, host, ready in in_flight:
        if ready is not None:
            ready.synchronize()
        scatter(batch, host.numpy(), outs)
    return [
        EncodedDocument(text=doc.text, sentences=doc.sentences, embeddings=out, doc_id=doc.doc_id, tokens=doc.tokens)
        for doc, out in zip(plan.docs, outs, strict=True)
    ]


def scatter(batch: Packed, pooled: np.ndarray, outs: list[np.ndarray]) -> None:
    """A batch's pooled vectors into their documents' rows (rows of ``outs`` are disjoint per job)."""
    arrays = batch.arrays
    bounds = arrays.row_bounds()
    for doc, a, b in zip(arrays.docs.tolist(), bounds[:-1], bounds[1:], strict=True):
        outs[doc][arrays.sentences[a:b]] = pooled[a:b]


def pack(jobs: list[Job], pad_id: int, pin: bool, mean: bool = False) -> Packed:
    """``jobs`` padded into one batch (``batching.pack_arrays``) as tensors; ``mean``: with the
    token index mean pooling adds up (without it, pooling builds the index from the gather
    index, copied to the host and back)."""
    return tensors(pack_arrays(jobs, pad_id, mean), pin)


def tensors(arrays: BatchArrays, pin: bool) -> Packed:
    """A batch's arrays as tensors, copied into pinned memory when ``pin`` (a CUDA copy that
    does not block), else sharing the arrays' memory."""
    width = arrays.ids.shape[1]
    mask = np.less(np.arange(width)[None, :], arrays.lengths[:, None]).astype(np.int64)

    def tensor(x: np.ndarray) -> torch.Tensor:
        t = torch.from_numpy(x)
        return t.pin_memory() if pin else t

    ids, gather = tensor(arrays.ids), tensor(arrays.gather)
    spans = tensor(arrays.spans) if arrays.spans is not None else None
    # the host's view of the batch reads the pinned copies: the arrays it came as can go
    arrays = arrays._replace(ids=ids.numpy(), gather=gather.numpy(), spans=spans.numpy() if spans is not None else None)
    return Packed(arrays, ids, tensor(mask), gather, arrays.padded, spans)
