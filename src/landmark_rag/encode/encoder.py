"""``LandmarkEncoder``: one encoder pass per document, one vector per sentence (step 2)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from landmark_rag.encode.config import LandmarkConfig, Pooling
from landmark_rag.encode.layout import FromLayout, Layout, token_id
from landmark_rag.encode.models.fingerprint import weights_fingerprint
from landmark_rag.encode.models.loading import load_pretrained
from landmark_rag.encode.pooling import last_hidden, pool_gathered
from landmark_rag.encode.runtime import planning, scheduler
from landmark_rag.encode.runtime import process as prepare_process
from landmark_rag.encode.runtime.describe import RuntimeInfo
from landmark_rag.encode.runtime.describe import describe as describe_runtime
from landmark_rag.encode.runtime.malloc import pin_mmap_threshold
from landmark_rag.encode.runtime.padding import broadcast_padding_dtype, mask_optional
from landmark_rag.encode.runtime.planning import GroupPlanner, Input, PreparedDocuments, Sizes, chars, document_inputs
from landmark_rag.encode.runtime.planning import take_ready as _take_ready
from landmark_rag.encode.runtime.precision import autocast
from landmark_rag.encode.runtime.prefetch import Prefetch
from landmark_rag.encode.runtime.scheduler import DeviceScheduler, GroupPlan, Launched, Packed
from landmark_rag.encode.runtime.scheduler import pack as _pack  # noqa: F401 - re-exported: callers pack batches by this name
from landmark_rag.encode.untrained import warn_untrained_landmark
from landmark_rag.progress import bar_options
from landmark_rag.segment import Segmenter, segment_sentences
from landmark_rag.segment.tokens import text_tokenizer
from landmark_rag.types import EncodedDocument, Sentence

# The sizes of an encode_documents call's pieces (``runtime.planning`` says what each bounds
# and why it is what it is), read from this module when a call starts: a benchmark tries
# others by setting them here.
_GROUP_TOKENS = planning.GROUP_TOKENS
_TASK_CHARS = planning.TASK_CHARS
_CUDA_TASK_CHARS = planning.CUDA_TASK_CHARS
_MIN_TASK_CHARS = planning.MIN_TASK_CHARS
_TASKS_PER_WORKER = planning.TASKS_PER_WORKER


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

    causal = FromLayout()
    lmk_id = FromLayout()
    pad_id = FromLayout()
    max_length = FromLayout()
    budget = FromLayout()
    overlap = FromLayout()
    max_sentence_tokens = FromLayout()
    prefix_ids = FromLayout()
    suffix_ids = FromLayout()

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
        inputs = document_inputs(texts, doc_ids, sentences, "encode_documents")
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
            # on an accelerator a group is finished only once the next one's batches are launched
            for done in scheduler.pipelined(groups, self._launch_group):
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
        inputs = document_inputs(texts, doc_ids, sentences, "prepare_documents")
        if batch_tokens is None and self.device.type == "cuda":
            batch_tokens = self.auto_batch_tokens()
        pool = self._pool_size(inputs, segmenter)
        return PreparedDocuments(list(self._planned_groups(inputs, batch_size, batch_tokens, segmenter, pool=pool)))

    def encode_prepared(self, prepared: PreparedDocuments) -> list[EncodedDocument]:
        """The device half of :meth:`encode_documents`: forward, pool, normalise and copy back
        the batches :meth:`prepare_documents` made, one result per document, in order."""
        return [doc for done in scheduler.pipelined(prepared.groups, self._launch_group) for doc in done]

    def _planned_groups(
        self, inputs: list[Input], batch_size: int, batch_tokens: int | None, segmenter: Segmenter | None, *, pool: int
    ) -> Iterator[GroupPlan]:
        """``inputs`` prepared, grouped by tokens and packed into batches, group by group
        (``runtime.planning``): in ``pool`` worker processes (``encode.runtime.process``;
        :meth:`_pool_size`) where there are any, else here. A generator, so that the workers are
        asked for where the groups are made: on the producer thread of ``encode_documents``."""
        workers = prepare_process.shared_workers(pool) if pool else []
        yield from self._planner().planned(inputs, batch_size, batch_tokens, segmenter, workers)

    def _pool_size(self, inputs: list[Input], segmenter: Segmenter | None) -> int:
        """How many preparation workers a call goes to (0: none): a call large enough to share
        among them, of documents the default segmenter splits, where workers are wanted at all."""
        if segmenter is not None or any(given is not None for _, _, given in inputs) or not _several_tasks(inputs):
            return 0
        return prepare_process.pool_size(self.prepare_process, self.prepare_workers, self.device.type != "cpu")

    def auto_batch_tokens(self) -> int:
        """Padded tokens per batch on a CUDA device when the caller gives no ``batch_tokens``:
        from the device's free memory and the model's size (``scheduler.auto_batch_tokens``
        has the rule). A batch that still runs out of memory is retried in halves."""
        return scheduler.auto_batch_tokens(self.model.config, self.device, self.max_length)

    # ------------------------------------------------------------------ the two sides of a call
    def _planner(self) -> GroupPlanner:
        """The host side of a call (``runtime.planning``), with this module's sizes for this
        device as they are when the call starts."""
        sizes = Sizes(
            group_tokens=_GROUP_TOKENS, task_chars=self._task_chars, min_task_chars=_MIN_TASK_CHARS,
            tasks_per_worker=_TASKS_PER_WORKER,
        )
        pin = self.device.type == "cuda"
        return GroupPlanner(self.layout, self.tokenizer, sizes, pin=pin, join=self._deferred, take_ready=_take_ready)

    def _scheduler(self) -> DeviceScheduler:
        """The device side (``runtime.scheduler``), on this encoder's settings as they are now:
        it holds only references, so one is made whenever a group or a call is due."""
        return DeviceScheduler(
            self._forward_pool, self._forward_pool_device, self, device=self.device, dim=self.dim,
            pad_id=self.pad_id, workers=self.workers, deferred=self._deferred,
        )

    def _launch_group(self, plan: GroupPlan) -> Launched:
        """A group's batches under way (``DeviceScheduler.launch``): run to the end on a CPU,
        launched without waiting on an accelerator."""
        return self._scheduler().launch(plan, self.layout.pooling.reduction)

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

    # ------------------------------------------------------------------ the model on one batch
    def _forward_pool(self, batch: Packed, mode: Pooling, model: Any = None, documents: bool = False) -> np.ndarray:
        """Run one padded batch, pool and L2-normalise it on the device (``encode.pooling``, the
        pooling training runs too, as one gather): one copy in each direction.

        Document windows run under :attr:`document_autocast` (bf16 on CPUs that have it,
        ``encode.runtime.precision``); queries always run as loaded."""
        return self._forward_pool_device(batch, mode, model, documents).cpu().numpy()

    @torch.inference_mode()
    def _forward_pool_device(
        self, batch: Packed, mode: Pooling, model: Any = None, documents: bool = False
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
        jobs = self.layout.query_jobs(texts)
        self._scheduler().run_jobs(jobs, batch_size, out, self.layout.query_pooling, show_progress)
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


def _several_groups(inputs: list[Input], batch_tokens: int | None) -> bool:
    """Whether a call is larger than one group of documents (about 4 characters a token): a
    smaller one has nothing to overlap."""
    return chars(inputs) > 4 * max(_GROUP_TOKENS, batch_tokens or 0)


def _several_tasks(inputs: list[Input]) -> bool:
    """Whether a call has work for more than one preparation worker (a group each): a smaller
    one would wait for a process to do what this one does as fast."""
    return chars(inputs) > 2 * min(_TASK_CHARS, _MIN_TASK_CHARS)


def _normalise(x: np.ndarray) -> np.ndarray:
    """L2-normalise rows in place (callers pass arrays they own: no second copy of a book)."""
    x = np.asarray(x, dtype=np.float32)
    x /= np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)
    return x
