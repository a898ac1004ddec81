"""``segment_sentences``: the public entry point of the segmentation step."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from landmark_rag.segment.sentencex import sentencex_spans
from landmark_rag.segment.spans import spans_to_sentences
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
) -> list[Sentence]:
    """Split ``text`` into sentences with exact character offsets.

    ``segmenter`` defaults to sentencex. With ``max_tokens`` and a Hugging Face fast
    ``tokenizer``, sentences longer than ``max_tokens`` tokens are cut into pieces that fit
    (at token boundaries, preferring whitespace), each piece a sentence of its own with exact
    offsets: the encoder needs every sentence to fit in one window with its landmark.
    Empty or whitespace-only text gives an empty list.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}")
    if not text.strip():
        return []
    spans = (segmenter or sentencex_spans)(text)
    sentences = spans_to_sentences(text, spans, doc_id)
    if max_tokens is not None:
        if tokenizer is None:
            raise ValueError("max_tokens needs a tokenizer to count tokens")
        sentences = split_long_sentences(text, sentences, tokenizer, max_tokens, doc_id)
    return sentences


def split_long_sentences(
    text: str, sentences: list[Sentence], tokenizer: Any, max_tokens: int, doc_id: str | None = None
) -> list[Sentence]:
    """Cut every sentence longer than ``max_tokens`` into pieces of at most that many tokens.

    A piece cut inside a word can tokenise into more tokens on its own than it had in the
    sentence (WordPiece ``##dis`` becomes ``di ##s``), so the pieces of a cut sentence are
    measured again and cut further until they fit or cannot be cut (a lone character that
    is several tokens). Sentences are tokenised in batches of ``_TOKENIZE_BATCH``: a very
    long document at once would hold every token's offsets as Python tuples at the same time.
    """
    if max_tokens < 1:
        raise ValueError("max_tokens must be >= 1")
    final: list[tuple[int, int]] = []
    pending = [(s.start, s.end) for s in sentences]
    while pending:
        again: list[tuple[int, int]] = []
        for i in range(0, len(pending), _TOKENIZE_BATCH):
            batch = pending[i : i + _TOKENIZE_BATCH]
            enc = tokenizer(
                [text[a:b] for a, b in batch], add_special_tokens=False, return_offsets_mapping=True, verbose=False
            )
            for (a, b), offsets in zip(batch, enc["offset_mapping"], strict=True):
                if len(offsets) <= max_tokens:
                    final.append((a, b))
                    continue
                pieces = [(x, y) for x, y in _cut(text, a, b, offsets, max_tokens) if y > x]
                if len(pieces) <= 1:  # cannot be cut any further
                    final.append((a, b))
                else:
                    again.extend(pieces)
        pending = again
    return spans_to_sentences(text, final, doc_id)


#: Sentences per tokenizer call when measuring; bounds memory on very long documents.
_TOKENIZE_BATCH = 2048


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
