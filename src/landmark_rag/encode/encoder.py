"""``LandmarkEncoder``: one encoder pass per document, one vector per sentence (step 2)."""

from __future__ import annotations

import logging
import os
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch
from tqdm.auto import tqdm

from landmark_rag.encode.batching import BatchArrays, batch_jobs, coalesce, pack_arrays, plan_batches
from landmark_rag.encode.config import LandmarkConfig, Pooling
from landmark_rag.encode.layout import Job, Layout, token_id
from landmark_rag.encode.models.fingerprint import weights_fingerprint
from landmark_rag.encode.models.loading import load_pretrained
from landmark_rag.encode.pooling import last_hidden, pool_gathered
from landmark_rag.encode.prepare import measure_documents
from landmark_rag.encode.runtime import process as prepare_process
from landmark_rag.encode.runtime.describe import RuntimeInfo
from landmark_rag.encode.runtime.describe import describe as describe_runtime
from landmark_rag.encode.runtime.malloc import pin_mmap_threshold
from landmark_rag.encode.runtime.padding import broadcast_padding_dtype, mask_optional
from landmark_rag.encode.runtime.parallel import auto_workers, run_batches
from landmark_rag.encode.runtime.precision import autocast
from landmark_rag.encode.runtime.prefetch import Prefetch
from landmark_rag.encode.untrained import warn_untrained_landmark
from landmark_rag.progress import bar_options
from landmark_rag.segment import Segmenter, segment_sentences
from landmark_rag.segment.segment import sentence_spans
from landmark_rag.segment.spans import sentences_at
from landmark_rag.segment.tokens import text_tokenizer
from landmark_rag.types import EncodedDocument, Sentence

logger = logging.getLogger(__name__)

#: Tokens per group of documents encoded together; bounds memory in encode_documents. Not
#: the write path's ``ingest.write.GROUP_TOKENS``: that smaller bound is what one call here
#: gets, for fine-grained progress and interruption.
_GROUP_TOKENS = 1 << 17
#: Characters (and documents) whose sentences are tokenised in one tokenizer call.
_PREPARE_CHARS = 1 << 18
_PREPARE_DOCS = 256
#: Characters of documents a preparation worker makes into one group on a CPU: at most about
#: 32k tokens (a batch never spans groups), fewer when a call would otherwise give some workers
#: nothing or one worker the last long task, never under about 8k tokens (a group's own costs).
_TASK_CHARS = 1 << 17
#: The same bound on CUDA: about 128k tokens. There the thread that launches the
#: forward passes sets the pace, and it spends about as much on a small group (planning,
#: launching, scattering its vectors) as on a large one; on an H100 groups of 262k-524k
#: characters indexed 2.9 M tokens/s against 2.6 M for 131k (benchmarks.md).
_CUDA_TASK_CHARS = 1 << 19
_MIN_TASK_CHARS = 1 << 15
#: Groups a call is cut into per worker, at least, where the bound on a group's size allows.
_TASKS_PER_WORKER = 3
#: Groups in flight per preparation worker beyond the one awaited (bounds what is held).
_PREPARE_AHEAD = 2


