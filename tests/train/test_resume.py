"""A run interrupted after a checkpoint and resumed from it ends exactly where an uninterrupted
run of the same config ends: same weights, same losses (tiny random BERT, real sample data)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from landmark_rag import LandmarkEncoder
from landmark_rag.train import StageConfig, TrainConfig, Trainer, load_articles
from landmark_rag.train.config import TrainingInputError
from landmark_rag.train.trainer import TRAINER_STATE

pytestmark = pytest.mark.usefixtures("one_thread")


def _run(
    tiny_dir: Path, data: Path, out: Path, *, lora: bool, new_lmk: bool, resume: Path | None = None,
    save_every: int = 3, rates: list[float] | None = None,
):
    pooling = "landmark" if new_lmk else "mean"
    # bit-exact resume is a CPU promise (docs/training.md): CUDA kernels need not repeat bit for bit
    cfg = TrainConfig(device="cpu",
        base_model=str(tiny_dir), output_dir=str(out), pooling=pooling, query_pooling="mean", new_lmk_token=new_lmk,
        data=[str(data)], lora=lora, lora_r=4, lr=3e-3, max_length=64, seed=2, save_every=save_every, warmup_ratio=0.3,
        stages=[StageConfig("longdoc", 4, examples_per_batch=2, queries_per_example=3),
                StageConfig("longdoc", 3, examples_per_batch=2, queries_per_example=2, lr=1e-3)],
    )
    encoder = LandmarkEncoder.from_pretrained(
        str(tiny_dir), pooling=pooling, query_pooling="mean", max_length=64, device="cpu"
    )
    trainer = Trainer(encoder, cfg, load_articles(cfg, encoder)[0])
    history = trainer.train(resume=resume)
    trainer.save(out)
    if rates is not None:
        rates.extend(h["lr"] for h in history if "lr" in h)
    return [h["loss"] for h in history if "loss" in h], out


@pytest.mark.parametrize(("lora", "new_lmk"), [(True, False), (True, True), (False, False)])
def test_resumed_run_equals_the_uninterrupted_one(tiny_dir, sample_set, tmp_path, lora, new_lmk):
    full, out = _run(tiny_dir, sample_set, tmp_path / "full", lora=lora, new_lmk=new_lmk)
    checkpoint = out / "checkpoints" / "step-3"  # inside the first stage
    assert (checkpoint / TRAINER_STATE).is_file() and (out / "checkpoints" / "step-6").is_dir()
    resumed, out2 = _run(tiny_dir, sample_set, tmp_path / "resumed", lora=lora, new_lmk=new_lmk, resume=checkpoint)
    assert resumed == full  # the first 3 come from the checkpoint's history, the rest are recomputed
    weights = "adapter_model.safetensors" if lora else "model.safetensors"
    a, b = load_file(str(out / weights)), load_file(str(out2 / weights))
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=1e-6)
    history = json.loads((out2 / "train_history.json").read_text())
    assert any(h.get("resumed_from") == str(checkpoint) for h in history)


def test_resume_from_a_model_directory_is_refused(tiny_dir, sample_set, tmp_path):
    _, out = _run(tiny_dir, sample_set, tmp_path / "full", lora=True, new_lmk=False)
    with pytest.raises(TrainingInputError, match="not a training checkpoint"):
        _run(tiny_dir, sample_set, tmp_path / "again", lora=True, new_lmk=False, resume=out)


def test_a_run_resumed_at_a_stage_boundary_starts_the_next_stages_schedule(tiny_dir, sample_set, tmp_path):
    """A checkpoint taken as a stage ends resumes into the next stage with that stage's own
    schedule (its warm-up, its peak rate), not the finished schedule of the stage before."""
    full_rates: list[float] = []
    full, out = _run(tiny_dir, sample_set, tmp_path / "full", lora=True, new_lmk=False, save_every=4, rates=full_rates)
    checkpoint = out / "checkpoints" / "step-4"  # the first stage's last step
    rates: list[float] = []
    resumed, _ = _run(tiny_dir, sample_set, tmp_path / "resumed", lora=True, new_lmk=False, resume=checkpoint,
                      save_every=4, rates=rates)
    assert rates == full_rates and max(rates[4:]) > 0  # the second stage trains, at its own rates
    assert resumed == full


def test_resuming_with_other_options_warns_and_names_them(tiny_dir, sample_set, tmp_path):
    _, out = _run(tiny_dir, sample_set, tmp_path / "full", lora=True, new_lmk=False)
    cfg = TrainConfig.from_dict(json.loads((out / "checkpoints" / "step-3" / "train_config.json").read_text()))
    for changes, warned in [({"threads": 1, "save_every": 0, "output_dir": str(tmp_path / "r1")}, None),
                            ({"lr": 1e-3, "seed": 5, "output_dir": str(tmp_path / "r2")}, "lr, seed")]:
        again = TrainConfig.from_dict({**cfg.to_dict(), **changes})
        encoder = LandmarkEncoder.from_pretrained(str(tiny_dir), pooling="mean", query_pooling="mean", max_length=64,
                                                  device="cpu")
        trainer = Trainer(encoder, again, load_articles(again, encoder)[0])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            trainer._resume(out / "checkpoints" / "step-3")
        got = [str(w.message) for w in caught if "resuming" in str(w.message)]
        if warned is None:
            assert got == []
        else:
            assert len(got) == 1 and f"with other {warned} than it was trained with" in got[0]
