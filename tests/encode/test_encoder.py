"""The encoder: shapes, contextuality, determinism, batching, saving, loading errors.

Structure is checked on the tiny random BERT (milliseconds); everything that depends on
what a model has learnt uses the real all-MiniLM-L6-v2.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from landmark_rag import EncodedDocument, LandmarkEncoder, ModelNotFoundError, Sentence, segment_sentences

DOC = (
    "Oxygen is a chemical element with symbol O. It is a member of the chalcogen group. "
    "By mass, oxygen is the third-most abundant element in the universe.\n\n"
    "Diatomic oxygen gas constitutes 20.8% of the Earth's atmosphere. It was isolated in 1774."
)


def _assert_encoded(doc: EncodedDocument, text: str, dim: int, doc_id: str | None = None) -> None:
    assert doc.text == text and doc.doc_id == doc_id
    assert doc.embeddings.dtype == np.float32
    assert doc.embeddings.shape == (len(doc.sentences), dim)
    np.testing.assert_allclose(np.linalg.norm(doc.embeddings, axis=1), 1.0, atol=1e-5)
    for i, s in enumerate(doc.sentences):
        assert s.index == i and s.doc_id == doc_id and s.text == text[s.start : s.end]


# --------------------------------------------------------------------------- structure (tiny)
@pytest.mark.parametrize("pooling", ["landmark", "mean", "sentence"])
def test_one_vector_per_sentence(tiny_encoder, pooling: str) -> None:
    enc = tiny_encoder(pooling=pooling)
    doc = enc.encode_document(DOC, doc_id="ox")
    _assert_encoded(doc, DOC, enc.dim, "ox")
    assert doc.sentences == enc.segment(DOC, "ox")
    assert len(doc) == 5
    assert enc.config.pooling == pooling and enc.config.identity()["pooling"] == pooling


def test_given_sentences_are_used_as_they_are(tiny_encoder) -> None:
    enc = tiny_encoder()
    text = "alpha beta gamma delta"
    mine = [Sentence(0, 0, 10, "alpha beta"), Sentence(1, 11, 22, "gamma delta", space_before=" ")]
    doc = enc.encode_document(text, doc_id="g", sentences=mine)
    assert [(s.start, s.end, s.doc_id) for s in doc.sentences] == [(0, 10, "g"), (11, 22, "g")]
    assert doc.embeddings.shape == (2, enc.dim)


def test_argument_errors(tiny_encoder) -> None:
    enc = tiny_encoder()
    with pytest.raises(TypeError, match="list"):
        enc.encode_documents("one string")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="same length"):
        enc.encode_documents(["a", "b"], doc_ids=["x"])
    with pytest.raises(TypeError, match="str"):
        enc.encode_documents([b"bytes"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="outside"):
        enc.encode_document("short", sentences=[Sentence(0, 0, 50, "short")])
    with pytest.raises(TypeError, match="list"):
        enc.encode_queries("one query")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="pooling"):
        tiny_encoder(pooling="max")


def test_queries_and_texts(tiny_encoder) -> None:
    enc = tiny_encoder()
    q = enc.encode_queries(["what is oxygen?", "when was it isolated?"])
    assert q.shape == (2, enc.dim) and q.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(enc.encode_query("what is oxygen?"), q[0], atol=1e-5)
    assert enc.encode_queries([]).shape == (0, enc.dim)
    t = enc.encode_texts(["One sentence.", "Two sentences. Here.", ""])
    assert t.shape == (3, enc.dim)
    # no sentence: the model's vector of the text itself (as a query), never a zero vector
    np.testing.assert_allclose(t[2], enc.encode_query(""), atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(t, axis=1), 1.0, atol=1e-5)
    assert np.isfinite(t).all()


def test_deterministic(tiny_encoder) -> None:
    enc = tiny_encoder(pooling="landmark", max_length=48)
    a = enc.encode_document(DOC * 3).embeddings
    b = enc.encode_document(DOC * 3).embeddings
    assert np.array_equal(a, b)


def test_save_and_load_round_trip_with_a_new_landmark_token(tiny_encoder, tmp_path: Path) -> None:
    enc = tiny_encoder(pooling="landmark")
    sep = enc.tokenizer.sep_token_id
    n_vocab = len(enc.tokenizer)
    assert enc.lmk_id == sep and not enc.config.lmk_is_new
    enc.add_landmark_token("[LMK]")
    emb = enc.model.get_input_embeddings().weight
    assert enc.lmk_id == n_vocab and len(enc.tokenizer) == n_vocab + 1 and emb.shape[0] == n_vocab + 1
    assert torch.equal(emb[enc.lmk_id], emb[sep])  # starts as a copy of [SEP]
    assert enc.config.lmk_token == "[LMK]" and enc.config.lmk_is_new
    with torch.no_grad():  # as if trained: the new row now differs from [SEP]
        emb[enc.lmk_id] += torch.randn(emb.shape[1], generator=torch.Generator().manual_seed(1))
    before = enc.encode_document(DOC).embeddings
    q_before = enc.encode_query("what is oxygen?")

    enc.save_pretrained(tmp_path / "saved")
    assert (tmp_path / "saved" / "landmark_config.json").is_file()
    again = LandmarkEncoder.from_pretrained(tmp_path / "saved", device="cpu")
    assert again.config.pooling == "landmark" and again.config.lmk_token == "[LMK]" and again.config.lmk_is_new
    assert again.lmk_id == enc.lmk_id
    assert again.config.identity() == enc.config.identity()  # the saved config keeps the model's name
    np.testing.assert_allclose(again.encode_document(DOC).embeddings, before, atol=1e-6)
    np.testing.assert_allclose(again.encode_query("what is oxygen?"), q_before, atol=1e-6)
    # the landmark really is the new token: with [SEP] instead the vectors differ
    sep_enc = LandmarkEncoder.from_pretrained(tmp_path / "saved", device="cpu", lmk_token="[SEP]")
    assert not np.allclose(sep_enc.encode_document(DOC).embeddings, before, atol=1e-3)


def test_overrides_survive_a_round_trip(tiny_encoder, tmp_path: Path) -> None:
    enc = tiny_encoder(pooling="mean", query_pooling="mean", max_length=64, window_overlap=8, query_instruction="Q: ")
    enc.save_pretrained(tmp_path)
    again = LandmarkEncoder.from_pretrained(tmp_path, device="cpu")
    assert (again.config.pooling, again.config.query_pooling, again.max_length, again.overlap) == ("mean", "mean", 64, 8)
    assert again.config.query_instruction == "Q: "
    np.testing.assert_allclose(again.encode_query("x?"), enc.encode_query("x?"), atol=1e-6)


# --------------------------------------------------------------------------- loading errors
def test_unreachable_hub_name_is_model_not_found() -> None:
    # a fresh interpreter, so HF_HUB_OFFLINE is read when huggingface_hub is imported
    code = (
        "from landmark_rag import LandmarkEncoder, ModelNotFoundError\n"
        "try:\n"
        "    LandmarkEncoder.from_pretrained('no-such-org/no-such-landmark-model')\n"
        "except ModelNotFoundError as e:\n"
        "    print('MNF', e)\n"
    )
    import os

    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("MNF"), out.stdout + out.stderr
    msg = out.stdout
    assert "no-such-org/no-such-landmark-model" in msg
    assert "hub" in msg and "all-minilm-l6-v2" in msg  # says what went wrong and what would work


def test_bad_local_paths_are_model_not_found(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelNotFoundError, match="directory"):
        LandmarkEncoder.from_pretrained(tmp_path / "empty", device="cpu")
    (tmp_path / "weights.bin").write_bytes(b"\0")
    with pytest.raises(ModelNotFoundError, match="neither"):
        LandmarkEncoder.from_pretrained(tmp_path / "weights.bin", device="cpu")
    assert issubclass(ModelNotFoundError, OSError)


# --------------------------------------------------------------------------- real MiniLM
def test_plain_minilm_pools_like_sentence_transformers(minilm) -> None:
    """Plain MiniLM embeds each sentence alone, mean-pooled over all its tokens ([CLS]/[SEP]
    included), exactly as all-MiniLM-L6-v2 was trained to be used."""
    assert minilm.config.pooling == "sentence" and minilm.config.query_pooling == "mean"
    assert minilm.model_name == "all-MiniLM-L6-v2" and minilm.dim == 384 and not minilm.causal
    doc = minilm.encode_document(DOC)
    batch = minilm.tokenizer([s.text for s in doc.sentences], padding=True, return_tensors="pt")
    with torch.inference_mode():
        hidden = minilm.model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    ref = (hidden * mask).sum(1) / mask.sum(1)
    ref = torch.nn.functional.normalize(ref, dim=-1).numpy()
    np.testing.assert_allclose(doc.embeddings, ref, atol=1e-5)
    q = minilm.encode_query(doc.sentences[0].text)
    np.testing.assert_allclose(q, ref[0], atol=1e-5)  # a query is embedded the same way


def test_contextuality(minilm, minilm_landmark, minilm_mean) -> None:
    """In-context pooling gives the same sentence different vectors in different documents;
    the context-free default gives it the same one."""
    shared = "It was discovered by a chemist working alone in his laboratory."
    doc_a = "Oxygen is a chemical element with symbol O. " + shared + " It makes up most of the crust by mass."
    doc_b = "The Black Death was a devastating pandemic in Europe. " + shared + " Trade routes spread the plague."
    for enc, contextual in ((minilm_landmark, True), (minilm_mean, True), (minilm, False)):
        a = enc.encode_document(doc_a)
        b = enc.encode_document(doc_b)
        assert a.sentences[1].text == b.sentences[1].text == shared
        cos = float(a.embeddings[1] @ b.embeddings[1])
        if contextual:
            assert cos < 0.999, (enc.config.pooling, cos)
        else:
            assert cos == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("which", ["minilm", "minilm_landmark", "minilm_mean"])
def test_batched_equals_one_by_one(request, excerpt_articles, which: str) -> None:
    """Padding and batch composition must not change vectors (beyond float noise)."""
    enc: LandmarkEncoder = request.getfixturevalue(which)
    # documents of very different lengths, so batches mix long and short windows
    texts = [excerpt_articles[0].text, excerpt_articles[1].text[:700], "A short extra document. With two sentences."]
    batched = enc.encode_documents(texts, batch_size=4)
    for text, doc in zip(texts, batched, strict=True):
        alone = enc.encode_documents([text], batch_size=1)[0]
        assert [s.text for s in doc.sentences] == [s.text for s in alone.sentences]
        np.testing.assert_allclose(doc.embeddings, alone.embeddings, atol=1e-4)


def test_plain_minilm_finds_the_answer_sentence(minilm, excerpt_articles) -> None:
    """Real retrieval on the excerpt: the sentence holding the answer ranks high."""
    hits1 = hits5 = total = 0
    for art in excerpt_articles:
        doc = minilm.encode_document(art.text)
        q = minilm.encode_queries([x.text for x in art.questions])
        order = np.argsort(-(q @ doc.embeddings.T), axis=1)
        for question, ranked in zip(art.questions, order, strict=True):
            gold = next(i for i, s in enumerate(doc.sentences) if s.start <= question.answer_start < s.end)
            hits1 += ranked[0] == gold
            hits5 += gold in ranked[:5]
            total += 1
    assert total == 62
    assert hits1 / total > 0.5 and hits5 / total > 0.8, (hits1 / total, hits5 / total)


def test_minilm_round_trip_with_new_landmark(tmp_path: Path) -> None:
    enc = LandmarkEncoder.from_pretrained("all-MiniLM-L6-v2", pooling="landmark", device="cpu")
    enc.add_landmark_token("[LMK]")
    before = enc.encode_document(DOC).embeddings
    enc.save_pretrained(tmp_path)
    again = LandmarkEncoder.from_pretrained(tmp_path, device="cpu")
    assert again.config.lmk_token == "[LMK]" and again.config.pooling == "landmark"
    assert again.tokenizer.convert_tokens_to_ids("[LMK]") == again.lmk_id == len(again.tokenizer) - 1
    np.testing.assert_allclose(again.encode_document(DOC).embeddings, before, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("which", ["minilm", "minilm_landmark"])
def test_every_squad_article_encodes_in_one_call(request, squad_articles, which: str) -> None:
    enc: LandmarkEncoder = request.getfixturevalue(which)
    texts = [a.text for a in squad_articles]
    docs = enc.encode_documents(texts, doc_ids=[a.title for a in squad_articles], show_progress=True)
    assert len(docs) == len(squad_articles) == 24
    for art, doc in zip(squad_articles, docs, strict=True):
        _assert_encoded(doc, art.text, 384, art.title)
        assert doc.sentences == segment_sentences(
            art.text, doc_id=art.title, max_tokens=enc.max_sentence_tokens, tokenizer=enc.tokenizer
        )
        assert "".join(s.space_before + s.text for s in doc.sentences).strip() == art.text.strip()
