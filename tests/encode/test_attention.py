"""Isolated landmarks (encode/attention.py): text encoded as without landmarks, each
landmark reading only its own sentence."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from landmark_rag.encode.attention import isolated_landmark_inputs
from landmark_rag.encode.config import LandmarkConfig
from landmark_rag.encode.encoder import LandmarkEncoder
from landmark_rag.encode.pooling import last_hidden, pad_batch

SENTENCES = [
    "The castle was built in 1221 by the count.",
    "It burned down twice.",
    "Its library now holds four thousand books on local history.",
]


@pytest.fixture(scope="module")
def encoder() -> LandmarkEncoder:
    torch.manual_seed(0)
    # CPU, fp32: the tests feed CPU tensors to the model and compare states at 1e-5
    enc = LandmarkEncoder.from_pretrained(
        "all-MiniLM-L6-v2", pooling="landmark", query_pooling="landmark", landmark_attention="isolated", device="cpu"
    )
    enc.add_landmark_token("[LMK]")
    return enc


def test_mask_and_positions_follow_the_sentences() -> None:
    lmk = 9
    ids = torch.tensor([[1, 5, 5, lmk, 6, lmk, 2, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 1, 1, 0]])
    add, pos = isolated_landmark_inputs(ids, mask, lmk)
    seen = add[0, 0] == 0
    # text tokens see text tokens only (never a landmark, never padding)
    assert seen[1].tolist() == [True, True, True, False, True, False, True, False]
    # the first landmark sees its sentence (with the leading [CLS]) and itself
    assert seen[3].tolist() == [True, True, True, True, False, False, False, False]
    # the second landmark: its one-token sentence and itself
    assert seen[5].tolist() == [False, False, False, False, True, True, False, False]
    # text positions skip landmarks; a landmark sits right after its sentence
    assert pos[0, :7].tolist() == [0, 1, 2, 3, 3, 4, 4]


def _seen(ids: torch.Tensor, lmk: int = 9, **variant: object) -> tuple[torch.Tensor, torch.Tensor]:
    """Which keys each query may attend to, and the position ids, for one unpadded row."""
    add, pos = isolated_landmark_inputs(ids, torch.ones_like(ids), lmk, **variant)
    return add[0, 0] == 0, pos[0]


def test_prefix_landmarks_read_everything_up_to_their_sentence() -> None:
    lmk = 9
    seen, _ = _seen(torch.tensor([[1, 5, 5, lmk, 6, lmk, 2]]), prefix=True)
    # the second landmark reads sentence 1 and 2 (not the first landmark), and itself
    assert seen[5].tolist() == [True, True, True, False, True, True, False]
    assert seen[3].tolist() == [True, True, True, True, False, False, False]
    # text tokens are unaffected by the variant
    assert seen[4].tolist() == [True, True, True, False, True, False, True]


def test_text_states_equal_the_plain_window(encoder: LandmarkEncoder) -> None:
    toks = encoder.layout.tokenize_sentences(SENTENCES)
    (job,) = encoder.layout.document_jobs(toks)
    ids, mask = pad_batch([job], encoder.pad_id)
    with torch.inference_mode():
        hidden = last_hidden(encoder.model, ids, mask, encoder.layout)[0]
        plain_ids = torch.from_numpy(np.concatenate([encoder.prefix_ids, *toks, encoder.suffix_ids]))[None]
        plain = last_hidden(encoder.model, plain_ids, torch.ones_like(plain_ids))[0]
    text = ids[0] != encoder.lmk_id
    assert torch.allclose(hidden[text], plain, atol=1e-5)
    # and the landmarks differ from one another (each reads its own sentence)
    lmks = hidden[~text]
    assert lmks.shape[0] == len(SENTENCES)
    assert torch.cdist(lmks, lmks).triu(1).max() > 0.1


def test_a_landmark_ignores_other_sentences(encoder: LandmarkEncoder) -> None:
    """Changing sentence 3 changes landmark 1 only through the text's context, never
    directly; with one window it must not change landmark 1 more than the text's states."""
    a = encoder.encode_document(" ".join(SENTENCES)).embeddings
    b = encoder.encode_document(" ".join(SENTENCES[:2] + ["Nothing else."])).embeddings
    assert np.allclose(a[2], b[2]) is False
    assert float(a[0] @ b[0]) > float(a[2] @ b[2])


