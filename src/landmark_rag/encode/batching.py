"""Windows into padded batches, with numpy alone.

What the host does between laying out a group's windows (``encode.layout``) and the device's
forward: sort the windows by length (minimal padding), cut them into batches (by windows or
by padded tokens) and pad each into plain arrays, with the index pooling gathers through. It
imports neither torch nor transformers, so a preparation process (``encode.runtime.process``)
runs this very code and hands the arrays back; the encoder only wraps them as tensors (pinned
on CUDA) on its side.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from landmark_rag.encode.config import Pooling
from landmark_rag.encode.layout import Job, Layout


class BatchArrays(NamedTuple):
    """One padded batch as plain arrays (they pickle compactly: one buffer each)."""

    ids: np.ndarray  # int64 [rows, width], right-padded with the pad id
    lengths: np.ndarray  # int64 [rows]: each row's tokens before padding
    # not named ``index``: a NamedTuple field of that name would hide tuple.index
    gather: np.ndarray  # int64 [3, pooled]: row, span start, span end per pooled sentence, rows in order
    docs: np.ndarray  # int64 [rows]: each row's document within its group (``Job.doc``)
    sentences: np.ndarray  # int64 [pooled]: each pooled sentence's index in its document
    spans: np.ndarray | None  # int64 [2, tokens]: mean pooling's token index (:func:`span_tokens`)

    @property
    def padded(self) -> bool:
        """Whether any row is shorter than the batch."""
        return bool(self.lengths.min() < self.ids.shape[1])

    def row_bounds(self) -> list[int]:
        """Where each row's pooled sentences start in ``gather`` (and, last, where they end):
        the pooled sentences come in row order, each row's one slice of them."""
        return np.searchsorted(self.gather[0], np.arange(len(self.lengths) + 1)).tolist()

    def jobs(self) -> list[Job]:
        """The batch's jobs again (each row's ids unpadded, its pooled spans): to re-pack a part."""
        bounds = self.row_bounds()
        return [
            Job(self.ids[r, : self.lengths[r]], int(self.docs[r]), self.sentences[a:b],
                self.gather[1, a:b], self.gather[2, a:b])
            for r, (a, b) in enumerate(itertools.pairwise(bounds))
        ]


def plan_batches(
    layout: Layout, toks: Sequence[Sequence[np.ndarray]], batch_size: int, batch_tokens: int | None
) -> list[BatchArrays]:
    """A group of documents' padded batches: each document's windows (``toks``: its capped
    sentence ids, ``Layout.cap_ids``), sorted by length, cut into batches and padded, with
    mean pooling's token index where the layout pools by the mean."""
    jobs: list[Job] = []
    for d, doc in enumerate(toks):
        jobs.extend(layout.document_jobs(doc, d))
    mean = layout.pooling.reduction == Pooling.MEAN
    return [pack_arrays(batch, layout.pad_id, mean) for batch in batch_jobs(jobs, batch_size, batch_tokens)]


def batch_jobs(jobs: Sequence[Job], batch_size: int, batch_tokens: int | None) -> list[list[Job]]:
    """``jobs`` sorted by length (minimal padding) in batches of ``batch_size`` jobs, or, when
    ``batch_tokens`` is set, of at most that many padded tokens (at least one job each)."""
    order = sorted(range(len(jobs)), key=lambda j: len(jobs[j].ids))
    if batch_tokens is None:
        step = max(1, batch_size)
        return [[jobs[j] for j in order[i : i + step]] for i in range(0, len(order), step)]
    out: list[list[Job]] = []
    cur: list[Job] = []
    for j in order:
        job = jobs[j]
        width = len(job.ids)  # sorted ascending: the newest job is the widest in the batch
        if cur and (len(cur) + 1) * width > batch_tokens:
            out.append(cur)
            cur = []
        cur.append(job)
    if cur:
        out.append(cur)
    return out


def pack_arrays(jobs: Sequence[Job], pad_id: int, mean: bool = False) -> BatchArrays:
    """``jobs`` padded into one batch; ``mean``: with the token index mean pooling adds up
    (built here, with the batch, so that a device never waits for a count it would read back)."""
    lengths = np.fromiter((len(j.ids) for j in jobs), dtype=np.int64, count=len(jobs))
    width = int(lengths.max())
    ids = np.full((len(jobs), width), pad_id, dtype=np.int64)
    for r, job in enumerate(jobs):
        ids[r, : len(job.ids)] = job.ids
    counts = np.fromiter((len(j.sentences) for j in jobs), dtype=np.int64, count=len(jobs))
    gather = np.empty((3, int(counts.sum())), dtype=np.int64)
    gather[0] = np.repeat(np.arange(len(jobs), dtype=np.int64), counts)
    if len(jobs):
        gather[1] = np.concatenate([j.starts for j in jobs])
        gather[2] = np.concatenate([j.ends for j in jobs])
    sentences = np.concatenate([np.asarray(j.sentences, dtype=np.int64) for j in jobs])
    docs = np.fromiter((j.doc for j in jobs), dtype=np.int64, count=len(jobs))
    spans = span_tokens(gather[0], gather[1], gather[2], width) if mean else None
    return BatchArrays(ids, lengths, gather, docs, sentences, spans)


