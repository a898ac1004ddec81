"""The host side of encoding: a call's documents made into groups of padded batches.

Why its own module: between the encode calls (``LandmarkEncoder``) and the device
(``runtime.scheduler``) lies the host's work, which is where a GPU host spends its time:
segmenting, tokenising, laying out windows and padding batches, for a stream of documents
in groups of a bounded number of tokens (memory stays bounded however many or however long
the documents are). :class:`GroupPlanner` does it here, or hands groups to preparation worker
processes (``runtime.process``) and collects what they send back in order, preparing a group
here whenever no worker is ready or one ended.

The sizes of the pieces (:class:`Sizes`) are the encoder's choice for its device; the
planner takes them as given. It never imports ``encode.encoder``.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from landmark_rag.encode.batching import BatchArrays, coalesce, plan_batches
from landmark_rag.encode.layout import Layout
from landmark_rag.encode.prepare import measure_documents
from landmark_rag.encode.runtime import process as prepare_process
from landmark_rag.encode.runtime.scheduler import Document, GroupPlan, tensors
from landmark_rag.segment import Segmenter
from landmark_rag.segment.segment import sentence_spans
from landmark_rag.segment.spans import sentences_at
from landmark_rag.segment.tokens import text_tokenizer
from landmark_rag.types import Sentence

logger = logging.getLogger(__name__)

# The sizes of a call's pieces. ``LandmarkEncoder`` hands them over as :class:`Sizes`, read
# from its own module (where a benchmark can set others) when a call starts.
#: Tokens per group of documents encoded together; bounds memory in encode_documents. Not
#: the write path's ``ingest.write.GROUP_TOKENS``: that smaller bound is what one call of
#: the encoder gets, for fine-grained progress and interruption.
GROUP_TOKENS = 1 << 17
#: Characters of documents a preparation worker makes into one group on a CPU: at most about
#: 32k tokens (a batch never spans groups), fewer when a call would otherwise give some workers
#: nothing or one worker the last long task, never under about 8k tokens (a group's own costs).
TASK_CHARS = 1 << 17
#: The same bound on CUDA: about 128k tokens. There the thread that launches the
#: forward passes sets the pace, and it spends about as much on a small group (planning,
#: launching, scattering its vectors) as on a large one; on an H100 groups of 262k-524k
#: characters indexed 2.9 M tokens/s against 2.6 M for 131k (benchmarks.md).
CUDA_TASK_CHARS = 1 << 19
MIN_TASK_CHARS = 1 << 15
#: Groups a call is cut into per worker, at least, where the bound on a group's size allows.
TASKS_PER_WORKER = 3
#: Characters (and documents) whose sentences are tokenised in one tokenizer call.
PREPARE_CHARS = 1 << 18
PREPARE_DOCS = 256
#: Groups in flight per preparation worker beyond the one awaited (bounds what is held).
PREPARE_AHEAD = 2

#: A document as ``encode_documents`` is given it: text, id, its own sentences (or ``None``).
Input = tuple[str, str | None, Sequence[Sentence] | None]

#: A group as a preparation worker hands it back: its documents, then what
#: ``runtime.process.TASK`` returns for them (each one's sentence spans and token count, the
#: group's laid-out tokens, its padded batches).
Prepared = tuple[list[Input], list[tuple[np.ndarray, int]], int, list[BatchArrays]]

#: Moves groups workers have already prepared from the pending queue onto the ready list,
#: within a number of padded tokens (:func:`take_ready`).
TakeReady = Callable[[list[Prepared], deque[tuple[list[Input], Future[Any] | None]], int], None]


@dataclass(frozen=True)
class Sizes:
    """How large the pieces of a call are: the encoder's choice for its device (the defaults,
    and why each is what it is: :data:`GROUP_TOKENS` and the constants after it). The
    planner only follows them."""

    #: tokens a group prepared here holds (at least, and ``batch_tokens`` where that is more)
    group_tokens: int
    #: the most characters a preparation worker makes into one group on this device
    #: (:data:`TASK_CHARS` on a CPU, :data:`CUDA_TASK_CHARS` where batches are launched without waiting)
    task_chars: int
    #: the fewest, however many workers share a call (a group's own costs)
    min_task_chars: int
    #: groups a call is cut into per worker, at least, where ``task_chars`` allows
    tasks_per_worker: int


class PreparedDocuments(NamedTuple):
    """Documents made ready for the device by :meth:`LandmarkEncoder.prepare_documents`:
    their sentences and padded batches (pinned on CUDA). Hand it to
    :meth:`LandmarkEncoder.encode_prepared` of the same encoder; its contents are internal."""

    groups: list[GroupPlan]

    @property
    def documents(self) -> int:
        return sum(len(g.docs) for g in self.groups)

    @property
    def tokens(self) -> int:
        """Text tokens of all documents, as tokenised (``EncodedDocument.tokens`` summed)."""
        return sum(g.tokens for g in self.groups)


def document_inputs(
    texts: Sequence[str],
    doc_ids: Sequence[str | None] | None,
    sentences: Sequence[Sequence[Sentence] | None] | None,
    caller: str,
) -> list[Input]:
    """The (text, doc_id, given sentences) triples of a documents call, lengths checked."""
    if isinstance(texts, str):
        raise TypeError(f"{caller} takes a list of texts; use encode_document for one")
    n = len(texts)
    ids = list(doc_ids) if doc_ids is not None else [None] * n
    given = list(sentences) if sentences is not None else [None] * n
    if len(ids) != n or len(given) != n:
        raise ValueError("texts, doc_ids and sentences must have the same length")
    return list(zip(texts, ids, given, strict=True))


def take_ready(
    ready: list[Prepared], pending: deque[tuple[list[Input], Future[Any] | None]], batch_tokens: int
) -> None:
    """Move onto ``ready`` the groups at the head of ``pending`` that workers have already
    prepared, while all of them together stay within ``batch_tokens`` padded tokens.

    Only groups already done are taken, so nothing waits for them: when the device side is the
    slower one, groups pile up prepared and are launched as one pass; when the workers are,
    each group goes alone as soon as it is ready."""
    size = sum(_padded(b) for _, _, _, batches in ready for b in batches)
    while pending:
        chunk, future = pending[0]
        if future is None or not future.done() or future.cancelled() or future.exception() is not None:
            return
        docs, laid, batches = future.result()
        size += sum(_padded(b) for b in batches)
        if size > batch_tokens:
            return
        pending.popleft()
        ready.append((chunk, docs, laid, batches))


def _padded(batch: BatchArrays) -> int:
    return int(batch.ids.shape[0] * batch.ids.shape[1])


def chunks(docs: Iterable[Input], max_chars: int | None = None) -> Iterator[list[Input]]:
    """Consecutive documents, ``max_chars`` (default :data:`PREPARE_CHARS`) characters or
    :data:`PREPARE_DOCS` documents at a time: what one tokenizer call (or one worker's
    group) takes."""
    limit = PREPARE_CHARS if max_chars is None else max_chars
    chunk: list[Input] = []
    count = 0
    for doc in docs:
        chunk.append(doc)
        count += len(doc[0]) if isinstance(doc[0], str) else 0
        if count >= limit or len(chunk) >= PREPARE_DOCS:
            yield chunk
            chunk, count = [], 0
    if chunk:
        yield chunk


def chars(inputs: list[Input]) -> int:
    """Characters of a call's texts (what is not a str counts none: its error comes later)."""
    return sum(len(t) for t, _, _ in inputs if isinstance(t, str))


