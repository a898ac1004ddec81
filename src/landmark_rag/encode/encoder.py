"""``LandmarkEncoder``: one encoder pass per document, one vector per sentence (step 2)."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch
from tqdm.auto import tqdm

from landmark_rag.encode.config import LandmarkConfig, Pooling
from landmark_rag.encode.layout import Job, Layout, token_id
from landmark_rag.encode.models.fingerprint import weights_fingerprint
from landmark_rag.encode.models.loading import load_pretrained
from landmark_rag.encode.pooling import last_hidden, pad_batch, pool
from landmark_rag.encode.runtime.malloc import pin_mmap_threshold
from landmark_rag.encode.runtime.parallel import auto_workers, run_batches
from landmark_rag.encode.runtime.precision import autocast
from landmark_rag.encode.untrained import warn_untrained_landmark
from landmark_rag.progress import bar_options
from landmark_rag.segment import Segmenter, segment_sentences
from landmark_rag.types import EncodedDocument, Sentence

logger = logging.getLogger(__name__)

#: Tokens per group of documents encoded together; bounds memory in encode_documents.
_GROUP_TOKENS = 1 << 17


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
        # verbose=False: counting a long text is not a model input; no "longer than 512" warning
        return len(self.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])

    # ------------------------------------------------------------------ segmentation
    def segment(self, text: str, doc_id: str | None = None, segmenter: Segmenter | None = None) -> list[Sentence]:
        """Sentences as this encoder sees them: long sentences cut to fit a window."""
        return segment_sentences(
            text, segmenter=segmenter, doc_id=doc_id, max_tokens=self.max_sentence_tokens, tokenizer=self.tokenizer
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
        long the documents are. ``show_progress=None`` shows the bar only once the call has run a few
        seconds (``landmark_rag.progress``).
        """
        if isinstance(texts, str):
            raise TypeError("encode_documents takes a list of texts; use encode_document for one")
        n = len(texts)
        doc_ids = list(doc_ids) if doc_ids is not None else [None] * n
        given = list(sentences) if sentences is not None else [None] * n
        if len(doc_ids) != n or len(given) != n:
            raise ValueError("texts, doc_ids and sentences must have the same length")
        results: list[EncodedDocument] = []
        bar = tqdm(total=n, desc="encoding", unit="doc", **bar_options(show_progress))
        t0, tokens_done = time.perf_counter(), 0
        docs = (self._prepare(*doc, segmenter) for doc in zip(texts, doc_ids, given, strict=True))
        for group, tokens in _groups(docs):
            results.extend(self._encode_group(group, batch_size, batch_tokens))
            tokens_done += tokens
            # postfix first without a redraw: the update draws it, and only once the bar is due
            bar.set_postfix(tokens_per_s=f"{tokens_done / max(time.perf_counter() - t0, 1e-9):,.0f}", refresh=False)
            bar.update(len(group))
        bar.close()
        return results

    def _prepare(
        self, text: str, doc_id: str | None, sentences: Sequence[Sentence] | None, segmenter: Segmenter | None
    ) -> _Document:
        """A document's sentences (given, or segmented here) and their token ids."""
        if not isinstance(text, str):
            raise TypeError(f"document texts must be str, got {type(text).__name__}")
        sents = (
            [s if s.doc_id == doc_id else s.with_doc_id(doc_id) for s in sentences]
            if sentences is not None
            else self.segment(text, doc_id, segmenter)
        )
        _check_sentences(text, sents)
        toks = self.layout.tokenize_sentences([s.text for s in sents], [s.space_before for s in sents])
        return _Document(text, doc_id, sents, toks)

    def _encode_group(
        self, group: list[_Document], batch_size: int, batch_tokens: int | None = None
    ) -> list[EncodedDocument]:
        jobs: list[Job] = []
        for d, doc in enumerate(group):
            jobs.extend(self.layout.document_jobs(doc.toks, d))
        outs = [np.zeros((len(doc.sentences), self.dim), dtype=np.float32) for doc in group]
        self._run_jobs(jobs, batch_size, outs, self.layout.pooling.reduction, documents=True, batch_tokens=batch_tokens)
        return [
            EncodedDocument(text=doc.text, sentences=doc.sentences, embeddings=_normalise(out), doc_id=doc.doc_id)
            for doc, out in zip(group, outs, strict=True)
        ]

    def _run_jobs(
        self, jobs: list[Job], batch_size: int, outs: list[np.ndarray], mode: Pooling, show_progress: bool = False,
        documents: bool = False, batch_tokens: int | None = None,
    ) -> None:
        order = sorted(range(len(jobs)), key=lambda j: len(jobs[j].ids))  # minimal padding
        batches = _batches(order, jobs, batch_size, batch_tokens)
        bar = tqdm(total=len(batches), desc="batches", disable=not show_progress)
        workers = self.workers if self.workers is not None else auto_workers(self.device)
        if self.device.type != "cpu":
            workers = 1

        def one(batch: list[Job]) -> None:
            self._run_batch(batch, outs, mode, documents)  # rows of outs are disjoint per job
            bar.update(1)

        run_batches(batches, one, workers)
        bar.close()

    def _run_batch(self, batch: list[Job], outs: list[np.ndarray], mode: Pooling, documents: bool = False) -> None:
        model = self.document_model if documents else None
        try:
            pooled = self._forward_pool(batch, mode, model, documents)
        except torch.OutOfMemoryError:
            if len(batch) == 1:
                raise
            if self.device.type == "cuda":
                torch.cuda.empty_cache()
            half = len(batch) // 2
            logger.warning("out of memory on a batch of %d windows; retrying in halves", len(batch))
            self._run_batch(batch[:half], outs, mode, documents)
            self._run_batch(batch[half:], outs, mode, documents)
            return
        except Exception as exc:  # noqa: BLE001 - e.g. inductor without a C++ compiler
            if model is None:
                raise
            # compiling is an optimisation the user asked for, not a reason to lose the run
            logger.warning("torch.compile failed (%s: %s); encoding on without it", type(exc).__name__, exc)
            self.document_model = None
            self._run_batch(batch, outs, mode, documents)
            return
        for job, vecs in zip(batch, pooled, strict=True):
            outs[job.doc][job.sentences] = vecs

    @torch.inference_mode()
    def _forward_pool(
        self, batch: list[Job], mode: Pooling, model: Any = None, documents: bool = False
    ) -> list[np.ndarray]:
        """Run one padded batch and pool it (``encode.pooling``, the code training runs too).

        Document windows run under :attr:`document_autocast` (bf16 on CPUs that have it,
        ``encode.runtime.precision``); queries always run as loaded."""
        ids, mask = pad_batch(batch, self.pad_id)
        model = model if model is not None else self.model
        with autocast(self.device, self.document_autocast if documents else None):
            hidden = last_hidden(model, ids.to(self.device), mask.to(self.device), self.layout)
        return [v.cpu().numpy() for v in pool(hidden, batch, mode)]

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
        return _normalise(out[0])

    def encode_texts(self, texts: Sequence[str], *, batch_size: int = 16, show_progress: bool = False) -> np.ndarray:
        """Embed standalone texts (no surrounding document), one vector per text.

        Each text is treated as its own document and its sentence vectors are averaged;
        this is what a framework gets when it asks to embed a bare string.
        """
        docs = self.encode_documents(list(texts), batch_size=batch_size, show_progress=show_progress)
        out = np.zeros((len(docs), self.dim), dtype=np.float32)
        for i, doc in enumerate(docs):
            if len(doc):
                out[i] = doc.embeddings.mean(0)
        return _normalise(out)

    def __repr__(self) -> str:
        return (
            f"LandmarkEncoder(model={self.model_name!r}, pooling={self.config.pooling.value!r}, "
            f"causal={self.causal}, max_length={self.max_length}, dim={self.dim}, device={self.device})"
        )


