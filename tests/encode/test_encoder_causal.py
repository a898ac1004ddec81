"""Causal (decoder-only) encoders: EOS landmark, left-context windows, byte-level BPE.

Deselect with ``-m "not causal"``. The first run dequantises SmolLM2's GGUF once (~30 s on
2 cores) into ~/.cache/landmark_rag/gguf; later runs load it in about two seconds.
"""

from __future__ import annotations

import numpy as np
import pytest

from landmark_rag import LandmarkEncoder, Sentence, segment_sentences
from landmark_rag.encode.windows import plan_windows

pytestmark = pytest.mark.causal

DOC = (
    "The plague reached Europe in 1347. Ships from the Black Sea carried it to Sicily. "
    "Within a year it had spread to Paris and London.\n\n"
    "Estimates of the dead range from 30% to 60% of Europe's population. Recovery took centuries."
)


@pytest.fixture
def tiny_causal(tiny_llama_dir):
    def make(**overrides) -> LandmarkEncoder:
        return LandmarkEncoder.from_pretrained(tiny_llama_dir, device="cpu", **overrides)

    return make


def test_causal_model_is_detected_and_uses_eos(tiny_causal) -> None:
    enc = tiny_causal()
    assert enc.causal and enc.config.causal
    assert enc.config.pooling == "landmark" and enc.config.query_pooling == "landmark"
    assert enc.config.lmk_token == enc.tokenizer.eos_token == "<|im_end|>"
    assert enc.lmk_id == enc.tokenizer.eos_token_id


@pytest.mark.parametrize("pooling", ["landmark", "mean"])
def test_text_after_a_sentence_does_not_change_its_vector(tiny_causal, pooling: str) -> None:
    """A causal token sees only what precedes it; in-context tokenisation (the space goes
    into the next word's token) must reproduce what the model would see in the whole text."""
    enc = tiny_causal(pooling=pooling)
    a = enc.encode_document(DOC)
    b = enc.encode_document(DOC + " A sentence added at the end. And another one.")
    n = len(a)
    assert len(b) == n + 2
    np.testing.assert_allclose(b.embeddings[:n], a.embeddings, atol=1e-5)
    # ... while text before it does change it
    c = enc.encode_document("An opening sentence. " + DOC)
    assert not np.allclose(c.embeddings[1:], a.embeddings, atol=1e-4)


def test_sentence_tokens_match_the_whole_text(tiny_causal) -> None:
    """Per-sentence tokenisation with the preceding whitespace gives the document's own tokens."""
    enc = tiny_causal()
    doc = "One plague. Two ships\nthree cities.  Many   dead."
    sents = enc.segment(doc)
    pieces = [s.space_before + s.text for s in sents]
    joined = [t for p in pieces for t in enc.tokenizer(p, add_special_tokens=False)["input_ids"]]
    assert joined == enc.tokenizer(doc.rstrip(), add_special_tokens=False)["input_ids"]


def test_causal_windows_equal_encoding_each_window_alone(tiny_causal) -> None:
    enc = tiny_causal(max_length=40, window_overlap=20)
    big = tiny_causal()
    text = DOC + " " + DOC
    doc = enc.encode_document(text)
    sents = doc.sentences
    lengths = [len(enc.tokenizer(s.space_before + s.text, add_special_tokens=False)["input_ids"]) + 1 for s in sents]
    windows, assigned = plan_windows(lengths, enc.budget, enc.overlap, causal=True)
    assert len(windows) > 2
    for w, (a, b) in enumerate(windows):
        base = sents[a].start - len(sents[a].space_before)
        sub_text = text[base : sents[b - 1].end]
        sub = [
            Sentence(k, s.start - base, s.end - base, s.text, None, s.space_before)
            for k, s in enumerate(sents[a:b])
        ]
        alone = big.encode_document(sub_text, sentences=sub)
        for i in range(a, b):
            if assigned[i] == w:
                np.testing.assert_allclose(doc.embeddings[i], alone.embeddings[i - a], atol=1e-5)


def test_byte_level_bpe_long_sentence_split(tiny_causal) -> None:
    enc = tiny_causal()
    text = "Start. " + " ".join(f"wörd{i}" for i in range(150)) + " 😀😀😀 end."
    for max_tokens in (3, 17):
        sents = segment_sentences(text, max_tokens=max_tokens, tokenizer=enc.tokenizer)
        assert "".join(s.space_before + s.text for s in sents) == text
        for s in sents:
            assert s.text == text[s.start : s.end] and s.text.strip() == s.text
            assert len(enc.tokenizer(s.text, add_special_tokens=False)["input_ids"]) <= max_tokens


# --------------------------------------------------------------------------- real SmolLM2
def test_smollm2_real(smollm2, excerpt_articles) -> None:
    """One real causal test in the default run: shapes, causality, context, queries."""
    assert smollm2.causal and smollm2.dim == 576 and smollm2.config.pooling == "landmark"
    assert smollm2.model_name == "SmolLM2-135M-Instruct"
    full = excerpt_articles[2].text
    text = full[: smollm2.segment(full[:900])[-2].end]  # whole sentences only
    doc = smollm2.encode_document(text, doc_id="bd")
    assert doc.embeddings.shape == (len(doc.sentences), 576) and len(doc) >= 4
    np.testing.assert_allclose(np.linalg.norm(doc.embeddings, axis=1), 1.0, atol=1e-4)
    longer = smollm2.encode_document(text + " This sentence was appended.", doc_id="bd")
    assert longer.sentences[: len(doc)] == doc.sentences
    np.testing.assert_allclose(longer.embeddings[: len(doc)], doc.embeddings, atol=1e-4)
    other = smollm2.encode_document("A different opening. " + doc.sentences[0].text)
    assert float(other.embeddings[1] @ doc.embeddings[0]) < 0.999  # same sentence, other context
    q = smollm2.encode_queries(["When did the plague arrive?", "Who died?"])
    assert q.shape == (2, 576) and np.isfinite(q).all()


@pytest.mark.slow
def test_smollm2_batched_equals_one_by_one(smollm2, excerpt_articles) -> None:
    texts = [a.text for a in excerpt_articles]
    batched = smollm2.encode_documents(texts, batch_size=4)
    for text, doc in zip(texts, batched, strict=True):
        alone = smollm2.encode_documents([text], batch_size=1)[0]
        np.testing.assert_allclose(doc.embeddings, alone.embeddings, atol=1e-4)