def coalesce(
    groups: Sequence[tuple[Sequence[BatchArrays], int]], batch_tokens: int, pad_id: int
) -> list[BatchArrays]:
    """The batches of several consecutive groups of documents (each: its batches, its number
    of documents) as the batches of one group: each group's document numbers moved past the
    groups before it, and consecutive batches joined while their rows at the widest one's
    width stay within ``batch_tokens``.

    Why: on an accelerator every batch is one forward pass launched from the calling thread,
    and a pass costs that thread about as much for a few windows as for thousands; groups that
    a pool of workers prepared small (so that every worker gets some) are best run as few large
    passes once they are ready together."""
    out: list[BatchArrays] = []
    docs = 0
    for group, count in groups:
        for batch in group:
            moved = batch._replace(docs=batch.docs + docs)
            last = out[-1] if out else None
            width = max(moved.ids.shape[1], last.ids.shape[1]) if last is not None else 0
            if last is not None and (len(last.lengths) + len(moved.lengths)) * width <= batch_tokens:
                out[-1] = concat_batches([last, moved], pad_id)
            else:
                out.append(moved)
        docs += count  # not read from the batches: a document without text has no window
    return out


def concat_batches(batches: Sequence[BatchArrays], pad_id: int) -> BatchArrays:
    """Padded batches as one, rows in the order given, padded to the widest: what
    :func:`pack_arrays` gives for all their jobs in that order (mean pooling's token index
    included), without unpadding them again."""
    width = max(b.ids.shape[1] for b in batches)
    rows = [len(b.lengths) for b in batches]
    row_at = np.cumsum([0, *rows])
    pooled_at = np.cumsum([0, *(b.gather.shape[1] for b in batches)])
    ids = np.full((int(row_at[-1]), width), pad_id, dtype=np.int64)
    for b, r in zip(batches, row_at[:-1], strict=False):
        ids[r : r + len(b.lengths), : b.ids.shape[1]] = b.ids
    gather = np.concatenate([b.gather + np.array([[r], [0], [0]]) for b, r in zip(batches, row_at, strict=False)], axis=1)
    spans = None
    if batches[0].spans is not None:
        if any(b.spans is None for b in batches):
            raise ValueError("batches to join must all carry mean pooling's token index, or none")
        parts = []
        for b, r, p in zip(batches, row_at, pooled_at, strict=False):
            index = b.spans
            assert index is not None  # checked above
            row, col = np.divmod(index[1], b.ids.shape[1])
            parts.append(np.stack([index[0] + p, (row + r) * width + col]))
        spans = np.concatenate(parts, axis=1)
    return BatchArrays(
        ids,
        np.concatenate([b.lengths for b in batches]),
        gather,
        np.concatenate([b.docs for b in batches]),
        np.concatenate([b.sentences for b in batches]),
        spans,
    )


def span_tokens(rows: np.ndarray, starts: np.ndarray, ends: np.ndarray, width: int) -> np.ndarray:
    """The token positions mean pooling sums: int64 ``[2, tokens]``, per token of every span
    ``[starts[k], ends[k])`` of batch row ``rows[k]``, its span ``k`` and its position in the
    flattened ``[rows * width]`` batch, spans in order.

    numpy on the host, where a batch is padded: its arrays are small, where a framework's
    per-operation overhead would cost more than the arithmetic, and a batch then reaches a
    device with its index, so the device never waits for a count it would have to read back."""
    rows, starts, ends = (np.asarray(x, dtype=np.int64) for x in (rows, starts, ends))
    lens = np.maximum(ends - starts, 0)
    seg = np.repeat(np.arange(rows.shape[0], dtype=np.int64), lens)
    first = np.cumsum(lens) - lens  # each span's first slot in the token list
    offset = np.arange(seg.shape[0], dtype=np.int64) - first[seg]
    return np.stack([seg, rows[seg] * width + starts[seg] + offset])
