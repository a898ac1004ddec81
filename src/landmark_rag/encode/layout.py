"""The encoder's input layout, shared by inference (``LandmarkEncoder``) and training.

A *job* is one encoder input: token ids of a window (or of a lone sentence or query) and,
for each sentence pooled from it, the span to pool. Training must see exactly the inputs
inference builds, so both take their jobs from these functions; nothing else lays out
landmarks, windows or special tokens.

The functions read the encoder's layout attributes (``tokenizer``, ``causal``, ``budget``,
``overlap``, ``max_length``, ``prefix_ids``, ``suffix_ids``, ``lmk_id``, ``pad_id``,
``config``), never its weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from landmark_rag.encode.windows import plan_windows

#: Sentences tokenised per tokenizer call (Python lists of a whole book's ids are large).
_TOKENIZE_CHUNK = 2048


@dataclass
class Job:
    """One encoder input: a window (or a lone sentence / query) and what to pool from it."""

    ids: np.ndarray  # int64 token ids including special tokens
    doc: int  # output group (document of the current batch) the pooled vectors belong to
    sentences: np.ndarray  # sentence indices (within the doc) pooled from this job
    starts: np.ndarray  # pooling span start per sentence (position in ids)
    ends: np.ndarray  # pooling span end (exclusive); landmark pooling uses ends - 1


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


def tokenize_sentences(encoder: Any, texts: Sequence[str], spaces: Sequence[str] | None = None) -> list[np.ndarray]:
    """Token ids per sentence (no special tokens), capped so each fits a window with its landmark."""
    if not texts:
        return []
    pieces = sentence_pieces(texts, spaces, encoder.causal)
    cap = encoder.budget if encoder.config.pooling == "sentence" else encoder.budget - 1
    fallback = [encoder.tokenizer.unk_token_id or encoder.pad_id]
    out: list[np.ndarray] = []
    for i in range(0, len(pieces), _TOKENIZE_CHUNK):
        ids = encoder.tokenizer(pieces[i : i + _TOKENIZE_CHUNK], add_special_tokens=False, verbose=False)["input_ids"]
        out.extend(np.asarray(x[:cap] or fallback, dtype=np.int64) for x in ids)
    return out


def document_jobs(encoder: Any, toks: Sequence[np.ndarray], doc: int = 0) -> list[Job]:
    """The inputs for one document's sentences: windows of whole sentences, a landmark after
    each (``landmark`` pooling), every sentence pooled from the window planned for it; with
    ``sentence`` pooling each sentence alone."""
    if encoder.config.pooling == "sentence":
        return standalone_jobs(encoder, toks, doc)
    prefix = np.asarray(encoder.prefix_ids, dtype=np.int64)
    suffix = np.asarray(encoder.suffix_ids, dtype=np.int64)
    landmark = encoder.config.pooling == "landmark"
    lmk = np.asarray([encoder.lmk_id], dtype=np.int64)
    lengths = [len(t) + (1 if landmark else 0) for t in toks]
    # sentence-causal landmarks (encode.attention) see only what precedes them, like a causal model
    left_only = encoder.causal or getattr(encoder.config, "landmark_attention", "full") == "causal"
    windows, assigned = plan_windows(lengths, encoder.budget, encoder.overlap, left_only)
    jobs = []
    for w, (a, b) in enumerate(windows):
        parts = [prefix]
        pos = len(prefix)
        sel, starts, ends = [], [], []
        for i in range(a, b):
            t = toks[i]
            parts.append(t)
            if landmark:
                parts.append(lmk)
            if assigned[i] == w:
                sel.append(i)
                starts.append(pos)
                ends.append(pos + len(t) + (1 if landmark else 0))
            pos += lengths[i]
        parts.append(suffix)
        ids = np.concatenate(parts)[: encoder.max_length]
        if sel:
            jobs.append(Job(ids, doc, np.array(sel), np.array(starts), np.minimum(np.array(ends), len(ids))))
    return jobs


def standalone_jobs(encoder: Any, toks: Sequence[np.ndarray], doc: int = 0) -> list[Job]:
    """Each unit alone, mean-pooled over ``[CLS] unit [SEP]`` (``pooling="sentence"``)."""
    prefix = np.asarray(encoder.prefix_ids, dtype=np.int64)
    suffix = np.asarray(encoder.suffix_ids, dtype=np.int64)
    return [
        Job(np.concatenate([prefix, t, suffix]), doc, np.array([i]), np.array([0]),
            np.array([len(prefix) + len(t) + len(suffix)]))
        for i, t in enumerate(toks)
    ]


def query_jobs(encoder: Any, texts: Sequence[str]) -> list[Job]:
    """Inputs for queries: ``[instruction] query [LMK]`` pooled at the LMK
    (``query_pooling="landmark"``), or the whole query mean-pooled."""
    instr = encoder.config.query_instruction
    ids = encoder.tokenizer([instr + t for t in texts], add_special_tokens=False, verbose=False)["input_ids"]
    landmark = encoder.config.query_pooling == "landmark"
    cap = encoder.budget - (1 if landmark else 0)
    prefix = np.asarray(encoder.prefix_ids, dtype=np.int64)
    suffix = np.asarray(encoder.suffix_ids, dtype=np.int64)
    jobs = []
    for q, x in enumerate(ids):
        t = np.asarray(x[:cap], dtype=np.int64)
        if landmark:
            seq = np.concatenate([prefix, t, [encoder.lmk_id], suffix])
            end = len(prefix) + len(t) + 1
            jobs.append(Job(seq, 0, np.array([q]), np.array([end - 1]), np.array([end])))
        else:
            seq = np.concatenate([prefix, t, suffix])
            jobs.append(Job(seq, 0, np.array([q]), np.array([0]), np.array([len(seq)])))
    return jobs
