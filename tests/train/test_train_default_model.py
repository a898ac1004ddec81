"""The trained default model shipped inside the package."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from shipped_models import trains_on_no_evaluation_article

from landmark_rag.encode.models.registry import BASE_MODEL, DEFAULT_MODEL, default_model, packaged_model

DATA = Path(__file__).resolve().parents[2] / "data" / "squad-v1.1-dev-part-a.json"


def test_default_is_the_small_packaged_adapter():
    path = packaged_model(DEFAULT_MODEL)
    assert path is not None and default_model() == str(path)
    cfg = json.loads((path / "landmark_config.json").read_text())
    assert cfg["base_model"] == BASE_MODEL == "all-MiniLM-L6-v2"
    assert cfg["model_name"] == "landmark-minilm"
    assert not any(path.glob("model*.safetensors"))  # base weights stay in their pip package
    size = sum(f.stat().st_size for f in path.iterdir())
    assert size < 5_000_000, size
    adapter = json.loads((path / "adapter_config.json").read_text())
    assert adapter["base_model_name_or_path"] == BASE_MODEL  # no local paths shipped
    train_cfg = json.loads((path / "train_config.json").read_text())
    assert trains_on_no_evaluation_article(train_cfg)  # the reported articles were never trained on


@pytest.mark.slow
def test_default_beats_per_sentence_on_a_held_out_article():
    from landmark_rag import LandmarkEncoder
    from landmark_rag.train import TrainConfig, load_articles, validate

    trained = LandmarkEncoder.from_pretrained()
    assert trained.model_name == "landmark-minilm" and trained.config.pooling == "mean"
    plain = LandmarkEncoder.from_pretrained(BASE_MODEL, pooling="sentence")
    cfg = TrainConfig(train_articles="0:0", val_articles="16:18")
    r_trained = validate(trained, load_articles(cfg, trained)[1])
    r_plain = validate(plain, load_articles(cfg, plain)[1])
    assert r_trained["MRR"] > r_plain["MRR"]


def test_default_loads_back_by_its_store_identity():
    # stores record model_name; "landmark-minilm" must resolve without a hub
    from landmark_rag.encode.models.registry import resolve

    assert resolve("landmark-minilm").path == str(packaged_model(DEFAULT_MODEL))
    assert resolve("Landmark-MiniLM").alias == "landmark-minilm"
