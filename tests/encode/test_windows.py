"""Sliding windows over long documents: the plan itself, and the encoder at its edges.

The encoder tests use the tiny random BERT with a short ``max_length`` so that a document of
a few sentences already needs several windows; they check structure and equivalences that
hold for any weights, never retrieval quality.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from landmark_rag import LandmarkEncoder
from landmark_rag.encode.windows import plan_windows

# --------------------------------------------------------------------------- the plan


def _check_plan(lengths: list[int], budget: int, overlap: int, causal: bool) -> None:
    windows, assigned = plan_windows(lengths, budget, overlap, causal)
    n = len(lengths)
    prefix = np.concatenate([[0], np.cumsum(lengths)])
    assert windows[0][0] == 0 and windows[-1][1] == n
    for (a, b), (a2, b2) in itertools.pairwise(windows):
        assert a < a2 <= b < b2  # every window adds sentences; no gap between windows
        shared = prefix[b] - prefix[a2]
        assert shared <= max(overlap, 0) or a2 == a + 1  # re-reads at most `overlap` tokens
    for a, b in windows:
        assert a < b
        assert prefix[b] - prefix[a] <= budget or b == a + 1  # over budget only for one huge sentence
    assert assigned.shape == (n,)
    for i in range(n):
        w = assigned[i]
        a, b = windows[w]
        assert a <= i < b
        # the chosen window gives sentence i the most context of all windows that hold it
        def context(win: tuple[int, int], i: int = i) -> int:
            left = prefix[i] - prefix[win[0]]
            right = prefix[win[1]] - prefix[i + 1]
            return left if causal else min(left, right)

        assert context(windows[w]) == max(context(x) for x in windows if x[0] <= i < x[1])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(1, 60), min_size=1, max_size=60),
    st.integers(1, 200),
    st.integers(0, 250),
    st.booleans(),
)
def test_property_plan(lengths: list[int], budget: int, overlap: int, causal: bool) -> None:
    _check_plan(lengths, budget, overlap, causal)


def test_plan_empty_and_invalid() -> None:
    windows, assigned = plan_windows([], 10, 2, False)
    assert windows == [] and assigned.shape == (0,)
    with pytest.raises(ValueError, match="budget"):
        plan_windows([3, 4], 0, 0, False)


def test_plan_exactly_one_window_and_one_token_over() -> None:
    assert plan_windows([3, 4, 3], 10, 4, False)[0] == [(0, 3)]
    windows, _ = plan_windows([3, 4, 4], 10, 4, False)
    assert len(windows) == 2


def test_plan_sentence_longer_than_budget_gets_its_own_window() -> None:
    windows, assigned = plan_windows([2, 50, 2], 10, 3, False)
    assert (1, 2) in windows
    assert windows[assigned[1]] == (1, 2)


def test_plan_causal_prefers_left_context_bidirectional_balanced() -> None:
    lengths = [5] * 12
    windows, assigned = plan_windows(lengths, 30, 15, causal=True)
    assert len(windows) > 2
    # a causal token sees only what precedes it: a sentence re-read at the start of the next
    # window is pooled from the earlier window, where more text came before it
    for w, (a, _b) in enumerate(windows[1:], start=1):
        assert assigned[a] < w
    windows, assigned = plan_windows(lengths, 30, 15, causal=False)
    # bidirectional: the last sentence of a window has no right context there, so it is
    # pooled from the next window that re-reads it
    for w, (_a, b) in enumerate(windows[:-1]):
        assert assigned[b - 1] > w


# --------------------------------------------------------------------------- the encoder


@contextmanager
def count_windows(encoder: LandmarkEncoder) -> Iterator[list[int]]:
    """Record the width of every row the model is run on (batch_size=1 -> one per window)."""
    widths: list[int] = []

    def hook(_module, _args, kwargs, _out):
        ids, mask = kwargs["input_ids"], kwargs.get("attention_mask")
        if mask is None:  # a batch without padding goes without a mask: every row is full
            widths.extend([ids.shape[1]] * ids.shape[0])
        else:
            widths.extend([int(mask[r].sum()) for r in range(ids.shape[0])])

    handle = encoder.model.register_forward_hook(hook, with_kwargs=True)
    try:
        yield widths
    finally:
        handle.remove()


DOC = (
    "The landmark follows every sentence. One pass encodes the whole text. "
    "Each sentence gets its own vector. Queries end with a landmark too. "
    "Hits are expanded backwards. The end of a span is what the model finds. "
    "Windows overlap when a document is long. Every sentence is pooled once."
)


def _tokens_with_landmarks(encoder: LandmarkEncoder, text: str) -> int:
    return sum(encoder.count_tokens(s.text) + 1 for s in encoder.segment(text))


@pytest.mark.parametrize("pooling", ["landmark", "mean"])
def test_document_of_exactly_one_window(tiny_encoder, pooling: str) -> None:
    probe = tiny_encoder(pooling=pooling)
    n = _tokens_with_landmarks(probe, DOC) - (0 if pooling == "landmark" else len(probe.segment(DOC)))
    exact = tiny_encoder(pooling=pooling, max_length=n + 2)  # + [CLS] and [SEP]
    with count_windows(exact) as widths:
        out = exact.encode_documents([DOC], batch_size=1)[0]
    assert widths == [n + 2]
    ref = probe.encode_document(DOC)  # 512-token windows: the same single window
    np.testing.assert_allclose(out.embeddings, ref.embeddings, atol=1e-5)

    over = tiny_encoder(pooling=pooling, max_length=n + 1)  # one token short
    with count_windows(over) as widths:
        out = over.encode_documents([DOC], batch_size=1)[0]
    assert len(widths) == 2 and max(widths) <= n + 1
    assert [s.text for s in out.sentences] == [s.text for s in ref.sentences]
    np.testing.assert_allclose(np.linalg.norm(out.embeddings, axis=1), 1.0, atol=1e-5)
    # some sentence now sees less context, so its vector changed
    assert not np.allclose(out.embeddings, ref.embeddings, atol=1e-4)


@pytest.mark.parametrize("pooling", ["landmark", "mean"])
@pytest.mark.parametrize("max_length", [28])
def test_multi_window_equals_encoding_each_window_alone(tiny_encoder, pooling: str, max_length: int) -> None:
    """Windowing is exactly "encode the chosen window as its own document"."""
    enc = tiny_encoder(pooling=pooling, max_length=max_length, window_overlap=max_length // 2)
    big = tiny_encoder(pooling=pooling)
    doc = enc.encode_document(DOC + " " + DOC)
    sents = doc.sentences
    lengths = [enc.count_tokens(s.text) + (pooling == "landmark") for s in sents]
    windows, assigned = plan_windows(lengths, enc.budget, enc.overlap, causal=False)
    assert len(windows) > 3
    for w, (a, b) in enumerate(windows):
        base = sents[a].start
        text = doc.text[base : sents[b - 1].end]
        sub = [s.__class__(k, s.start - base, s.end - base, s.text, None, "") for k, s in enumerate(sents[a:b])]
        alone = big.encode_document(text, sentences=sub)
        for i in range(a, b):
            if assigned[i] == w:
                np.testing.assert_allclose(doc.embeddings[i], alone.embeddings[i - a], atol=1e-5)


def test_sentence_longer_than_a_window_is_cut_into_exact_pieces(tiny_encoder) -> None:
    enc = tiny_encoder(max_length=32)
    words = " ".join(f"word{i}" for i in range(200))
    text = f"Short start. {words} and the end. Short finish."
    doc = enc.encode_document(text)
    assert len(doc.sentences) > 10
    for s in doc.sentences:
        assert s.text == text[s.start : s.end]
        assert enc.count_tokens(s.text) <= enc.max_sentence_tokens
    assert "".join(s.space_before + s.text for s in doc.sentences) == text
    np.testing.assert_allclose(np.linalg.norm(doc.embeddings, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("pooling", ["landmark", "mean", "sentence"])
def test_given_sentence_longer_than_a_window_is_truncated_not_an_error(tiny_encoder, pooling: str) -> None:
    enc = tiny_encoder(pooling=pooling, max_length=32)
    text = "Tiny. " + " ".join(["many words"] * 60)
    from landmark_rag import segment_sentences

    sents = segment_sentences(text)  # not cut to fit: one sentence of ~120 tokens
    assert enc.count_tokens(sents[-1].text) > enc.budget
    with count_windows(enc) as widths:
        doc = enc.encode_document(text, sentences=sents)
    assert max(widths) <= 32
    assert doc.embeddings.shape == (2, enc.dim)
    assert np.isfinite(doc.embeddings).all()


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t"])
@pytest.mark.parametrize("pooling", ["landmark", "mean", "sentence"])
def test_empty_document_gives_an_empty_result(tiny_encoder, text: str, pooling: str) -> None:
    enc = tiny_encoder(pooling=pooling)
    doc = enc.encode_document(text, doc_id="empty")
    assert doc.sentences == [] and len(doc) == 0
    assert doc.embeddings.shape == (0, enc.dim) and doc.embeddings.dtype == np.float32
    docs = enc.encode_documents(["A real one. Two.", text, "Another."], doc_ids=["a", "b", "c"])
    assert [len(d) for d in docs] == [2, 0, 1]
    assert [d.doc_id for d in docs] == ["a", "b", "c"]
