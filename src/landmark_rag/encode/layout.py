"""The encoder's input layout, shared by inference (``LandmarkEncoder``) and training.

A *job* is one encoder input: token ids of a window (or of a lone sentence or query) and,
for each sentence pooled from it, the span to pool. Training must see exactly the inputs
inference builds, so both take their jobs from one :class:`Layout`; nothing else lays out
landmarks, windows or special tokens.

A ``Layout`` is built once per encoder from its tokenizer, model config and
:class:`~landmark_rag.encode.config.LandmarkConfig` (again whenever the config or the
landmark token changes); it never touches weights, so the ONNX query path uses it too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from landmark_rag.encode.config import LandmarkConfig, Pooling
from landmark_rag.encode.models.registry import is_causal
from landmark_rag.encode.windows import plan_windows
from landmark_rag.segment.tokens import text_tokenizer

#: Isolated landmarks as ``encode.attention`` takes them: ``(landmark id, mode, span)``.
IsolatedLandmarks = tuple[int, str, int]


@dataclass
class Job:
    """One encoder input: a window (or a lone sentence / query) and what to pool from it."""

    ids: np.ndarray  # int64 token ids including special tokens
    doc: int  # output group (document of the current batch) the pooled vectors belong to
    sentences: np.ndarray  # sentence indices (within the doc) pooled from this job
    starts: np.ndarray  # pooling span start per sentence (position in ids)
    ends: np.ndarray  # pooling span end (exclusive); landmark pooling uses ends - 1


@dataclass(frozen=True)
class Layout:
    """Everything that decides an encoder's inputs: tokenizer, special tokens, window sizes,
    landmark and pooling. Jobs come from its methods."""

    tokenizer: Any
    causal: bool
    max_length: int  # tokens per window, special tokens included
    budget: int  # text tokens per window: max_length less the special tokens
    overlap: int  # tokens consecutive windows of a long document share
    max_sentence_tokens: int  # longer sentences are cut by segmentation
    prefix_ids: tuple[int, ...]  # special tokens the tokenizer wraps a single text in ([CLS] ... [SEP], <s> ...)
    suffix_ids: tuple[int, ...]
    lmk_token: str
    lmk_id: int
    pad_id: int
    pooling: Pooling
    query_pooling: Pooling
    query_instruction: str = ""
    landmark_attention: str = "full"
    landmark_span: int = 1
    #: the id an empty sentence is laid out as; ``None``: the tokenizer's unknown token (or padding)
    fallback_id: int | None = None

    @classmethod
    def build(cls, tokenizer: Any, config: LandmarkConfig, model_config: Any) -> Layout:
        """The layout of a model (``model_config``: its Hugging Face config) used per ``config``.

        What ``config`` leaves open is decided here: ``causal`` from the model, the landmark
        token (EOS for causal models, else ``[SEP]``), the window from the model's positions.
        """
        causal = bool(config.causal) if config.causal is not None else is_causal(model_config)
        lmk_token = config.lmk_token
        if lmk_token is None:
            lmk_token = tokenizer.eos_token if causal else (tokenizer.sep_token or tokenizer.eos_token)
        if lmk_token is None:
            raise ValueError("the tokenizer has neither [SEP] nor EOS; set lmk_token explicitly")
        max_length = int(config.max_length or _model_max_length(model_config, tokenizer))
        prefix, suffix = _special_tokens(tokenizer)
        budget = max_length - len(prefix) - len(suffix)
        if budget < 8:
            raise ValueError(f"max_length {max_length} leaves no room for text")
        pad = tokenizer.pad_token_id
        return cls(
            tokenizer=tokenizer,
            causal=causal,
            max_length=max_length,
            budget=budget,
            overlap=int(config.window_overlap if config.window_overlap is not None else max_length // 4),
            max_sentence_tokens=int(config.max_sentence_tokens or min(256, budget // 2)),
            prefix_ids=prefix,
            suffix_ids=suffix,
            lmk_token=lmk_token,
            lmk_id=token_id(tokenizer, lmk_token),
            pad_id=int(pad if pad is not None else (tokenizer.eos_token_id or 0)),
            pooling=config.pooling,
            query_pooling=config.query_pooling,
            query_instruction=config.query_instruction,
            landmark_attention=config.landmark_attention,
            landmark_span=config.landmark_span,
        )

    @property
    def left_context_only(self) -> bool:
        """Whether a sentence sees only what precedes it: a causal model, or sentence-causal
        landmarks (``encode.attention``); windows are then planned for left context."""
        return self.causal or self.landmark_attention == "causal"

    @property
    def isolated_landmarks(self) -> IsolatedLandmarks | None:
        """``(landmark id, mode, span)`` when landmarks are isolated (``landmark_attention``
        ``isolated``/``prefix``/``causal``, ``encode.attention``), ``None`` for full attention.

        Checked when asked, not when built: training may add the landmark token that makes a
        layout valid after the encoder was loaded."""
        mode = self.landmark_attention
        if mode == "full":
            return None
        if self.causal:
            raise ValueError(f"landmark_attention={mode!r} is for bidirectional encoders")
        if self.lmk_id in self.prefix_ids or self.lmk_id in self.suffix_ids:
            raise ValueError(
                f"landmark_attention={mode!r} needs a landmark token of its own, not {self.lmk_token!r} "
                "(which also wraps every window); add one with add_landmark_token('[LMK]')"
            )
        return self.lmk_id, mode, self.landmark_span

    # ------------------------------------------------------------------ jobs
    def tokenize_sentences(self, texts: Sequence[str], spaces: Sequence[str] | None = None) -> list[np.ndarray]:
        """Token ids per sentence (no special tokens), capped so each fits a window with its landmark.

        ``spaces``: the whitespace before each sentence in its document (``Sentence.space_before``);
        ``None`` joins sentences with one space (see :func:`sentence_pieces`). Sentences a
        caller segmented beforehand (``segment.tokens``) are not tokenised again.
        """
        if not texts:
            return []
        return self.cap_ids(text_tokenizer(self.tokenizer).ids(sentence_pieces(texts, spaces, self.causal)))

    def cap_ids(self, ids: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Sentence ids (of :func:`sentence_pieces`) capped as :meth:`tokenize_sentences` caps
        them: at most a window with its landmark, and never empty."""
        cap = self.budget if self.pooling is Pooling.SENTENCE else self.budget - 1
        fallback = np.asarray([self._fallback_id()], dtype=np.int64)
        return [x[:cap] if len(x) else fallback for x in ids]

    def _fallback_id(self) -> int:
        if self.fallback_id is not None:
            return self.fallback_id
        return int(self.tokenizer.unk_token_id or self.pad_id)

    def portable(self) -> Layout:
        """This layout without its tokenizer, for a process that lays out ids it tokenised
        itself (``encode.runtime.process``): everything :meth:`cap_ids` and
        :meth:`document_jobs` read, and nothing that needs transformers to unpickle."""
        return replace(self, tokenizer=None, fallback_id=self._fallback_id())

    def document_jobs(self, toks: Sequence[np.ndarray], doc: int = 0) -> list[Job]:
        """The inputs for one document's sentences: windows of whole sentences, a landmark after
        each (``landmark`` pooling), every sentence pooled from the window planned for it; with
        ``sentence`` pooling each sentence alone."""
        if self.pooling is Pooling.SENTENCE:
            return self.standalone_jobs(toks, doc)
        prefix, suffix = self._wrap()
        landmark = self.pooling is Pooling.LANDMARK
        if not toks:
            return []
        # the document's ids laid out once (a landmark after each sentence): every window is a
        # slice of them, so the work per window is numpy's, not a loop over its sentences
        sizes = np.fromiter((len(t) for t in toks), dtype=np.int64, count=len(toks))
        flat = np.concatenate(toks)
        if landmark:
            flat = np.insert(flat, np.cumsum(sizes), self.lmk_id)
            sizes = sizes + 1
        windows, assigned = plan_windows(sizes, self.budget, self.overlap, self.left_context_only)
        offsets = np.concatenate([[0], np.cumsum(sizes)])  # where each sentence starts in ``flat``
        jobs = []
        for w, (a, b) in enumerate(windows):
            ids = np.concatenate([prefix, flat[offsets[a] : offsets[b]], suffix])[: self.max_length]
            sel = np.flatnonzero(assigned[a:b] == w) + a
            if len(sel):
                starts = len(prefix) + offsets[sel] - offsets[a]
                jobs.append(Job(ids, doc, sel, starts, np.minimum(starts + sizes[sel], len(ids))))
        return jobs

    def standalone_jobs(self, toks: Sequence[np.ndarray], doc: int = 0) -> list[Job]:
        """Each unit alone, mean-pooled over ``[CLS] unit [SEP]`` (``pooling="sentence"``)."""
        prefix, suffix = self._wrap()
        return [
            Job(np.concatenate([prefix, t, suffix]), doc, np.array([i]), np.array([0]),
                np.array([len(prefix) + len(t) + len(suffix)]))
            for i, t in enumerate(toks)
        ]

    def query_jobs(self, texts: Sequence[str]) -> list[Job]:
        """Inputs for queries: ``[instruction] query [LMK]`` pooled at the LMK
        (``query_pooling="landmark"``), or the whole query mean-pooled."""
        instr = self.query_instruction
        ids = text_tokenizer(self.tokenizer).ids([instr + t for t in texts])
        landmark = self.query_pooling is Pooling.LANDMARK
        cap = self.budget - (1 if landmark else 0)
        prefix, suffix = self._wrap()
        jobs = []
        for q, x in enumerate(ids):
            t = x[:cap]
            if landmark:
                seq = np.concatenate([prefix, t, [self.lmk_id], suffix])
                end = len(prefix) + len(t) + 1
                jobs.append(Job(seq, 0, np.array([q]), np.array([end - 1]), np.array([end])))
            else:
                seq = np.concatenate([prefix, t, suffix])
                jobs.append(Job(seq, 0, np.array([q]), np.array([0]), np.array([len(seq)])))
        return jobs

    def _wrap(self) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(self.prefix_ids, dtype=np.int64), np.asarray(self.suffix_ids, dtype=np.int64)


