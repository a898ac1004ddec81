"""Documents' sentences and their token ids, measured as the encoder's layout tokenises them.

This is the host work before windows are planned (``LandmarkEncoder.encode_documents``):
one tokenizer call for the sentences of many documents, then the few sentences longer than
a window allows cut to fit (``segment.split_measured``, which re-tokenises only their
pieces). It lives on its own so that a worker process (``encode.runtime.process``) runs the
very code the encoder runs in its own process, and imports nothing heavier than the
tokenizer (no torch, no transformers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from landmark_rag.encode.layout import sentence_pieces
from landmark_rag.segment.segment import split_measured
from landmark_rag.segment.tokens import text_tokenizer
from landmark_rag.types import Sentence


def measure_documents(
    texts: Sequence[str],
    sentence_lists: Sequence[list[Sentence]],
    tokenizer: Any,
    max_tokens: int,
    causal: bool,
    *,
    cut: Sequence[bool],
    doc_ids: Sequence[str | None],
) -> list[tuple[list[Sentence], list[np.ndarray]]]:
    """Per document, its sentences and their token ids (of :func:`layout.sentence_pieces`).

    ``tokenizer``: a Hugging Face tokenizer or a ``segment.tokens.TextTokenizer``. Where
    ``cut[i]``, a sentence over ``max_tokens`` is cut into pieces that fit (segmentation's
    own sentences); elsewhere sentences are kept as given (a caller's sentences, one vector
    each). ``doc_ids`` name the sentences cutting makes."""
    pieces = [
        p for sents in sentence_lists for p in sentence_pieces(
            [s.text for s in sents], [s.space_before for s in sents], causal)
    ]
    ids, offsets = text_tokenizer(tokenizer).measure(pieces, offsets_over=max_tokens)
    out: list[tuple[list[Sentence], list[np.ndarray]]] = []
    at = 0
    for text, sents, may_cut, doc_id in zip(texts, sentence_lists, cut, doc_ids, strict=True):
        n = len(sents)
        doc = ids[at : at + n]
        if may_cut and any(len(x) > max_tokens for x in doc):
            first = (doc, {k - at: v for k, v in offsets.items() if at <= k < at + n})
            sents, doc = split_measured(text, sents, tokenizer, max_tokens, doc_id, causal, False, first=first)
        at += n
        out.append((sents, doc))
    return out
