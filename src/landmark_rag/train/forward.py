"""Training's forward: the encoder's own layout and pooling, with gradients.

Training must produce exactly the vectors inference produces, so documents, queries and
standalone units are laid out by the encoder's :class:`~landmark_rag.encode.layout.Layout`
and pooled as ``encode.pooling`` pools - what ``LandmarkEncoder`` itself runs - and only the
forward keeps gradients.

Two things make a step cheap on the host, so a GPU does not wait on it:

- :class:`TokenCache` tokenises every unit and query once per run (a run draws the same
  article sentences again and again, and re-tokenising them was most of a GPU step's host
  time);
- :func:`prepare_jobs` turns a batch's jobs into padded tensors plus one flat gather index
  (which batch row, which positions, which output slot) on the host, so the device pools a
  whole batch with one gather instead of one small copy and one index per window. A
  background thread (``train.prefetch``) runs it for the next step while this one trains.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.nn.functional as F

from landmark_rag.encode.config import Pooling
from landmark_rag.encode.layout import Job, Layout, sentence_pieces
from landmark_rag.encode.pooling import last_hidden, pad_batch, pool_gathered, span_tokens
from landmark_rag.segment.tokens import text_tokenizer
from landmark_rag.train.examples import TrainExample

Forward = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
#: ``(texts, spaces) -> token ids per text``, as ``Layout.tokenize_sentences`` returns them.
Tokenize = Callable[[Sequence[str], Sequence[str] | None], list[np.ndarray]]

__all__ = [
    "Forward", "PreparedJobs", "TokenCache", "document_jobs", "document_vectors", "hf_forward",
    "pool_jobs", "pool_prepared", "pool_standalone", "prepare_jobs",
]


class TokenCache:
    """Token ids of every unit, standalone unit and query a run has laid out, each text tokenised once.

    Keys are the exact strings the layout tokenises (a causal model's unit with the
    whitespace before it), so a cached entry is what a fresh ``Layout`` call returns for
    that text; a unit in context and the same unit alone (the distillation target) share one
    tokenisation wherever their strings agree, and differ only in how many ids they keep. The
    misses of one call are tokenised together in one batch. Safe to share between the step
    thread and the prefetch thread: the tokenizer is used by one thread at a time.
    """

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        # a unit alone is capped at a whole window, with no landmark to leave room for
        self._standalone = replace(layout, pooling=Pooling.SENTENCE)
        self._ids: dict[str, np.ndarray] = {}
        self._queries: dict[str, Job] = {}
        self._lock = threading.Lock()
        #: texts sent to the tokenizer so far (units, standalone units and queries together)
        self.tokenised = 0

    def _lookup(self, pieces: Sequence[str]) -> list[np.ndarray]:
        if any(p not in self._ids for p in pieces):
            with self._lock:  # one thread at a time uses the tokenizer
                missing = list(dict.fromkeys(p for p in pieces if p not in self._ids))
                # uncapped: each use caps them as the layout does (Layout.cap_ids)
                ids = text_tokenizer(self.layout.tokenizer).ids(missing)
                self.tokenised += len(missing)
                self._ids.update(zip(missing, ids, strict=True))
        return [self._ids[p] for p in pieces]

    def units(self, texts: Sequence[str], spaces: Sequence[str] | None = None) -> list[np.ndarray]:
        """``layout.tokenize_sentences(texts, spaces)``, from the cache where it can."""
        return self.layout.cap_ids(self._lookup(sentence_pieces(texts, spaces, self.layout.causal)))

    def standalone(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Ids of units embedded alone (the distillation target): capped at a whole window,
        no landmark, as ``replace(layout, pooling=SENTENCE).tokenize_sentences`` gives them for
        a text with nothing before it (a causal model's unit gets no leading space)."""
        return self._standalone.cap_ids(self._lookup(list(texts)))

    def query_jobs(self, texts: Sequence[str]) -> list[Job]:
        """``layout.query_jobs(texts)``, each query laid out once per run."""
        if any(t not in self._queries for t in texts):
            with self._lock:
                missing = list(dict.fromkeys(t for t in texts if t not in self._queries))
                jobs = self.layout.query_jobs(missing)
                self.tokenised += len(missing)
                self._queries.update(zip(missing, jobs, strict=True))
        # a query job pools output row ``q``: the cached job says 0..n of its own call
        return [replace(self._queries[t], sentences=np.array([q])) for q, t in enumerate(texts)]


