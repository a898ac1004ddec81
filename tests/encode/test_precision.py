"""bf16 document windows on CPU (encode/runtime/precision.py): when they apply, what they change, what not."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from landmark_rag.encode.encoder import LandmarkEncoder
from landmark_rag.encode.runtime import precision

TEXT = " ".join(
    f"Sentence {i} says that the castle's {w} wall was rebuilt in {1200 + 7 * i} after a fire."
    for i, w in enumerate(["north", "south", "east", "west", "inner", "outer"] * 8)
)


@pytest.fixture
def native(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(precision, "native_cpu_bf16", lambda: True)
    monkeypatch.delenv(precision.ENV_SWITCH, raising=False)


def test_default_is_bf16_only_for_an_unchosen_dtype_on_a_native_cpu(native: None, monkeypatch) -> None:
    cpu = torch.device("cpu")
    assert precision.default_document_autocast(cpu, None, None) is torch.bfloat16
    assert precision.default_document_autocast(cpu, "float32", None) is None  # the caller chose
    assert precision.default_document_autocast(cpu, None, "int8") is None  # int8 kernels are fp32-in
    assert precision.default_document_autocast(torch.device("meta"), None, None) is None
    monkeypatch.setenv(precision.ENV_SWITCH, "0")
    assert precision.default_document_autocast(cpu, None, None) is None
    monkeypatch.setattr(precision, "native_cpu_bf16", lambda: False)
    monkeypatch.delenv(precision.ENV_SWITCH)
    assert precision.default_document_autocast(cpu, None, None) is None  # emulated bf16 is slower


def test_from_pretrained_sets_it_and_dtype_float32_keeps_fp32(native: None) -> None:
    auto = LandmarkEncoder.from_pretrained("all-MiniLM-L6-v2", device="cpu", pooling="mean", max_length=64)
    fp32 = LandmarkEncoder.from_pretrained(
        "all-MiniLM-L6-v2", device="cpu", pooling="mean", max_length=64, dtype="float32"
    )
    assert auto.document_autocast is torch.bfloat16 and fp32.document_autocast is None
    # the weights stay fp32 either way: queries, the ONNX export and training read them
    assert next(auto.model.parameters()).dtype == torch.float32


@pytest.fixture(scope="module")
def pair() -> tuple[LandmarkEncoder, LandmarkEncoder]:
    fp32 = LandmarkEncoder.from_pretrained(
        "all-MiniLM-L6-v2", device="cpu", pooling="mean", max_length=64, dtype="float32"
    )
    bf16 = LandmarkEncoder(fp32.model, fp32.tokenizer, fp32.config, device=fp32.device)
    bf16.document_autocast = torch.bfloat16  # emulated where the CPU lacks bf16: slow, same numbers
    return fp32, bf16


def test_bf16_documents_are_close_to_fp32_and_queries_are_unchanged(pair) -> None:
    fp32, bf16 = pair
    a, b = fp32.encode_document(TEXT).embeddings, bf16.encode_document(TEXT).embeddings
    assert a.shape == b.shape and a.dtype == b.dtype == np.float32
    assert not np.array_equal(a, b)  # autocast really ran
    cos = (a * b).sum(1)
    assert cos.min() > 0.999
    np.testing.assert_array_equal(fp32.encode_query("Which wall burnt?"), bf16.encode_query("Which wall burnt?"))


def test_autocast_reaches_every_worker_thread(pair) -> None:
    # autocast state is per thread: entered around the pool, the workers would run fp32
    # (fp32 with 2 workers equals fp32 with 1 bit for bit: tests/encode/test_parallel.py)
    fp32, bf16 = pair
    texts = [TEXT, TEXT[: len(TEXT) // 2], TEXT[len(TEXT) // 3 :]]
    plain = fp32.encode_documents(texts, batch_size=1)
    bf16.workers = 2
    try:
        two = bf16.encode_documents(texts, batch_size=1)
    finally:
        bf16.workers = None
    for x, y in zip(plain, two, strict=True):
        assert not np.array_equal(x.embeddings, y.embeddings)  # every document went through bf16
        assert (x.embeddings * y.embeddings).sum(1).min() > 0.999


def test_cached_encoders_with_overrides_keep_the_precision(native: None, monkeypatch) -> None:
    # adapters, the CLI and Ray workers ask the cache for the store's settings as overrides
    from collections import OrderedDict

    from landmark_rag.encode.models import cache
    from landmark_rag.encode.models.cache import load_encoder

    monkeypatch.setattr(cache, "_BASE", OrderedDict())  # not the suite's fp32 encoders
    monkeypatch.setattr(cache, "_DERIVED", {})
    base = load_encoder("all-MiniLM-L6-v2", device="cpu")
    derived = load_encoder("all-MiniLM-L6-v2", device="cpu", pooling="mean", max_length=64)
    assert derived is not base and derived.model is base.model
    assert base.document_autocast is torch.bfloat16 and derived.document_autocast is torch.bfloat16


def test_training_validation_runs_fp32_and_leaves_the_encoder_as_it_was(native: None) -> None:
    from pathlib import Path

    from landmark_rag.train import TrainConfig, load_articles
    from landmark_rag.train.validation import validate

    data = Path(__file__).resolve().parents[2] / "data" / "squad-v1.1-dev-part-a.json"
    enc = LandmarkEncoder.from_pretrained("all-MiniLM-L6-v2", device="cpu", pooling="mean", max_length=64)
    assert enc.document_autocast is torch.bfloat16
    cfg = TrainConfig(base_model="all-MiniLM-L6-v2", data=[str(data)], train_articles="8:9", val_articles="")
    article = load_articles(cfg, enc)[0][0]
    seen: list[object] = []
    forward = enc._forward_pool

    def spy(batch, mode, model=None, documents=False):
        if documents:
            seen.append(enc.document_autocast)
        return forward(batch, mode, model, documents)

    enc._forward_pool = spy
    metrics = validate(enc, [article], max_questions=5)
    assert metrics["questions"] == 5 and seen and set(seen) == {None}  # a seeded run logs fp32 figures
    assert enc.document_autocast is torch.bfloat16  # and the caller's encoder is as it was


@pytest.mark.parametrize("pays", [True, False])
def test_bf16_is_used_only_where_it_was_timed_faster(monkeypatch: pytest.MonkeyPatch, pays: bool) -> None:
    """The CPU's flag is not enough: an Intel Xeon with AVX512-BF16 ran bf16 products at half
    fp32's speed, so the decision also needs the probe (``bf16_pays``) to say so."""
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: True, raising=False)
    monkeypatch.setattr(precision, "bf16_pays", lambda: pays)
    precision.native_cpu_bf16.cache_clear()
    try:
        assert precision.native_cpu_bf16() is pays
    finally:
        precision.native_cpu_bf16.cache_clear()


def test_the_probe_times_real_products() -> None:
    assert precision.bf16_pays(rows=64, width=32, reps=1) in (True, False)
