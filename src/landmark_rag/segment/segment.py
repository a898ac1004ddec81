"""``segment_sentences``: the public entry point of the segmentation step."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from landmark_rag.segment.sentencex import sentencex_spans
from landmark_rag.segment.spans import spans_to_sentences
from landmark_rag.segment.tokens import TOKENIZE_BATCH, text_tokenizer
from landmark_rag.types import Sentence

#: Any callable from text to ``(start, end)`` pairs (or objects with ``.start``/``.end``).
Segmenter = Callable[[str], Iterable[Any]]


def segment_sentences(
    text: str,
    *,
    segmenter: Segmenter | None = None,
    doc_id: str | None = None,
    max_tokens: int | None = None,
    tokenizer: Any = None,
    space_before: bool = False,
) -> list[Sentence]:
    """Split ``text`` into sentences with exact character offsets.

    ``segmenter`` defaults to sentencex. With ``max_tokens`` and a Hugging Face fast
    ``tokenizer``, sentences longer than ``max_tokens`` tokens are cut into pieces that fit
    (at token boundaries, preferring whitespace), each piece a sentence of its own with exact
    offsets: the encoder needs every sentence to fit in one window with its landmark.
    ``space_before``: measure each sentence with the whitespace before it, as a causal
    encoder's layout tokenises it (``LandmarkEncoder.segment`` sets it for causal models), so
    the measurement is the very tokenisation the encoder uses later.
    Empty or whitespace-only text gives an empty list.
    """
    sentences = sentence_spans(text, segmenter, doc_id)
    if max_tokens is None or not sentences:
        return sentences
    if tokenizer is None:
        raise ValueError("max_tokens needs a tokenizer to count tokens")
    # store: these sentences come back to be encoded (a framework's parser, then its
    # embedding model), which then reads their ids instead of tokenising them again
    return split_measured(text, sentences, tokenizer, max_tokens, doc_id, space_before, True)[0]


def sentence_spans(text: str, segmenter: Segmenter | None = None, doc_id: str | None = None) -> list[Sentence]:
    """The segmenter's sentences of ``text`` (``spans_to_sentences``), nothing cut or measured."""
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}")
    if not text.strip():
        return []
    return spans_to_sentences(text, (segmenter or sentencex_spans)(text), doc_id)


def split_long_sentences(
    text: str, sentences: list[Sentence], tokenizer: Any, max_tokens: int, doc_id: str | None = None,
    *, space_before: bool = False,
) -> list[Sentence]:
    """Cut every sentence longer than ``max_tokens`` into pieces of at most that many tokens.

    A piece cut inside a word can tokenise into more tokens on its own than it had in the
    sentence (WordPiece ``##dis`` becomes ``di ##s``), so the pieces of a cut sentence are
    measured again and cut further until they fit or cannot be cut (a lone character that
    is several tokens). Only cut pieces are tokenised again; every other sentence once.
    ``space_before`` as in :func:`segment_sentences`.
    """
    return split_measured(text, sentences, tokenizer, max_tokens, doc_id, space_before, True)[0]


def split_measured(
    text: str, sentences: list[Sentence], tokenizer: Any, max_tokens: int, doc_id: str | None,
    space_before: bool, store: bool, first: tuple[list[np.ndarray], dict[int, np.ndarray]] | None = None,
) -> tuple[list[Sentence], list[np.ndarray]]:
    """:func:`split_long_sentences` that also returns each resulting sentence's token ids (of
    its text, after its ``space_before`` with ``space_before``: the string the encoder's layout
    tokenises, ``encode.layout.sentence_pieces``); ``store`` keeps them for a later encoding.

    ``first``: the measurement of ``sentences`` (ids, and offsets of those over ``max_tokens``)
    when the caller already has it, e.g. from one tokenizer call for many documents."""
    if max_tokens < 1:
        raise ValueError("max_tokens must be >= 1")
    tt = text_tokenizer(tokenizer)
    measured: dict[tuple[int, int], np.ndarray] = {}
    final: list[tuple[int, int]] = []
    pending = [(s.start, s.end) for s in sentences]
    cut_any = False
    while pending:
        again: list[tuple[int, int]] = []
        step = len(pending) if first is not None else TOKENIZE_BATCH
        for i in range(0, len(pending), max(1, step)):
            batch = pending[i : i + step]
            spaces = [_space_before(text, a) if space_before else "" for a, _ in batch]
            if first is not None:
                (ids, offsets), first = first, None
            else:
                ids, offsets = tt.measure(
                    [sp + text[a:b] for sp, (a, b) in zip(spaces, batch, strict=True)], offsets_over=max_tokens,
                    store=store,
                )
            for k, ((a, b), sp, x) in enumerate(zip(batch, spaces, ids, strict=True)):
                if len(x) <= max_tokens:
                    final.append((a, b))
                    measured[(a, b)] = x
                    continue
                # offsets of ``sp + sentence``, made relative to the sentence itself
                offs = np.maximum(offsets[k] - len(sp), 0).tolist()
                pieces = [p for p in (_trimmed_span(text, x0, y0) for x0, y0 in _cut(text, a, b, offs, max_tokens)) if p]
                if len(pieces) <= 1:  # cannot be cut any further
                    final.append((a, b))
                    measured[(a, b)] = x
                else:
                    cut_any = True
                    again.extend(pieces)
        pending = again
    if not cut_any:
        return sentences, [measured[(s.start, s.end)] for s in sentences]
    out = spans_to_sentences(text, sorted(final), doc_id)
    return out, [measured[(s.start, s.end)] for s in out]


def _space_before(text: str, start: int) -> str:
    """The whitespace right before ``start``: a sentence's ``space_before`` (sentences cover
    every other character, so the run of whitespace before one is exactly the gap)."""
    k = start
    while k > 0 and text[k - 1].isspace():
        k -= 1
    return text[k:start]


def _trimmed_span(text: str, s: int, e: int) -> tuple[int, int] | None:
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return (s, e) if e > s else None


def _cut(text: str, start: int, end: int, offsets: list[tuple[int, int]], max_tokens: int) -> list[tuple[int, int]]:
    """Cut ``text[start:end]`` (token ``offsets`` relative to ``start``) into pieces."""
    spans: list[tuple[int, int]] = []
    cut, i = start, 0
    while len(offsets) - i > max_tokens:
        j = i + max_tokens  # first token of the next piece
        # prefer a cut where a token starts after whitespace (a word boundary)
        for k in range(j, i + max(1, max_tokens // 2), -1):
            s_k = start + offsets[k][0]
            # WordPiece offsets start at the word; byte-level BPE offsets at its space
            if text[s_k].isspace() or (s_k > start and text[s_k - 1].isspace()):
                j = k
                break
        nxt = start + offsets[j][0]
        spans.append((cut, nxt))
        cut, i = nxt, j
    spans.append((cut, end))
    return spans