def groups(docs: Iterable[Document], group_tokens: int) -> Iterator[tuple[list[Document], int]]:
    """Consecutive documents in groups of about ``group_tokens`` tokens, with each group's
    token count (memory stays bounded however many or however long the documents are)."""
    group: list[Document] = []
    tokens = 0
    for doc in docs:
        group.append(doc)
        tokens += sum(len(t) for t in doc.toks)
        if tokens >= group_tokens:
            yield group, tokens
            group, tokens = [], 0
    if group:
        yield group, tokens


class GroupPlanner:
    """Makes a call's documents into :class:`~landmark_rag.encode.runtime.scheduler.GroupPlan` s,
    in order: prepared here, or by preparation workers where the caller has any.

    ``pin``: batches copied into pinned memory (a CUDA device's copies then do not block);
    ``join``: groups workers have already prepared are joined into one pass up to
    ``batch_tokens`` (where the device side launches without waiting, so fewer, larger passes
    pay); ``take_ready``: how they are gathered (:func:`take_ready`; one that gathers none sends
    each group alone, which is what ``benchmarks/gpu_throughput.py --separate-groups`` compares)."""

    def __init__(
        self, layout: Layout, tokenizer: Any, sizes: Sizes, *, pin: bool, join: bool,
        take_ready: TakeReady = take_ready,
    ) -> None:
        self.layout = layout
        self.tokenizer = tokenizer
        self.sizes = sizes
        self.pin = pin
        self.join = join
        self.take_ready = take_ready

    def planned(
        self, inputs: list[Input], batch_size: int, batch_tokens: int | None, segmenter: Segmenter | None,
        workers: list[prepare_process.PreparationWorker],
    ) -> Iterator[GroupPlan]:
        """``inputs`` prepared, grouped by tokens and packed into batches, group by group: by
        ``workers`` where there are any, else here."""
        if workers:
            yield from self._pooled(inputs, workers, batch_size, batch_tokens)
            return
        docs = self._prepare_all(inputs, segmenter)
        group_tokens = max(self.sizes.group_tokens, batch_tokens or 0)
        for group, tokens in groups(docs, group_tokens):
            yield self._plan_group(group, tokens, batch_size, batch_tokens)

    def _prepare_all(self, docs: Iterable[Input], segmenter: Segmenter | None) -> Iterator[Document]:
        """Documents ready to lay out, in order, their sentences tokenised a chunk of documents
        at a time (one tokenizer call for many short documents)."""
        for chunk in chunks(docs):
            yield from self.prepare(chunk, segmenter)

    def _pooled(
        self, inputs: list[Input], workers: list[prepare_process.PreparationWorker], batch_size: int,
        batch_tokens: int | None,
    ) -> Iterator[GroupPlan]:
        """Groups of up to ``task_chars`` characters, each prepared by a worker up to
        :data:`PREPARE_AHEAD` groups a worker ahead of the one awaited, and here when no worker
        is ready, a text is not a str (its error is raised here, when its group is due), or the
        worker ended first (logged once). In order, whichever worker finishes first."""
        tt = text_tokenizer(self.tokenizer)
        layout = self.layout.portable()
        pending: deque[tuple[list[Input], Future[Any] | None]] = deque()
        warned = False

        def receive() -> list[GroupPlan]:
            nonlocal warned
            chunk, future = pending.popleft()
            if future is not None:
                try:
                    ready = [(chunk, *future.result())]
                except prepare_process.WorkerGone as exc:  # nothing lost: this group is prepared here
                    if not warned:
                        logger.warning("%s; preparing its documents here", exc)
                        warned = True
                else:
                    if self.join and batch_tokens:
                        self.take_ready(ready, pending, batch_tokens)
                    return [self._plan_from_ready(ready, batch_tokens)]
            docs = self.prepare(chunk, None)
            return [self._plan_group(g, t, batch_size, batch_tokens) for g, t in groups(docs, self.sizes.group_tokens)]

        def submit(chunk: list[Input]) -> Future[Any] | None:
            """``chunk`` handed to the least busy worker that is ready (``None``: prepared here)."""
            if not all(isinstance(text, str) for text, _, _ in chunk):
                return None
            ready = [(w.pending, i, w, key) for i, w in enumerate(workers) if (key := w.tokenizer_key(tt))]
            if not ready:
                return None
            _, _, worker, key = min(ready, key=lambda r: (r[0], r[1]))
            # a subclass of str (the caller's own) would not unpickle there
            texts = [text if type(text) is str else str.__str__(text) for text, _, _ in chunk]
            return worker.submit(prepare_process.TASK, key, texts, layout, batch_size, batch_tokens)

        per_task = chars(inputs) // (self.sizes.tasks_per_worker * len(workers))
        pieces = chunks(inputs, min(self.sizes.task_chars, max(self.sizes.min_task_chars, per_task)))

        def top_up() -> None:
            # a chunk prepared here is prepared when its turn comes, not queued behind others:
            # the chunks after it then look again for a worker that has come up meanwhile
            while len(pending) <= PREPARE_AHEAD * len(workers) and not (pending and pending[-1][1] is None):
                chunk = next(pieces, None)
                if chunk is None:
                    return
                pending.append((chunk, submit(chunk)))

        top_up()
        while pending:
            plans = receive()
            top_up()  # before the group goes on: the workers keep their share while it runs
            yield from plans

    def _plan_from_ready(self, ready: list[Prepared], batch_tokens: int | None) -> GroupPlan:
        """One group from the consecutive groups workers prepared (:func:`take_ready`), their
        batches joined up to ``batch_tokens`` (``batching.coalesce``): fewer, larger passes."""
        if len(ready) == 1 or not batch_tokens:
            return self._plan_from_arrays(*ready[0])
        batches = coalesce([(b, len(chunk)) for chunk, _, _, b in ready], batch_tokens, self.layout.pad_id)
        chunk = [doc for c, _, _, _ in ready for doc in c]
        docs = [doc for _, d, _, _ in ready for doc in d]
        return self._plan_from_arrays(chunk, docs, sum(laid for _, _, laid, _ in ready), batches)

    def _plan_from_arrays(
        self, chunk: list[Input], docs: list[tuple[np.ndarray, int]], laid: int, batches: list[BatchArrays]
    ) -> GroupPlan:
        """A group a worker prepared: its sentences rebuilt from their spans, its batches as tensors."""
        out = [
            Document(text, doc_id, sentences_at(text, spans.tolist(), doc_id), [], tokens)
            for (text, doc_id, _), (spans, tokens) in zip(chunk, docs, strict=True)
        ]
        return GroupPlan(out, laid, [tensors(b, self.pin) for b in batches])

    def prepare(self, chunk: list[Input], segmenter: Segmenter | None) -> list[Document]:
        """Documents' sentences (given, or segmented here) and their token ids.

        Segmentation measures each sentence as the layout tokenises it (``encode.prepare``),
        so that one tokenisation gives both the cut decision and the layout's ids; only the
        pieces of a cut sentence are tokenised again."""
        sentence_lists: list[list[Sentence]] = []
        for text, doc_id, sentences in chunk:
            if not isinstance(text, str):
                raise TypeError(f"document texts must be str, got {type(text).__name__}")
            if sentences is not None:
                sents = [s if s.doc_id == doc_id else s.with_doc_id(doc_id) for s in sentences]
            else:
                sents = sentence_spans(text, segmenter, doc_id)
            _check_sentences(text, sents)
            sentence_lists.append(sents)
        layout = self.layout
        measured = measure_documents(
            [text for text, _, _ in chunk], sentence_lists, self.tokenizer, layout.max_sentence_tokens, layout.causal,
            cut=[given is None for _, _, given in chunk], doc_ids=[doc_id for _, doc_id, _ in chunk],
        )
        return [
            Document(text, doc_id, sents, layout.cap_ids(ids), sum(len(x) for x in ids))
            for (text, doc_id, _), (sents, ids) in zip(chunk, measured, strict=True)
        ]

    def _plan_group(self, group: list[Document], tokens: int, batch_size: int, batch_tokens: int | None) -> GroupPlan:
        """A group's windows, sorted by length, cut into batches and padded (the host work;
        ``batching.plan_batches``, which preparation workers run too)."""
        batches = plan_batches(self.layout, [doc.toks for doc in group], batch_size, batch_tokens)
        return GroupPlan(group, tokens, [tensors(b, self.pin) for b in batches])


def _check_sentences(text: str, sentences: Iterable[Sentence]) -> None:
    for s in sentences:
        if not (0 <= s.start <= s.end <= len(text)):
            raise ValueError(f"sentence {s.index} span ({s.start}, {s.end}) lies outside the document")
