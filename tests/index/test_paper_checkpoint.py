"""The paper's released checkpoint layout, proven on a tiny random Mistral.

The released landmark model (Mistral-7B backbone) is a causal LM read the reference way: EOS
as the landmark after every sentence, last-token (landmark) pooling, queries as
``instruction + query + EOS``. docs/paper_checkpoint.md says how to run it; this test saves a
tiny random ``MistralModel`` in the same layout (config.json + safetensors + tokenizer +
landmark_config.json), opens it by directory through ``LandmarkIndex``, indexes and searches
a document, and checks each vector against a hand-made forward pass of that recipe.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import tiny_models
import torch

from landmark_rag import LandmarkIndex
from landmark_rag.encode.config import LandmarkConfig
from landmark_rag.encode.untrained import UntrainedLandmarkWarning

INSTRUCTION = "Instruct: Given a question, retrieve the sentences that answer it.\nQuery: "
TEXT = (
    "The Normans were descended from Norse raiders. They settled in Normandy in the tenth century.\n\n"
    "Rollo was their first ruler. His descendants became dukes, and one of them conquered England in 1066."
)
QUESTION = "Who was the first ruler of the Normans?"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = tiny_models.build("mistral", tmp_path_factory.mktemp("paper") / "lmk-mistral")
    from transformers import AutoTokenizer

    eos = AutoTokenizer.from_pretrained(path).eos_token
    LandmarkConfig(
        pooling="landmark", query_pooling="landmark", lmk_token=eos, causal=True,
        query_instruction=INSTRUCTION, max_length=256, model_name="tiny-lmk-mistral",
    ).save(path)
    return path


def _unit(x: torch.Tensor) -> np.ndarray:
    v = x.float().numpy()
    return v / np.linalg.norm(v)


def test_paper_layout_indexes_and_searches(checkpoint, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UntrainedLandmarkWarning)  # a declared landmark model: no warning
        index = LandmarkIndex.open(tmp_path / "db", model=checkpoint, device="cpu")
    enc = index.encoder
    tok = enc.tokenizer
    assert enc.causal and tok.sep_token is None
    assert enc.lmk_id == tok.eos_token_id and enc.config.pooling == enc.config.query_pooling == "landmark"
    assert enc.config.query_instruction == INSTRUCTION
    assert enc.model.config.use_cache is False  # no key/value cache is built (and held) per window

    # documents: EOS after every sentence, each vector the hidden state at its EOS
    doc = enc.encode_document(TEXT)
    assert len(doc) == 4
    toks = enc.layout.tokenize_sentences([s.text for s in doc.sentences], [s.space_before for s in doc.sentences])
    (job,) = enc.layout.document_jobs(toks)
    assert (job.ids[job.ends - 1] == tok.eos_token_id).all()
    ids = [tok.bos_token_id]
    ends = []
    for s in doc.sentences:
        ids += tok(s.space_before + s.text, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        ends.append(len(ids) - 1)
    assert ids == job.ids.tolist()
    with torch.no_grad():
        hidden = enc.model(input_ids=torch.tensor([ids])).last_hidden_state[0]
    for i, e in enumerate(ends):
        np.testing.assert_allclose(doc.embeddings[i], _unit(hidden[e]), atol=1e-5)

    # queries: the instruction, the query, then EOS, pooled at the EOS
    (qjob,) = enc.layout.query_jobs([QUESTION])
    expected = tok(INSTRUCTION + QUESTION)["input_ids"] + [tok.eos_token_id]
    assert qjob.ids.tolist() == expected and qjob.ids[0] == tok.bos_token_id
    with torch.no_grad():
        qhidden = enc.model(input_ids=torch.tensor([expected])).last_hidden_state[0, -1]
    qvec = _unit(qhidden)
    np.testing.assert_allclose(enc.encode_query(QUESTION), qvec, atol=1e-5)
    assert not np.allclose(enc.encode_query(QUESTION), _plain_query(enc, QUESTION), atol=1e-3)

    # index and search by directory: exact passages, scored with the instructed query vector
    index.add_texts([TEXT], ids=["normans"])
    hits = index.hits(QUESTION, 4, mode="dense")
    assert len(hits) == 4
    best = max(range(4), key=lambda i: float(doc.embeddings[i] @ qvec))
    assert hits[0].sentence.index == best
    np.testing.assert_allclose(hits[0].score, float(doc.embeddings[best] @ qvec), atol=1e-4)
    passages = index.search(QUESTION, k=1, mode="dense")
    assert len(passages) == 1 and passages[0].text == TEXT[passages[0].start : passages[0].end]
    assert best in passages[0].hit_indices
    # the store recorded the identity, instruction included: reopening by path needs no model argument
    again = LandmarkIndex.open(tmp_path / "db", device="cpu")
    assert again.encoder.config.query_instruction == INSTRUCTION
    assert [p.text for p in again.search(QUESTION, k=1, mode="dense")] == [p.text for p in passages]


def _plain_query(enc, text: str) -> np.ndarray:
    """The same query without the instruction (to show the instruction changes the vector)."""
    ids = enc.tokenizer(text)["input_ids"] + [enc.tokenizer.eos_token_id]
    with torch.no_grad():
        return _unit(enc.model(input_ids=torch.tensor([ids])).last_hidden_state[0, -1])
