"""Opt-in int8 dynamic quantisation (``from_pretrained(..., quantize="int8")``): real model, real text."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from landmark_rag import LandmarkEncoder
from landmark_rag.encode.runtime.quantize import quantize_model


def test_int8_encoder_close_to_fp32_and_really_quantised(minilm: LandmarkEncoder, excerpt_articles) -> None:
    text = excerpt_articles[0].text[:4000]
    int8 = LandmarkEncoder.from_pretrained("all-MiniLM-L6-v2", device="cpu", quantize="int8")
    kinds = {type(m).__module__ for m in int8.model.modules()}
    assert any("quantized" in k for k in kinds)  # the linear layers were swapped
    assert not any(type(m) is torch.nn.Linear for m in int8.model.modules())
    a, b = minilm.encode_document(text), int8.encode_document(text)
    assert [s.text for s in a.sentences] == [s.text for s in b.sentences]
    cos = (a.embeddings * b.embeddings).sum(1)
    assert cos.min() > 0.9 and not np.allclose(a.embeddings, b.embeddings)  # close, and not the same model
    q = "Who proved that air is necessary for combustion?"
    assert float(minilm.encode_query(q) @ int8.encode_query(q)) > 0.9


def test_quantize_refuses_unknown_modes_and_gpus(minilm: LandmarkEncoder) -> None:
    with pytest.raises(ValueError, match="int8"):
        quantize_model(minilm.model, "int4", torch.device("cpu"))
    with pytest.raises(ValueError, match="CPU only"):
        quantize_model(minilm.model, "int8", torch.device("cuda"))
    assert quantize_model(minilm.model, None, torch.device("cpu")) is minilm.model