@dataclass
class PreparedJobs:
    """A batch of jobs ready for the device: padded ids and mask, and one gather index.

    Row ``k`` of the output is the pooled vector of batch row ``rows[k]`` over positions
    ``[starts[k], ends[k])`` (the landmark at ``ends[k] - 1``); rows come out grouped by
    output group and, within a group, in unit order, ``counts`` per group.
    """

    ids: torch.Tensor
    mask: torch.Tensor
    rows: torch.Tensor
    starts: torch.Tensor
    ends: torch.Tensor
    counts: list[int]
    #: mean pooling's token index (``encode.pooling.span_tokens``), built with the batch on the
    #: host so a GPU step never waits for a count to come back; ``None``: pooling builds it from the
    #: gather index (copied to the host and back)
    spans: torch.Tensor | None = None

    def to(self, device: torch.device | str) -> PreparedJobs:
        """The tensors on ``device``.

        Plain copies from ordinary host memory: a step's ids and indices are kilobytes, and the
        step reads its loss back anyway, so an asynchronous copy has little to overlap; and
        page-locked buffers made on the prefetch thread and freed on the training thread would be
        the one construct of this path that only CUDA has."""
        device = torch.device(device)
        move = lambda t: t.to(device)
        return PreparedJobs(
            move(self.ids), move(self.mask), move(self.rows), move(self.starts), move(self.ends), self.counts,
            move(self.spans) if self.spans is not None else None,
        )


def prepare_jobs(jobs: Sequence[Job], n_out: Sequence[int], pad_id: int, mean: bool = False) -> PreparedJobs:
    """Pad ``jobs`` and build their gather index; ``n_out[g]`` vectors are expected of group
    ``g`` (``job.doc``), each unit pooled exactly once. ``mean``: also mean pooling's token index."""
    ids, mask = pad_batch(jobs, pad_id)
    offsets = np.concatenate([[0], np.cumsum(np.asarray(n_out, dtype=np.int64))])
    total = int(offsets[-1])
    rows = np.full(total, -1, dtype=np.int64)
    starts = np.zeros(total, dtype=np.int64)
    ends = np.zeros(total, dtype=np.int64)
    for r, job in enumerate(jobs):
        slot = offsets[job.doc] + np.asarray(job.sentences, dtype=np.int64)
        if len(slot) and ((slot >= offsets[job.doc + 1]).any() or (rows[slot] >= 0).any()):
            raise RuntimeError(f"group {job.doc}: a unit is pooled twice or lies outside its group")
        rows[slot], starts[slot], ends[slot] = r, job.starts, job.ends
    if (rows < 0).any():
        g = int(np.searchsorted(offsets, int(np.flatnonzero(rows < 0)[0]), side="right")) - 1
        raise RuntimeError(f"group {g}: pooled {int((rows[offsets[g]:offsets[g + 1]] >= 0).sum())} of {n_out[g]} vectors")
    index = (torch.from_numpy(rows), torch.from_numpy(starts), torch.from_numpy(ends))
    spans = torch.from_numpy(span_tokens(rows, starts, ends, ids.shape[1])) if mean else None
    return PreparedJobs(ids, mask, *index, [int(n) for n in n_out], spans)


def pool_prepared(forward: Forward, prepared: PreparedJobs, mode: Pooling, device: torch.device) -> list[torch.Tensor]:
    """Run a prepared batch and return, per output group, ``[counts[g], dim]`` L2-normalised
    vectors, pooled by inference's own ``encode.pooling.pool_gathered`` (one gather for the batch)."""
    p = prepared.to(device)
    vecs = pool_gathered(forward(p.ids, p.mask), p.rows, p.starts, p.ends, mode, p.spans)
    return list(torch.split(F.normalize(vecs, dim=-1), p.counts))


def pool_jobs(
    forward: Forward, jobs: Sequence[Job], n_out: Sequence[int], mode: Pooling, pad_id: int, device: torch.device
) -> list[torch.Tensor]:
    """Run ``jobs`` in one padded batch and return, per output group, ``[n_out[g], dim]``
    L2-normalised vectors. ``job.doc`` names the output group; ``mode`` is ``LANDMARK`` or
    ``MEAN`` (``encode.pooling.pool``)."""
    prepared = prepare_jobs(jobs, n_out, pad_id, mean=mode == Pooling.MEAN)
    return pool_prepared(forward, prepared, mode, torch.device(device))