class _FromLayout:
    """A read-only encoder attribute: the field of the same name of ``encoder.layout``."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, encoder: Any, owner: type | None = None) -> Any:
        return self if encoder is None else getattr(encoder.layout, self.name)


class LandmarkEncoder:
    """Encodes documents into context-aware sentence vectors and queries into the same space.

    Build it with :meth:`from_pretrained`. ``encode_document`` segments a document, places
    the landmark after every sentence, runs the encoder over the whole landmarked text
    (sliding windows when it is longer than the model's context) and pools one vector per
    sentence, so each vector carries the sentence's surroundings.

    Its inputs are laid out by :attr:`layout` (``encode.layout``, the object training uses
    too); ``causal``, ``lmk_id``, ``max_length``, ``budget`` and the other layout fields read
    through to it.
    """

    causal = _FromLayout()
    lmk_id = _FromLayout()
    pad_id = _FromLayout()
    max_length = _FromLayout()
    budget = _FromLayout()
    overlap = _FromLayout()
    max_sentence_tokens = _FromLayout()
    prefix_ids = _FromLayout()
    suffix_ids = _FromLayout()

    def __init__(self, model: Any, tokenizer: Any, config: LandmarkConfig, *, device: torch.device) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.config = config
        self.device = device
        if getattr(model.config, "use_cache", False):
            # an encoder pass never generates: a decoder's key/value cache would only hold memory
            model.config.use_cache = False
        self.layout = Layout.build(tokenizer, config, model.config)
        # the config states what the layout decided, so a saved config reloads the same way
        config.causal, config.lmk_token = self.layout.causal, self.layout.lmk_token
        #: the files the weights were loaded from (set by from_pretrained; the ONNX query
        #: export, ``encode.export.onnx_query``, re-checks their fingerprint before it is trusted)
        self.weight_locations: list[str] = []
        #: a ``torch.compile``d model for document windows (:meth:`compile`), else ``None``
        self.document_model: Any = None
        #: dtype document windows run in under CPU autocast (``encode.runtime.precision``): bf16 when
        #: from_pretrained chose it for a CPU with native bf16, else ``None`` (as loaded)
        self.document_autocast: torch.dtype | None = None
        #: batches encoded concurrently on CPU (``encode.runtime.parallel``); ``None``: automatic
        self.workers: int | None = None
        #: whether a large ``encode_documents`` call prepares its documents (segments,
        #: tokenises, lays out, pads) in worker processes (``encode.runtime.process``); ``None``:
        #: as ``LANDMARK_RAG_PREPARE_PROCESS`` says, and on an accelerator with cores to spare
        #: when it says nothing
        self.prepare_process: bool | None = None
        #: how many such workers; ``None``: ``LANDMARK_RAG_PREPARE_WORKERS``, else automatic
        #: (``encode.runtime.process.pool_size``)
        self.prepare_workers: int | None = None
        pin_mmap_threshold()  # long documents: flat memory instead of glibc's creep (runtime/malloc.py)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_pretrained(
        cls,
        model: str | os.PathLike[str] | None = None,
        *,
        device: str | torch.device | None = None,
        dtype: str | torch.dtype | None = None,
        trust_remote_code: bool = False,
        attn_implementation: str | None = None,
        quantize: str | None = None,
        compile: bool = False,
        **config_overrides: Any,
    ) -> LandmarkEncoder:
        """Load an encoder.

        ``model``: a local model directory (optionally with ``landmark_config.json``), a
        ``.gguf`` file, an alias of a pip-packaged model (``all-MiniLM-L6-v2``,
        ``SmolLM2-135M-Instruct``), or a hub name (needs a reachable hub). ``None`` loads the
        package's default model. Keyword arguments override fields of
        :class:`LandmarkConfig` (e.g. ``pooling="mean"``). ``quantize="int8"`` (CPU only, opt-in)
        runs the linear layers as int8 (``encode/runtime/quantize.py``): faster, vectors slightly off.
        ``compile=True`` (opt-in) runs document windows through ``torch.compile`` (:meth:`compile`).
        """
        loaded = load_pretrained(
            model, device=device, dtype=dtype, trust_remote_code=trust_remote_code,
            attn_implementation=attn_implementation, quantize=quantize, overrides=config_overrides,
        )
        if loaded.untrained_landmark:
            warn_untrained_landmark(str(loaded.config.model_name))
        encoder = cls(loaded.model, loaded.tokenizer, loaded.config, device=loaded.device)
        encoder.weight_locations = loaded.weight_locations
        encoder.document_autocast = loaded.document_autocast
        if encoder.config.lmk_is_new and encoder.lmk_id == encoder.tokenizer.unk_token_id:
            # a new landmark token its tokenizer was saved without: add it again; the weights
            # still are the files', so the fingerprint stands
            if encoder.config.lmk_token is None:
                raise ValueError("landmark_config.json sets lmk_is_new but names no lmk_token to add")
            fingerprint = encoder.config.weights_fingerprint
            encoder.add_landmark_token(encoder.config.lmk_token)
            encoder.config.weights_fingerprint = fingerprint
        if compile:
            encoder.compile()
        return encoder

    def with_config(self, config: LandmarkConfig) -> LandmarkEncoder:
        """Another encoder over the same loaded weights with ``config`` (e.g. other pooling or
        windows). What loading decided carries over - the weight files (for the ONNX export's
        check) and the document precision - so a sibling never silently differs from its
        source; per-run settings (``workers``, a compiled model) do not."""
        other = type(self)(self.model, self.tokenizer, config, device=self.device)
        other.weight_locations = list(self.weight_locations)
        other.document_autocast = self.document_autocast
        return other

    def compile(self, **options: Any) -> LandmarkEncoder:
        """Run document windows through ``torch.compile(model, dynamic=True, **options)``; returns self.

        Why opt-in: compiled windows encode faster with the same vectors (to float rounding),
        but compiling costs many seconds the first time a process encodes, which only a long
        indexing run repays (docs/benchmarks.md, "Indexing throughput"). Queries stay on the
        eager model: they are short, of every length, and would mostly wait on recompiles.
        """
        self.document_model = torch.compile(self.model, dynamic=True, **options)
        return self

    def to(self, device: str | torch.device) -> LandmarkEncoder:
        """Move the model to ``device`` (the encoder then runs its inputs there); returns self."""
        self.device = torch.device(device)
        self.model.to(self.device)
        return self

    def add_landmark_token(self, token: str = "[LMK]", init_from: str | None = None) -> None:
        """Add ``token`` as a new special token, initialised from ``init_from``'s embedding.

        The embedding matrix is resized; ``save_pretrained`` saves both. ``init_from``
        defaults to the current landmark token ([SEP] or EOS), which gives training a
        sensible starting point.
        """
        init_id = token_id(self.tokenizer, init_from) if init_from else self.lmk_id
        if token not in self.tokenizer.get_vocab():
            self.tokenizer.add_special_tokens({"additional_special_tokens": [token]})
            new_id = self.tokenizer.convert_tokens_to_ids(token)
            # the new row is overwritten below, so skip transformers' mean/covariance init
            self.model.resize_token_embeddings(len(self.tokenizer), mean_resizing=False)
            emb = self.model.get_input_embeddings().weight
            with torch.no_grad():
                emb[new_id] = emb[init_id]
        self.config.lmk_token = token
        self.config.lmk_is_new = True
        self.config.weights_fingerprint = None  # the weights in memory no longer match any file
        self.layout = Layout.build(self.tokenizer, self.config, self.model.config)

    def save_pretrained(self, directory: str | os.PathLike[str]) -> None:
        """Write model (safetensors), tokenizer and ``landmark_config.json``."""
        Path(directory).mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(directory, safe_serialization=True)
        self.tokenizer.save_pretrained(directory)
        replace(self.config, base_model=None).save(directory)
        # these weights are now the files in ``directory``: the fingerprint a reload will compute
        self.config.weights_fingerprint = weights_fingerprint([directory])

    # ------------------------------------------------------------------ properties
    @property
    def dim(self) -> int:
        return int(self.model.config.hidden_size)

    @property
    def model_name(self) -> str:
        return str(self.config.model_name)

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` without special tokens (for budgets and statistics)."""
        # the backend directly (``segment.tokens``): no transformers per-call overhead, no "longer
        # than 512" warning (a count is not a model input), and a sentence already tokenised is
        # read from the cache
        return len(text_tokenizer(self.tokenizer).ids([text])[0])

    # ------------------------------------------------------------------ segmentation
    def segment(self, text: str, doc_id: str | None = None, segmenter: Segmenter | None = None) -> list[Sentence]:
        """Sentences as this encoder sees them: long sentences cut to fit a window.

        Each sentence is measured as the layout tokenises it (with the whitespace before it
        for a causal model), and its ids are kept (``segment.tokens``): encoding these same
        sentences later, e.g. a framework's sentence nodes, does not tokenise them again."""
        return segment_sentences(
            text, segmenter=segmenter, doc_id=doc_id, max_tokens=self.max_sentence_tokens, tokenizer=self.tokenizer,
            space_before=self.causal,
        )

    # ------------------------------------------------------------------ documents
    def encode_document(
        self,
        text: str,
        doc_id: str | None = None,
        *,
        sentences: Sequence[Sentence] | None = None,
        segmenter: Segmenter | None = None,
    ) -> EncodedDocument:
        """Encode one document; see :meth:`encode_documents`."""
        return self.encode_documents(
            [text], doc_ids=[doc_id], sentences=None if sentences is None else [sentences], segmenter=segmenter
        )[0]

    def encode_documents(
        self,
        texts: Sequence[str],
        doc_ids: Sequence[str | None] | None = None,
        *,
        batch_size: int = 16,
        show_progress: bool | None = False,
        sentences: Sequence[Sequence[Sentence] | None] | None = None,
        segmenter: Segmenter | None = None,
        batch_tokens: int | None = None,
    ) -> list[EncodedDocument]:
        """Encode many documents; windows of all of them are batched together.

        ``sentences`` (per document, optional) supplies ready-made sentences, e.g. nodes
        of a framework that already split the text; they are used as they are, one vector
        each. ``batch_size`` counts encoder windows; ``batch_tokens`` (optional, replaces
        ``batch_size``) caps a batch by padded tokens instead (windows x width), which keeps a
        GPU's memory per batch even when window lengths vary, e.g. a 7B model's 4096-token
        windows next to short documents' windows (a batch never has fewer than one window).
        Empty or whitespace-only documents give empty results. Documents are processed in
        groups of a bounded number of tokens so memory stays bounded however many or however
        long the documents are; while one group runs, the next is segmented, tokenised, laid
        out and padded on a producer thread. On a CUDA device ``batch_tokens`` defaults to
        :meth:`auto_batch_tokens` (from free device memory). ``show_progress=None`` shows the
        bar only once the call has run a few seconds (``landmark_rag.progress``).
        """
        inputs = _inputs(texts, doc_ids, sentences, "encode_documents")
        n = len(inputs)
        if batch_tokens is None and self.device.type == "cuda":
            batch_tokens = self.auto_batch_tokens()
        results: list[EncodedDocument] = []
        bar = tqdm(total=n, desc="encoding", unit="doc", **bar_options(show_progress))
        t0, tokens_done = time.perf_counter(), 0
        several, pool = _several_groups(inputs, batch_tokens), self._pool_size(inputs, segmenter)
        # group n + 1 is segmented, tokenised, planned and padded on a producer thread (or in
        # worker processes, ``runtime.process``, whose groups it collects) while group n runs
        # on the device (``Prefetch``: order kept, errors raised where they occur)
        planned = self._planned_groups(inputs, batch_size, batch_tokens, segmenter, pool=pool)
        with Prefetch(planned, depth=1, thread=several or pool > 0) as groups:
            for done in self._encode_groups(groups):
                results.extend(done)
                tokens_done += sum(d.tokens or 0 for d in done)
                # postfix first without a redraw: the update draws it, and only once the bar is due
                bar.set_postfix(tokens_per_s=f"{tokens_done / max(time.perf_counter() - t0, 1e-9):,.0f}", refresh=False)
                bar.update(len(done))
        bar.close()
        return results

    def prepare_documents(
        self,
        texts: Sequence[str],
        doc_ids: Sequence[str | None] | None = None,
        *,
        batch_size: int = 16,
        sentences: Sequence[Sequence[Sentence] | None] | None = None,
        segmenter: Segmenter | None = None,
        batch_tokens: int | None = None,
    ) -> PreparedDocuments:
        """The host half of :meth:`encode_documents`: segment, tokenise (once per text), lay out
        the windows and pad the batches, without touching the model's forward.

        Why it is separate: a caller that encodes documents in many small calls (the write
        path, one call per write group) prepares call n + 1 on another thread while
        :meth:`encode_prepared` runs call n on the device, so the device never waits for the
        tokenizer. ``encode_prepared(prepare_documents(...))`` equals ``encode_documents(...)``
        with the same arguments. Errors of the input (not a str, a sentence outside its
        text) are raised here. Every batch of the call is held until it is encoded (pinned
        memory on CUDA): prepare a stream a bounded slice at a time, as the write path does
        (about 16k tokens a call); ``encode_documents`` bounds its memory by itself.
        """
        inputs = _inputs(texts, doc_ids, sentences, "prepare_documents")
        if batch_tokens is None and self.device.type == "cuda":
            batch_tokens = self.auto_batch_tokens()
        pool = self._pool_size(inputs, segmenter)
        return PreparedDocuments(list(self._planned_groups(inputs, batch_size, batch_tokens, segmenter, pool=pool)))

    def encode_prepared(self, prepared: PreparedDocuments) -> list[EncodedDocument]:
        """The device half of :meth:`encode_documents`: forward, pool, normalise and copy back
        the batches :meth:`prepare_documents` made, one result per document, in order."""
        results: list[EncodedDocument] = []
        for done in self._encode_groups(prepared.groups):
            results.extend(done)
        return results

    def _planned_groups(
        self,
        inputs: list[_Input],
        batch_size: int,
        batch_tokens: int | None,
        segmenter: Segmenter | None,
        *,
        pool: int,
    ) -> Iterator[_GroupPlan]:
        """``inputs`` prepared, grouped by tokens and packed into batches, group by group: in
        ``pool`` worker processes (``encode.runtime.process``; :meth:`_pool_size`) where there
        are any, else here."""
        workers = prepare_process.shared_workers(pool) if pool else []
        if workers:
            yield from self._pooled_groups(inputs, workers, batch_size, batch_tokens)
            return
        docs = self._prepare_all(inputs, segmenter)
        group_tokens = max(_GROUP_TOKENS, batch_tokens or 0)
        for group, tokens in _groups(docs, group_tokens):
            yield self._plan_group(group, tokens, batch_size, batch_tokens)

    def _pool_size(self, inputs: list[_Input], segmenter: Segmenter | None) -> int:
        """How many preparation workers a call goes to (0: none): a call large enough to share
        among them, of documents the default segmenter splits, where workers are wanted at all."""
        if segmenter is not None or any(given is not None for _, _, given in inputs) or not _several_tasks(inputs):
            return 0
        return prepare_process.pool_size(self.prepare_process, self.prepare_workers, self.device.type != "cpu")

    def auto_batch_tokens(self) -> int:
        """Padded tokens per batch on a CUDA device when the caller gives no ``batch_tokens``.

        The rule: a quarter of the device's free memory, divided by an upper estimate of
        what one token of a window holds at once in a forward pass (fp32-sized: 12 hidden
        vectors, 2 feed-forward intermediates, and one row of attention scores per head for
        a model without memory-efficient attention), between one window and ``1 << 18``
        tokens (beyond that a batch gets no faster per token). A batch that still runs out of
        memory is retried in halves."""
        cfg = self.model.config
        hidden = int(getattr(cfg, "hidden_size", 1024))
        inter = int(getattr(cfg, "intermediate_size", None) or 4 * hidden)
        heads = int(getattr(cfg, "num_attention_heads", 16))
        per_token = 4 * (12 * hidden + 2 * inter + heads * self.max_length)
        free, _total = torch.cuda.mem_get_info(self.device)
        # blocks torch's allocator holds but no tensor uses are free for a batch too
        free += torch.cuda.memory_reserved(self.device) - torch.cuda.memory_allocated(self.device)
        return int(min(max(free // 4 // per_token, self.max_length), 1 << 18))

    def _prepare_all(
        self, docs: Iterable[tuple[str, str | None, Sequence[Sentence] | None]], segmenter: Segmenter | None
    ) -> Iterator[_Document]:
        """Documents ready to lay out, in order, their sentences tokenised a chunk of documents
        at a time (one tokenizer call for many short documents)."""
        for chunk in _chunks(docs):
            yield from self._prepare(chunk, segmenter)

    def _pooled_groups(
        self, inputs: list[_Input], workers: list[prepare_process.PreparationWorker], batch_size: int,
        batch_tokens: int | None,
    ) -> Iterator[_GroupPlan]:
        """Groups of up to :attr:`_task_chars` characters, each prepared by a worker up to
        :data:`_PREPARE_AHEAD` groups a worker ahead of the one awaited, and here when no worker
        is ready, a text is not a str (its error is raised here, when its group is due), or the
        worker ended first (logged once). In order, whichever worker finishes first."""
        tt = text_tokenizer(self.tokenizer)
        layout = self.layout.portable()
        pending: deque[tuple[list[_Input], Future[Any] | None]] = deque()
        warned = False

        def receive() -> list[_GroupPlan]:
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
                    if self._deferred and batch_tokens:
                        _take_ready(ready, pending, batch_tokens)
                    return [self._plan_from_ready(ready, batch_tokens)]
            docs = self._prepare(chunk, None)
            return [self._plan_group(g, t, batch_size, batch_tokens) for g, t in _groups(docs, _GROUP_TOKENS)]

        def submit(chunk: list[_Input]) -> Future[Any] | None:
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

        per_task = _chars(inputs) // (_TASKS_PER_WORKER * len(workers))
        chunks = _chunks(inputs, min(self._task_chars, max(_MIN_TASK_CHARS, per_task)))

        def top_up() -> None:
            # a chunk prepared here is prepared when its turn comes, not queued behind others:
            # the chunks after it then look again for a worker that has come up meanwhile
            while len(pending) <= _PREPARE_AHEAD * len(workers) and not (pending and pending[-1][1] is None):
                chunk = next(chunks, None)
                if chunk is None:
                    return
                pending.append((chunk, submit(chunk)))

        top_up()
        while pending:
            plans = receive()
            top_up()  # before the group goes on: the workers keep their share while it runs
            yield from plans

    def _plan_from_ready(self, ready: list[_Prepared], batch_tokens: int | None) -> _GroupPlan:
        """One group from the consecutive groups workers prepared (:func:`_take_ready`), their
        batches joined up to ``batch_tokens`` (``batching.coalesce``): fewer, larger passes."""
        if len(ready) == 1 or not batch_tokens:
            return self._plan_from_arrays(*ready[0])
        batches = coalesce([(b, len(chunk)) for chunk, _, _, b in ready], batch_tokens, self.pad_id)
        chunk = [doc for c, _, _, _ in ready for doc in c]
        docs = [doc for _, d, _, _ in ready for doc in d]
        return self._plan_from_arrays(chunk, docs, sum(laid for _, _, laid, _ in ready), batches)

    def _plan_from_arrays(
        self, chunk: list[_Input], docs: list[tuple[np.ndarray, int]], laid: int, batches: list[BatchArrays]
    ) -> _GroupPlan:
        """A group a worker prepared: its sentences rebuilt from their spans, its batches as tensors."""
        out = [
            _Document(text, doc_id, sentences_at(text, spans.tolist(), doc_id), [], tokens)
            for (text, doc_id, _), (spans, tokens) in zip(chunk, docs, strict=True)
        ]
        pin = self.device.type == "cuda"
        return _GroupPlan(out, laid, [_tensors(b, pin) for b in batches])

    def _prepare(self, chunk: list[_Input], segmenter: Segmenter | None) -> list[_Document]:
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
        measured = measure_documents(
            [text for text, _, _ in chunk], sentence_lists, self.tokenizer, self.max_sentence_tokens, self.causal,
            cut=[given is None for _, _, given in chunk], doc_ids=[doc_id for _, doc_id, _ in chunk],
        )
        return [
            _Document(text, doc_id, sents, self.layout.cap_ids(ids), sum(len(x) for x in ids))
            for (text, doc_id, _), (sents, ids) in zip(chunk, measured, strict=True)
        ]

    def _plan_group(
        self, group: list[_Document], tokens: int, batch_size: int, batch_tokens: int | None
    ) -> _GroupPlan:
        """A group's windows, sorted by length, cut into batches and padded (the host work;
        ``batching.plan_batches``, which preparation workers run too)."""
        batches = plan_batches(self.layout, [doc.toks for doc in group], batch_size, batch_tokens)
        pin = self.device.type == "cuda"
        return _GroupPlan(group, tokens, [_tensors(b, pin) for b in batches])

    def _pack_jobs(self, jobs: list[Job], batch_size: int, batch_tokens: int | None, mean: bool) -> list[_Packed]:
        pin = self.device.type == "cuda"
        return [_pack(batch, self.pad_id, pin, mean) for batch in batch_jobs(jobs, batch_size, batch_tokens)]

    def _encode_groups(self, plans: Iterable[_GroupPlan]) -> Iterator[list[EncodedDocument]]:
        """Each group's documents, in order; on an accelerator a group is finished (its vectors
        waited for) only once the next one's batches are launched, so the device always has the
        next group's work queued while the host gathers the last group's results."""
        launched: deque[_Launched] = deque()
        for plan in plans:
            launched.append(self._launch_group(plan))
            if len(launched) > 1:
                yield self._finish_group(launched.popleft())
        while launched:
            yield self._finish_group(launched.popleft())

    def _launch_group(self, plan: _GroupPlan) -> _Launched:
        """A group's batches under way: on CPU run to the end here (batches in parallel,
        ``runtime.parallel``); on an accelerator launched without waiting for any (their
        vectors copied back into pinned memory as they are ready, ``_launch_batch``)."""
        outs = [np.zeros((len(doc.sentences), self.dim), dtype=np.float32) for doc in plan.docs]
        mode = self.layout.pooling.reduction
        if not self._deferred:
            self._run_packed(plan.batches, outs, mode, documents=True)
            return _Launched(plan, outs, [])
        in_flight = []
        for batch in plan.batches:
            launched = self._launch_batch(batch, outs, mode)
            if launched is not None:
                in_flight.append(launched)
        return _Launched(plan, outs, in_flight)

    def _finish_group(self, launched: _Launched) -> list[EncodedDocument]:
        plan, outs, in_flight = launched
        for batch, host, ready in in_flight:
            if ready is not None:
                ready.synchronize()
            _scatter(batch, host.numpy(), outs)
        return [
            EncodedDocument(text=doc.text, sentences=doc.sentences, embeddings=out, doc_id=doc.doc_id, tokens=doc.tokens)
            for doc, out in zip(plan.docs, outs, strict=True)
        ]

    @property
    def _deferred(self) -> bool:
        """Whether document batches are launched without waiting for each (an accelerator's
        queue runs them in order; a CPU runs them as they are called)."""
        return self.device.type == "cuda" or self._defer_on_cpu

    #: launch CPU batches as an accelerator's are (tests of the deferred path on a CPU)
    _defer_on_cpu = False

    @property
    def _task_chars(self) -> int:
        """The most characters a preparation worker makes into one group on this device: the
        larger bound where batches are launched without waiting (CUDA), where each group costs
        the launching thread; elsewhere the CPU's."""
        return _CUDA_TASK_CHARS if self.device.type == "cuda" else _TASK_CHARS

    def _launch_batch(
        self, batch: _Packed, outs: list[np.ndarray], mode: Pooling
    ) -> tuple[_Packed, torch.Tensor, Any] | None:
        """``batch`` launched: ``(batch, its vectors in host memory once ready, the event that
        says when)``; ``None`` when it was run to the end at once instead (out of memory, or a
        compiled model that failed: :meth:`_forward_or_recover`)."""
        vecs = self._forward_or_recover(self._forward_pool_device, batch, outs, mode, documents=True)
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

    def _run_jobs(
        self, jobs: list[Job], batch_size: int, outs: list[np.ndarray], mode: Pooling, show_progress: bool = False,
        documents: bool = False, batch_tokens: int | None = None,
    ) -> None:
        """Pool every job into ``outs`` (rows L2-normalised)."""
        packed = self._pack_jobs(jobs, batch_size, batch_tokens, mode == Pooling.MEAN)
        self._run_packed(packed, outs, mode, show_progress, documents)

    def _run_packed(
        self, batches: list[_Packed], outs: list[np.ndarray], mode: Pooling, show_progress: bool = False,
        documents: bool = False,
    ) -> None:
        bar = tqdm(total=len(batches), desc="batches", disable=not show_progress)
        workers = self.workers if self.workers is not None else auto_workers(self.device)
        if self.device.type != "cpu":
            workers = 1

        def one(batch: _Packed) -> None:
            self._run_batch(batch, outs, mode, documents)  # rows of outs are disjoint per job
            bar.update(1)

        run_batches(batches, one, workers)
        bar.close()

    def _run_batch(self, batch: _Packed, outs: list[np.ndarray], mode: Pooling, documents: bool = False) -> None:
        pooled = self._forward_or_recover(self._forward_pool, batch, outs, mode, documents)
        if pooled is not None:
            _scatter(batch, pooled, outs)

    def _forward_or_recover(
        self, forward: Any, batch: _Packed, outs: list[np.ndarray], mode: Pooling, documents: bool
    ) -> Any:
        """``forward(batch, mode, model, documents)``; ``None`` when the batch had to be run
        otherwise, its vectors then already in ``outs``: out of memory, in halves
        (:meth:`_run_halves`); a compiled model that failed, again without it."""
        model = self.document_model if documents else None
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

    def _forward_pool(self, batch: _Packed, mode: Pooling, model: Any = None, documents: bool = False) -> np.ndarray:
        """Run one padded batch, pool and L2-normalise it on the device (``encode.pooling``, the
        pooling training runs too, as one gather): one copy in each direction.

        Document windows run under :attr:`document_autocast` (bf16 on CPUs that have it,
        ``encode.runtime.precision``); queries always run as loaded."""
        return self._forward_pool_device(batch, mode, model, documents).cpu().numpy()

    def _run_halves(self, batch: _Packed, outs: list[np.ndarray], mode: Pooling, documents: bool) -> None:
        """``batch``, which ran out of device memory, run again as two halves (each halved again
        while it does not fit; a single window is tried once more, then its error raised)."""
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        jobs = batch.jobs
        if len(jobs) == 1:  # what the cache held may be all it lacked; a second failure is the answer
            _scatter(batch, self._forward_pool(batch, mode, self.document_model if documents else None, documents), outs)
            return
        half = len(jobs) // 2
        logger.warning("out of memory on a batch of %d windows; retrying in halves", len(jobs))
        pin = self.device.type == "cuda"
        mean = batch.spans is not None
        self._run_batch(_pack(jobs[:half], self.pad_id, pin, mean), outs, mode, documents)
        self._run_batch(_pack(jobs[half:], self.pad_id, pin, mean), outs, mode, documents)

    def _drop_compiled(self, exc: Exception) -> None:
        # compiling is an optimisation the user asked for, not a reason to lose the run
        logger.warning("torch.compile failed (%s: %s); encoding on without it", type(exc).__name__, exc)
        self.document_model = None

    @torch.inference_mode()
    def _forward_pool_device(
        self, batch: _Packed, mode: Pooling, model: Any = None, documents: bool = False
    ) -> torch.Tensor:
        """:meth:`_forward_pool`'s vectors, still on the device (nothing waited for)."""
        model = model if model is not None else self.model
        non_blocking = self.device.type == "cuda"
        ids = batch.ids.to(self.device, non_blocking=non_blocking)
        mask = batch.mask.to(self.device, non_blocking=non_blocking)
        index = batch.gather.to(self.device, non_blocking=non_blocking)
        spans = batch.spans.to(self.device, non_blocking=non_blocking) if batch.spans is not None else None
        # a padded batch's mask as keys only, where the model was checked to read it so
        # (``encode.runtime.padding``): the model then skips expanding it to [B, 1, W, W]; a
        # batch without padding goes without a mask, so nothing on the device is read back
        broadcast = broadcast_padding_dtype(self.model, self.layout) if batch.padded else None
        with autocast(self.device, self.document_autocast if documents else None):
            hidden = last_hidden(
                model, ids, mask, self.layout, key_padding=broadcast,
                unpadded=not batch.padded and mask_optional(self.model, self.layout),
            )
        vecs = pool_gathered(hidden, index[0], index[1], index[2], mode, spans)
        return vecs / vecs.norm(dim=-1, keepdim=True).clamp_min(1e-12)

    # ------------------------------------------------------------------ queries
    def encode_query(self, text: str) -> np.ndarray:
        """One L2-normalised float32 vector for a query (``query + LMK`` for landmark models)."""
        return self.encode_queries([text])[0]

    def encode_queries(self, texts: Sequence[str], *, batch_size: int = 64, show_progress: bool = False) -> np.ndarray:
        """Queries as a float32 ``[n, dim]`` array, L2-normalised."""
        if isinstance(texts, str):
            raise TypeError("encode_queries takes a list of texts; use encode_query for one")
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = [np.zeros((len(texts), self.dim), dtype=np.float32)]
        self._run_jobs(self.layout.query_jobs(texts), batch_size, out, self.layout.query_pooling, show_progress)
        return out[0]

    def encode_texts(
        self, texts: Sequence[str], *, batch_size: int = 16, show_progress: bool | None = False
    ) -> np.ndarray:
        """Embed standalone texts (no surrounding document), one vector per text.

        Each text is treated as its own document and its sentence vectors are averaged;
        this is what a framework gets when it asks to embed a bare string. A text with no
        sentence (empty or whitespace) gets the model's vector of the text itself, as a query
        is encoded (its special tokens), as sentence-transformers gives for ``""``: a zero
        vector would have no cosine to rank by (NaN in LlamaIndex's similarity).
        """
        texts = list(texts)
        docs = self.encode_documents(texts, batch_size=batch_size, show_progress=show_progress)
        out = np.zeros((len(docs), self.dim), dtype=np.float32)
        for i, doc in enumerate(docs):
            if len(doc):
                out[i] = doc.embeddings.mean(0)
        blank = [i for i, doc in enumerate(docs) if not len(doc)]
        if blank:
            out[blank] = self.encode_queries([texts[i] for i in blank], batch_size=batch_size)
        return _normalise(out)

    def runtime(self) -> RuntimeInfo:
        """What this encoder's defaults chose on this machine: device, weight and document
        precision, attention, tokenizer, preparation workers, batching, threads, windows
        (``encode.runtime.describe``). Encodes nothing; the place to look first when indexing is
        slower than expected."""
        return describe_runtime(self)

    def __repr__(self) -> str:
        return (
            f"LandmarkEncoder(model={self.model_name!r}, pooling={self.config.pooling.value!r}, "
            f"causal={self.causal}, max_length={self.max_length}, dim={self.dim}, device={self.device})"
        )


#: A document as ``encode_documents`` is given it: text, id, its own sentences (or ``None``).
_Input = tuple[str, str | None, Sequence[Sentence] | None]


#: A group as a preparation worker hands it back: its documents, then what
#: ``runtime.process.TASK`` returns for them (each one's sentence spans and token count, the
#: group's laid-out tokens, its padded batches).
_Prepared = tuple[list[_Input], list[tuple[np.ndarray, int]], int, list[BatchArrays]]


def _take_ready(
    ready: list[_Prepared], pending: deque[tuple[list[_Input], Future[Any] | None]], batch_tokens: int
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


def _chunks(docs: Iterable[_Input], max_chars: int | None = None) -> Iterator[list[_Input]]:
    """Consecutive documents, ``max_chars`` (default :data:`_PREPARE_CHARS`) characters or
    :data:`_PREPARE_DOCS` documents at a time: what one tokenizer call (or one worker's
    group) takes."""
    limit = _PREPARE_CHARS if max_chars is None else max_chars
    chunk: list[_Input] = []
    chars = 0
    for doc in docs:
        chunk.append(doc)
        chars += len(doc[0]) if isinstance(doc[0], str) else 0
        if chars >= limit or len(chunk) >= _PREPARE_DOCS:
            yield chunk
            chunk, chars = [], 0
    if chunk:
        yield chunk


def _chars(inputs: list[_Input]) -> int:
    return sum(len(t) for t, _, _ in inputs if isinstance(t, str))


def _several_groups(inputs: list[_Input], batch_tokens: int | None) -> bool:
    """Whether a call is larger than one group of documents (about 4 characters a token): a
    smaller one has nothing to overlap."""
    return _chars(inputs) > 4 * max(_GROUP_TOKENS, batch_tokens or 0)


def _several_tasks(inputs: list[_Input]) -> bool:
    """Whether a call has work for more than one preparation worker (a group each): a smaller
    one would wait for a process to do what this one does as fast."""
    return _chars(inputs) > 2 * min(_TASK_CHARS, _MIN_TASK_CHARS)


def _inputs(
    texts: Sequence[str],
    doc_ids: Sequence[str | None] | None,
    sentences: Sequence[Sequence[Sentence] | None] | None,
    caller: str,
) -> list[_Input]:
    """The (text, doc_id, given sentences) triples of a documents call, lengths checked."""
    if isinstance(texts, str):
        raise TypeError(f"{caller} takes a list of texts; use encode_document for one")
    n = len(texts)
    ids = list(doc_ids) if doc_ids is not None else [None] * n
    given = list(sentences) if sentences is not None else [None] * n
    if len(ids) != n or len(given) != n:
        raise ValueError("texts, doc_ids and sentences must have the same length")
    return list(zip(texts, ids, given, strict=True))


class _Document(NamedTuple):
    """A document ready to lay out: its sentences and their token ids."""

    text: str
    doc_id: str | None
    sentences: list[Sentence]
    toks: list[np.ndarray]
    tokens: int  # text tokens as tokenised, before any cap (``EncodedDocument.tokens``)


class _Packed(NamedTuple):
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


def _scatter(batch: _Packed, pooled: np.ndarray, outs: list[np.ndarray]) -> None:
    """A batch's pooled vectors into their documents' rows (rows of ``outs`` are disjoint per job)."""
    arrays = batch.arrays
    bounds = arrays.row_bounds()
    for doc, a, b in zip(arrays.docs.tolist(), bounds[:-1], bounds[1:], strict=True):
        outs[doc][arrays.sentences[a:b]] = pooled[a:b]


class _Launched(NamedTuple):
    """A group whose batches are under way: its vectors land in ``outs`` once each batch in
    flight is ready (``(batch, vectors in host memory, the event to wait for or None)``)."""

    plan: _GroupPlan
    outs: list[np.ndarray]
    in_flight: list[tuple[_Packed, torch.Tensor, Any]]


class _GroupPlan(NamedTuple):
    docs: list[_Document]
    tokens: int
    batches: list[_Packed]


class PreparedDocuments(NamedTuple):
    """Documents made ready for the device by :meth:`LandmarkEncoder.prepare_documents`:
    their sentences and padded batches (pinned on CUDA). Hand it to
    :meth:`LandmarkEncoder.encode_prepared` of the same encoder; its contents are internal."""

    groups: list[_GroupPlan]

    @property
    def documents(self) -> int:
        return sum(len(g.docs) for g in self.groups)

    @property
    def tokens(self) -> int:
        """Text tokens of all documents, as tokenised (``EncodedDocument.tokens`` summed)."""
        return sum(g.tokens for g in self.groups)


def _pack(jobs: list[Job], pad_id: int, pin: bool, mean: bool = False) -> _Packed:
    """``jobs`` padded into one batch (``batching.pack_arrays``) as tensors; ``mean``: with the
    token index mean pooling adds up (without it, pooling builds the index from the gather
    index, copied to the host and back)."""
    return _tensors(pack_arrays(jobs, pad_id, mean), pin)


def _tensors(arrays: BatchArrays, pin: bool) -> _Packed:
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
    return _Packed(arrays, ids, tensor(mask), gather, arrays.padded, spans)


def _groups(docs: Iterable[_Document], group_tokens: int = _GROUP_TOKENS) -> Iterator[tuple[list[_Document], int]]:
    """Consecutive documents in groups of about ``group_tokens`` tokens, with each group's
    token count (memory stays bounded however many or however long the documents are)."""
    group: list[_Document] = []
    tokens = 0
    for doc in docs:
        group.append(doc)
        tokens += sum(len(t) for t in doc.toks)
        if tokens >= group_tokens:
            yield group, tokens
            group, tokens = [], 0
    if group:
        yield group, tokens


def _check_sentences(text: str, sentences: Iterable[Sentence]) -> None:
    for s in sentences:
        if not (0 <= s.start <= s.end <= len(text)):
            raise ValueError(f"sentence {s.index} span ({s.start}, {s.end}) lies outside the document")


def _normalise(x: np.ndarray) -> np.ndarray:
    """L2-normalise rows in place (callers pass arrays they own: no second copy of a book)."""
    x = np.asarray(x, dtype=np.float32)
    x /= np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)
    return x