class _Document(NamedTuple):
    """A document ready to lay out: its sentences and their token ids."""

    text: str
    doc_id: str | None
    sentences: list[Sentence]
    toks: list[np.ndarray]


def _groups(docs: Iterable[_Document]) -> Iterator[tuple[list[_Document], int]]:
    """Consecutive documents in groups of about ``_GROUP_TOKENS`` tokens, with each group's
    token count; a group is encoded before the next document is prepared."""
    group: list[_Document] = []
    tokens = 0
    for doc in docs:
        group.append(doc)
        tokens += sum(len(t) for t in doc.toks)
        if tokens >= _GROUP_TOKENS:
            yield group, tokens
            group, tokens = [], 0
    if group:
        yield group, tokens


def _batches(order: list[int], jobs: list[Job], batch_size: int, batch_tokens: int | None) -> list[list[Job]]:
    """Consecutive jobs of ``order`` (sorted by length) in batches of ``batch_size`` jobs, or,
    when ``batch_tokens`` is set, of at most that many padded tokens (at least one job each)."""
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


def _check_sentences(text: str, sentences: Iterable[Sentence]) -> None:
    for s in sentences:
        if not (0 <= s.start <= s.end <= len(text)):
            raise ValueError(f"sentence {s.index} span ({s.start}, {s.end}) lies outside the document")


def _normalise(x: np.ndarray) -> np.ndarray:
    """L2-normalise rows in place (callers pass arrays they own: no second copy of a book)."""
    x = np.asarray(x, dtype=np.float32)
    x /= np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)
    return x