def test_isolated_needs_its_own_landmark_token() -> None:
    enc = LandmarkEncoder.from_pretrained("all-MiniLM-L6-v2", pooling="landmark", landmark_attention="isolated")
    with pytest.raises(ValueError, match="landmark token of its own"):
        enc.encode_document("One sentence. Another one.")


def test_isolated_is_part_of_the_identity_and_not_saved_when_full() -> None:
    from landmark_rag.encode.config import LandmarkConfig

    assert "landmark_attention" not in LandmarkConfig().to_dict()
    iso = LandmarkConfig(landmark_attention="isolated")
    assert iso.identity()["landmark_attention"] == "isolated"
    assert LandmarkConfig.from_dict(iso.to_dict()) == iso
    with pytest.raises(ValueError, match="bidirectional"):
        LandmarkConfig(landmark_attention="isolated", causal=True)


def test_causal_text_reads_only_its_own_and_earlier_sentences() -> None:
    lmk = 9
    seen, pos = _seen(torch.tensor([[1, 5, 5, lmk, 6, lmk, 2]]), causal=True)
    # sentence 0's text (with [CLS]) reads itself only, never sentence 1
    assert seen[1].tolist() == [True, True, True, False, False, False, False]
    # sentence 1's text reads sentence 0 and itself, no landmark
    assert seen[4].tolist() == [True, True, True, False, True, False, False]
    # the trailing [SEP] reads all the text
    assert seen[6].tolist() == [True, True, True, False, True, False, True]
    # landmarks stay isolated: own sentence and itself
    assert seen[5].tolist() == [False, False, False, False, True, True, False]
    assert pos.tolist() == [0, 1, 2, 3, 3, 4, 4]


def test_causal_landmark_vectors_carry_nothing_after_their_sentence() -> None:
    """The property Front-k relies on: what follows sentence i cannot move its vector."""
    torch.manual_seed(0)
    enc = LandmarkEncoder.from_pretrained("all-MiniLM-L6-v2", pooling="landmark", landmark_attention="causal")
    enc.add_landmark_token("[LMK]")
    a = enc.encode_document(" ".join(SENTENCES)).embeddings
    b = enc.encode_document(" ".join(SENTENCES[:2] + ["Nothing else is known about the moat."])).embeddings
    assert np.allclose(a[:2], b[:2], atol=1e-5)
    assert not np.allclose(a[2], b[2], atol=1e-3)
    # while with isolated landmarks the later sentence does reach the earlier ones through the text
    iso = LandmarkEncoder.from_pretrained("all-MiniLM-L6-v2", pooling="landmark", landmark_attention="isolated")
    iso.add_landmark_token("[LMK]")
    c = iso.encode_document(" ".join(SENTENCES)).embeddings
    d = iso.encode_document(" ".join(SENTENCES[:2] + ["Nothing else is known about the moat."])).embeddings
    assert not np.allclose(c[0], d[0], atol=1e-5)


def test_landmark_span_reads_its_sentence_and_the_ones_before_it() -> None:
    lmk = 9
    ids = torch.tensor([[1, 5, lmk, 6, 6, lmk, 7, lmk, 2]])
    seen, _ = _seen(ids, span=2)
    # the landmark after sentence 2 reads sentences 1 and 2 (text only) and itself, not sentence 0
    assert seen[7].tolist() == [False, False, False, True, True, False, True, True, False]
    # the first landmark has no sentence before it: [CLS] and its own text, as with span 1
    assert seen[2].tolist() == _seen(ids)[0][2].tolist()
    # text never reads landmarks
    assert not seen[4, [2, 5, 7]].any()
    with pytest.raises(ValueError, match="span"):
        isolated_landmark_inputs(ids, torch.ones_like(ids), lmk, span=0)


def test_landmark_span_is_identity_and_saved_only_when_not_one() -> None:
    assert "landmark_span" not in LandmarkConfig(landmark_attention="isolated").to_dict()
    wide = LandmarkConfig(landmark_attention="causal", landmark_span=2)
    assert wide.identity()["landmark_span"] == 2
    assert LandmarkConfig.from_dict(wide.to_dict()) == wide
    with pytest.raises(ValueError, match="landmark_span"):
        LandmarkConfig(landmark_attention="full", landmark_span=2)