class FromLayout:
    """A read-only attribute of an object that holds a ``layout`` (``LandmarkEncoder``): the
    layout's field of the same name, so the layout stays the one place each is decided."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, holder: Any, owner: type | None = None) -> Any:
        return self if holder is None else getattr(holder.layout, self.name)


def sentence_pieces(texts: Sequence[str], spaces: Sequence[str] | None, causal: bool) -> list[str]:
    """The strings tokenised for a document's sentences.

    Causal (byte-level BPE) tokenizers encode the space before a word into the word's
    token, so a causal model gets each sentence with the whitespace that precedes it in
    the document (``Sentence.space_before``: a blank line at a paragraph break, nothing for
    the first sentence); ``spaces=None`` means one space between consecutive units.
    Bidirectional (WordPiece-style) tokenizers drop that whitespace anyway.
    """
    if not causal:
        return list(texts)
    if spaces is None:
        spaces = ["" if i == 0 else " " for i in range(len(texts))]
    if len(spaces) != len(texts):
        raise ValueError("one space_before per sentence")
    return [sp + t for sp, t in zip(spaces, texts, strict=True)]


def token_id(tokenizer: Any, token: str) -> int:
    """``token``'s id; an error when the vocabulary lacks it."""
    tid = tokenizer.convert_tokens_to_ids(token)
    if tid is None:
        raise ValueError(f"token {token!r} is not in the tokenizer's vocabulary")
    return int(tid)


def _model_max_length(model_config: Any, tokenizer: Any) -> int:
    n = getattr(model_config, "max_position_embeddings", None) or 512
    tok_max = getattr(tokenizer, "model_max_length", None)
    if tok_max and tok_max < 1_000_000:
        n = min(n, tok_max)
    return int(min(n, 8192))


def _special_tokens(tokenizer: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Special tokens the tokenizer wraps a single text in ([CLS] ... [SEP], <s> ...)."""
    probe = tokenizer("a", add_special_tokens=False)["input_ids"]
    full = tokenizer("a")["input_ids"]
    for k in range(len(full) - len(probe) + 1):
        if full[k : k + len(probe)] == probe:
            return tuple(full[:k]), tuple(full[k + len(probe) :])
    return (), ()
