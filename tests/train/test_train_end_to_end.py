"""A tiny end-to-end training run: a randomly initialised 2-layer BERT built here, real SQuAD
articles, a few steps; the loss must fall and the saved checkpoint must reload (through
``LandmarkEncoder.from_pretrained``) with identical outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from landmark_rag import LandmarkEncoder
from landmark_rag.encode.models.registry import resolve
from landmark_rag.train import StageConfig, TrainConfig, Trainer, load_articles

DATA = Path(__file__).resolve().parents[2] / "data" / "squad-v1.1-dev-part-a.json"


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory) -> Path:
    from transformers import AutoTokenizer, BertConfig, BertModel

    path = tmp_path_factory.mktemp("tiny-bert")
    tok = AutoTokenizer.from_pretrained(resolve("all-MiniLM-L6-v2").path)
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=128,
    )
    BertModel(cfg).save_pretrained(path, safe_serialization=True)
    tok.save_pretrained(path)
    return path


def _run(tiny_model_dir: Path, tmp_path: Path, *, lora: bool, pooling: str) -> None:
    # every encoder on the CPU: on CUDA the trained encoder would run fp32 and its reload bf16
    # (the CUDA default), and vectors of two precisions do not agree to 2e-5
    cfg = TrainConfig(
        base_model=str(tiny_model_dir), output_dir=str(tmp_path / "out"), model_name="tiny-trained",
        pooling=pooling, query_pooling=pooling, data=[str(DATA)], train_articles="8:10", val_articles="",
        lora=lora, lora_r=4, lr=3e-3 if lora else 1e-3, max_length=64, temperature=0.1, warmup_ratio=0.0, seed=1,
        stages=[StageConfig(kind="longdoc", steps=25, examples_per_batch=2, queries_per_example=4)],
        device="cpu",
    )
    encoder = LandmarkEncoder.from_pretrained(
        str(tiny_model_dir), pooling=pooling, query_pooling=pooling, max_length=64, device="cpu"
    )
    train_articles, _ = load_articles(cfg, encoder)
    trainer = Trainer(encoder, cfg, train_articles)
    fixed = [next(trainer.builder(cfg.stages[0])) for _ in range(3)]

    def fixed_loss() -> float:
        trainer.model.eval()
        with torch.no_grad():
            return float(np.mean([trainer.batch_loss(b, cfg.stages[0])["loss"].item() for b in fixed]))

    before = fixed_loss()
    trainer.train()
    after = fixed_loss()
    assert after < before - 0.05, (before, after)

    out = trainer.save(cfg.output_dir)
    assert (out / "landmark_config.json").is_file()
    encoder.model.eval()
    text = train_articles[0].article.text[:1500]
    queries = [q.question for q in train_articles[0].article.questions[:5]]
    reloaded = LandmarkEncoder.from_pretrained(out, device="cpu")
    assert reloaded.config.model_name == "tiny-trained"
    assert reloaded.config.pooling == pooling and reloaded.max_length == 64
    a, b = encoder.encode_document(text), reloaded.encode_document(text)
    assert len(a) == len(b) > 3
    np.testing.assert_allclose(a.embeddings, b.embeddings, atol=2e-5)
    np.testing.assert_allclose(encoder.encode_queries(queries), reloaded.encode_queries(queries), atol=2e-5)
    # and training changed the model: the base model gives different vectors
    base = LandmarkEncoder.from_pretrained(
        str(tiny_model_dir), pooling=pooling, query_pooling=pooling, max_length=64, device="cpu"
    )
    assert not np.allclose(base.encode_document(text).embeddings, b.embeddings, atol=1e-3)
    if lora:
        assert not any(out.glob("model*.safetensors"))  # adapter only; base weights stay put
        # the peft-free merge (used when peft is not installed) gives the same model
        from landmark_rag.encode.models.lora import merge_lora

        plain = LandmarkEncoder.from_pretrained(
            str(tiny_model_dir), pooling=pooling, query_pooling=pooling, max_length=64, device="cpu"
        )
        merge_lora(plain.model, out)
        np.testing.assert_allclose(plain.encode_document(text).embeddings, b.embeddings, atol=2e-5)


def test_full_finetune_landmark_loss_falls_and_checkpoint_reloads(tiny_model_dir, tmp_path):
    _run(tiny_model_dir, tmp_path, lora=False, pooling="landmark")


def test_lora_mean_loss_falls_and_adapter_reloads(tiny_model_dir, tmp_path):
    _run(tiny_model_dir, tmp_path, lora=True, pooling="mean")


def test_same_seed_same_run(tiny_model_dir, tmp_path):
    def losses(seed: int) -> list[float]:
        cfg = TrainConfig(
            base_model=str(tiny_model_dir), output_dir=str(tmp_path / f"s{seed}"), pooling="mean", query_pooling="mean",
            data=[str(DATA)], train_articles="8:10", val_articles="", lora=True, lora_r=4, max_length=64, seed=seed,
            stages=[StageConfig(kind="longdoc", steps=4, examples_per_batch=2, queries_per_example=4)],
        )
        encoder = LandmarkEncoder.from_pretrained(str(tiny_model_dir), pooling="mean", query_pooling="mean", max_length=64)
        trainer = Trainer(encoder, cfg, load_articles(cfg, encoder)[0])
        return [h["loss"] for h in trainer.train() if "loss" in h]

    first = losses(3)
    assert first == losses(3)
    assert first != losses(4)
