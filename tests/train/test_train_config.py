"""A training config is checked when it is made: a typo or an impossible value is a clear
``TrainingInputError`` before any data is read, never a crash when the run saves."""

from __future__ import annotations

import json

import pytest

from landmark_rag.train.config import StageConfig, TrainConfig, TrainingInputError


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"expansion": "fron"}, "unknown expansion strategy 'fron'"),
        ({"expansion": "front", "expansion_params": {"kk": 2}}, r"front strategy takes \['k'\]"),
        ({"expansion_params": {"k": 2}}, "expansion_params need an expansion"),
        ({"pooling": "landmarks"}, "pooling must be one of 'landmark', 'mean'"),
        ({"query_pooling": "sentence"}, "query_pooling must be one of"),
        ({"landmark_attention": "isolate"}, "landmark_attention must be one of"),
        ({"mixed_precision": "bf-16"}, "mixed_precision must be one of 'no', 'fp16', 'bf16'"),
        ({"lora": "false"}, "lora must be true or false"),
        ({"temperature": 0}, "temperature must be a finite number > 0"),
        ({"lr": -1e-4}, "lr must be a finite number > 0"),
        ({"warmup_ratio": 2}, r"warmup_ratio must lie in \[0, 1\)"),
        ({"gradient_accumulation_steps": 0}, "gradient_accumulation_steps must be a whole number >= 1"),
        ({"boundary_margin": -0.1}, "boundary_margin must be a finite number >= 0"),
        ({"lexical_prior": "2.5"}, "lexical_prior must be a finite number >= 0"),
        ({"lexical_prior_bm25": 1.5}, r"lexical_prior_bm25 is \[k1, b\]"),
        ({"span_weights": "avg"}, "span_weights must be one of 'sum', 'mean'"),
        ({"span_cap": -1}, "span_cap must be a whole number >= 0"),
        ({"stages": []}, "stages must be a non-empty list"),
        ({"stages": [{"kind": "longdoc", "steps": 0}]}, "stage steps must be a whole number >= 1"),
        ({"stages": [{"kind": "longdoc", "steps": "100"}]}, "stage steps must be a whole number >= 1"),
        ({"stages": [{"kind": "longdoc", "stepz": 100}]}, "stage: .*stepz"),
        ({"stages": [{"contrastive_weight": 0, "distill_weight": 0}]}, "trains nothing"),
    ],
)
def test_bad_options_are_refused_when_the_config_is_made(options, message):
    with pytest.raises(TrainingInputError, match=message):
        TrainConfig.from_dict(options)


def test_good_options_and_a_single_data_path_are_kept():
    cfg = TrainConfig.from_dict({
        "data": "data/squad-v1.1-dev-part-a.json", "expansion": "front", "expansion_params": {"k": 2},
        "stages": [{"kind": "longdoc", "steps": 3, "lr": 1e-3}], "lexical_prior": 2, "warmup_ratio": 0,
    })
    assert cfg.data == ["data/squad-v1.1-dev-part-a.json"]  # one path, not one per character
    assert cfg.stages == [StageConfig("longdoc", 3, lr=1e-3)] and cfg.front_k == 2
    assert TrainConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
