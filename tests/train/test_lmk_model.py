"""The packaged LMK-token model (``landmark-minilm-lmk``) and the harness's expansion rows.

Real model, real text: the SQuAD excerpt in tests/data (CC BY-SA 4.0, SQuAD v1.1 dev,
Rajpurkar et al. 2016).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from shipped_models import trains_on_no_evaluation_article

from landmark_rag.encode.models.registry import BASE_MODEL, packaged_model

NAME = "landmark-minilm-lmk"
EXCERPT = Path(__file__).resolve().parents[1] / "data" / "squad_excerpt.json"


@pytest.fixture(scope="module")
def lmk():
    from landmark_rag import LandmarkEncoder

    return LandmarkEncoder.from_pretrained(NAME, device="cpu")


def test_packaged_lmk_model_files():
    path = packaged_model(NAME)
    assert path is not None
    cfg = json.loads((path / "landmark_config.json").read_text())
    assert cfg["pooling"] == "landmark" and cfg["expansion"] == "surround"
    assert cfg["model_name"] == NAME and cfg["base_model"] == BASE_MODEL
    assert not any(path.glob("model*.safetensors"))  # base weights stay in their pip package
    assert sum(f.stat().st_size for f in path.iterdir()) < 5_000_000
    adapter = json.loads((path / "adapter_config.json").read_text())
    assert adapter["base_model_name_or_path"] == BASE_MODEL
    train_cfg = json.loads((path / "train_config.json").read_text())
    assert trains_on_no_evaluation_article(train_cfg)  # validation and held-out articles never trained on


def test_loads_by_name_with_landmark_pooling(lmk):
    assert lmk.config.pooling == "landmark"
    assert lmk.model_name == NAME
    # the landmark id is a real vocabulary entry whose trained embedding was restored
    assert lmk.tokenizer.convert_tokens_to_ids(lmk.config.lmk_token) == lmk.lmk_id != lmk.tokenizer.unk_token_id


def test_retrieves_the_answer_sentence_of_a_real_paragraph(lmk):
    data = json.loads(EXCERPT.read_text())
    para = data["data"][0]["paragraphs"][0]  # Oxygen
    doc = lmk.encode_document(para["context"], "oxygen")
    qs = para["qas"][:12]
    scores = lmk.encode_queries([q["question"] for q in qs]) @ doc.embeddings.T
    assert doc.embeddings.shape == (len(doc.sentences), lmk.dim)
    hits = 0
    for q, row in zip(qs, scores, strict=True):
        best = doc.sentences[int(np.argmax(row))]
        # Surround 1/1 around the hit, the model's own expansion
        first = doc.sentences[max(0, best.index - 1)]
        last = doc.sentences[min(len(doc.sentences) - 1, best.index + 1)]
        passage = para["context"][first.start : last.end]
        hits += any(a["text"] in passage for a in q["answers"])
    assert hits >= 0.75 * len(qs), hits


def test_plain_merge_matches_peft(lmk):
    """The adapter (LoRA + the trained [LMK] row) merges without peft to the same weights."""
    from transformers import AutoModel

    from landmark_rag.encode.models.lora import merge_lora
    from landmark_rag.encode.models.registry import resolve

    base = AutoModel.from_pretrained(resolve(BASE_MODEL).path)
    base.resize_token_embeddings(len(lmk.tokenizer), mean_resizing=False)
    merged = merge_lora(base, packaged_model(NAME))
    ref = dict(lmk.model.state_dict())
    for name, w in merged.state_dict().items():
        assert torch_close(w, ref[name]), name


def torch_close(a, b) -> bool:
    import torch

    return bool(torch.allclose(a.float(), b.float().to(a.device), atol=1e-5))


def test_eval_reports_each_expansion_over_one_encoding():
    from landmark_rag.evaluation import evaluate

    res = evaluate(EXCERPT, ["landmark"], [64, 256], NAME, expansions=["front", "surround", "adaptive"])
    rows = res["systems"]
    assert set(rows) == {"landmark-front", "landmark-surround", "landmark-adaptive"}
    # one encoding, one ranking: recall does not depend on the expansion
    assert len({rows[r]["recall@1"] for r in rows}) == 1
    assert rows["landmark-surround"]["units"] == rows["landmark-front"]["units"]


def test_adaptive_passage_reads_the_question_scores(lmk):
    """Adaptive grows while neighbours score close to the hit FOR THIS QUESTION."""
    from landmark_rag.datasets import read_squad, select
    from landmark_rag.evaluation.corpus import build_corpus
    from landmark_rag.evaluation.systems import Workspace
    from landmark_rag.evaluation.systems.landmark import LandmarkSystem

    corpus = build_corpus(select(read_squad(EXCERPT), ["Oxygen"]), lmk)
    ws = Workspace(model=NAME, device="cpu")
    system = LandmarkSystem("adaptive")
    system.build(corpus, ws)
    hit = 5
    low = np.zeros(corpus.n_sentences, dtype=np.float32)
    low[hit] = 1.0  # no neighbour relevant: the hit plus its min_before=1 predecessor
    doc, start, end = system.passage_for(hit, low)
    assert (start, end) == (int(corpus.sent_start[hit - 1]), int(corpus.sent_end[hit]))
    flat = np.ones(corpus.n_sentences, dtype=np.float32)  # all relevant: grows, within 256 tokens
    _, start2, end2 = system.passage_for(hit, flat)
    assert start2 <= start and end2 > end
    assert lmk.count_tokens(corpus.texts[doc][start2:end2]) <= 256 + 8

