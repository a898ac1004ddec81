"""Landmark pooling on a model never trained for it warns, once per model; trained landmark
models (their own landmark_config.json says ``pooling: landmark``) never do."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest
import tiny_models

from landmark_rag import LandmarkEncoder
from landmark_rag.encode.config import LandmarkConfig
from landmark_rag.encode.untrained import UntrainedLandmarkWarning


def _loads(path, **overrides) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # count what the package emits, not Python's dedup
        LandmarkEncoder.from_pretrained(path, device="cpu", **overrides)
    return [w for w in caught if issubclass(w.category, UntrainedLandmarkWarning)]


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> Path:
    return tiny_models.build("bert", tmp_path_factory.mktemp("warn") / "bert")


def test_untrained_landmark_warns_once_per_model(tiny_bert, tmp_path):
    first = _loads(tiny_bert, pooling="landmark")
    assert len(first) == 1
    text = str(first[0].message)
    assert "0.06" in text and "0.6" in text and "landmark-rag train" in text
    assert first[0].filename == __file__  # points at the caller's line, not the package's
    assert _loads(tiny_bert, pooling="landmark") == []  # the same model again: silent
    assert _loads(tiny_bert) == [] and _loads(tiny_bert, pooling="mean") == []  # not landmark pooling
    other = tmp_path / "copy"
    shutil.copytree(tiny_bert, other)
    assert len(_loads(other, pooling="landmark")) == 1  # another model warns on its own


def test_trained_or_declared_landmark_models_do_not_warn(tiny_bert, tmp_path):
    # a model directory whose own config declares landmark pooling (what training writes)
    declared = tmp_path / "declared"
    shutil.copytree(tiny_bert, declared)
    LandmarkConfig(pooling="landmark", query_pooling="landmark").save(declared)
    assert _loads(declared) == []
    # the packaged LMK-token model (trained with landmark pooling)
    assert _loads("landmark-minilm-lmk") == []
    # a model trained with mean pooling, asked for a landmark it never learnt: warns
    assert len(_loads("landmark-minilm", pooling="landmark")) == 1


def test_plain_causal_lm_warns_too(tmp_path):
    # an instruct/base LM without a landmark_config.json gets the reference EOS recipe, but its
    # EOS state was never trained as a retrieval embedding: the warning says so
    base = tiny_models.build("mistral", tmp_path / "mistral")
    caught = _loads(base)
    assert len(caught) == 1
    assert LandmarkEncoder.from_pretrained(base, device="cpu").config.pooling == "landmark"