#: padded tokens per batch of lone units (the distillation target's inputs) on a CPU, and how
#: much wider than its narrowest unit a batch may grow; an accelerator, where each batch costs
#: a launch, takes larger and looser batches (``..._ACCELERATOR``)
STANDALONE_BATCH_TOKENS = 8192
STANDALONE_WIDTH_GROWTH = 1.25
STANDALONE_BATCH_TOKENS_ACCELERATOR = 65536
STANDALONE_WIDTH_GROWTH_ACCELERATOR = 2.0


def pool_standalone(
    forward: Forward, jobs: Sequence[Job], mode: Pooling, pad_id: int, device: torch.device,
    batch_tokens: int | None = None, width_growth: float | None = None,
) -> torch.Tensor:
    """``[len(jobs), dim]`` L2-normalised vectors, one per job, in the jobs' order; each job is
    one unit (``Layout.standalone_jobs``). The jobs run sorted by length, in batches of at
    most ``batch_tokens`` padded tokens whose widest unit is at most ``width_growth`` times
    their narrowest plus 8 tokens (defaults: :data:`STANDALONE_BATCH_TOKENS` and
    :data:`STANDALONE_WIDTH_GROWTH` on a CPU).

    Why: a step's new units went through as one batch padded to the longest of them, and
    sentences vary a lot in length, so that forward pass computed about three padding tokens
    for every real one. Each vector is what the unit gives alone; only the padding around it
    changes, so they agree with the one batch's to float rounding."""
    if not jobs:
        raise ValueError("no units to embed")
    device = torch.device(device)
    cpu = device.type == "cpu"
    if batch_tokens is None:
        batch_tokens = STANDALONE_BATCH_TOKENS if cpu else STANDALONE_BATCH_TOKENS_ACCELERATOR
    if width_growth is None:
        width_growth = STANDALONE_WIDTH_GROWTH if cpu else STANDALONE_WIDTH_GROWTH_ACCELERATOR
    out: list[torch.Tensor | None] = [None] * len(jobs)
    order = sorted(range(len(jobs)), key=lambda i: len(jobs[i].ids))
    batch: list[int] = []

    def run() -> None:
        lone = [replace(jobs[i], doc=0, sentences=np.array([k])) for k, i in enumerate(batch)]
        (vecs,) = pool_jobs(forward, lone, [len(lone)], mode, pad_id, device)
        for k, i in enumerate(batch):
            out[i] = vecs[k]

    for i in order:  # ascending: the job joining a batch is its widest
        width = len(jobs[i].ids)
        if batch and (
            width * (len(batch) + 1) > batch_tokens or width > width_growth * len(jobs[batch[0]].ids) + 8
        ):
            run()
            batch = []
        batch.append(i)
    if batch:
        run()
    return torch.stack(out)  # type: ignore[arg-type]


def document_jobs(
    layout: Layout, examples: Sequence[TrainExample], tokenize: Tokenize | None = None
) -> tuple[list[Job], list[int]]:
    """The jobs of each example laid out as one document (``job.doc`` = its index), and its
    unit count; ``tokenize`` (e.g. :meth:`TokenCache.units`) defaults to the layout's own."""
    tokenize = tokenize or layout.tokenize_sentences
    jobs, counts = [], []
    for d, ex in enumerate(examples):
        jobs.extend(layout.document_jobs(tokenize(ex.units, ex.spaces), d))
        counts.append(len(ex.units))
    return jobs, counts


def document_vectors(
    layout: Layout,
    forward: Forward,
    examples: Sequence[TrainExample],
    device: torch.device | str,
    tokenize: Tokenize | None = None,
) -> list[torch.Tensor]:
    """One L2-normalised vector per unit of each example (``[len(units), dim]`` each), laid
    out and pooled as ``encode_documents`` does with ``layout``, through ``forward`` (with gradients)."""
    jobs, counts = document_jobs(layout, examples, tokenize)
    return pool_jobs(forward, jobs, counts, layout.pooling.reduction, layout.pad_id, torch.device(device))


def hf_forward(model: torch.nn.Module, layout: Layout | None = None) -> Forward:
    """The last hidden state of a Hugging Face encoder (or of a peft/accelerate wrapper);
    ``layout`` as in ``encode.pooling.last_hidden`` (isolated landmarks get their mask)."""

    def run(ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return last_hidden(model, ids, mask, layout)

    return run
