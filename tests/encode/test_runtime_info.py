"""``LandmarkEncoder.runtime()`` and ``landmark-rag info --runtime``: each field is read off what
the encoder will really do, so changing the setting behind it changes the field."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from landmark_rag.cli import _register, app
from landmark_rag.encode import LandmarkEncoder
from landmark_rag.encode.runtime import precision
from landmark_rag.encode.runtime import process as prepare_process
from landmark_rag.encode.runtime.describe import RuntimeInfo
from landmark_rag.segment.tokens import FLASH_ENV, text_tokenizer

_register()


def test_fields_follow_the_encoder(tiny_encoder) -> None:
    enc = tiny_encoder(pooling="mean", max_length=64)
    info = enc.runtime()
    assert isinstance(info, RuntimeInfo)
    assert info.device == "cpu" and info.weights == "float32" and info.queries == "float32"
    assert info.attention == enc.model.config._attn_implementation
    assert (info.window_tokens, info.window_overlap) == (enc.max_length, enc.overlap) == (64, enc.overlap)
    assert info.torch_threads == torch.get_num_threads()
    assert info.compiled is False
    assert enc.compile().runtime().compiled is True  # torch.compile is lazy: nothing compiles here
    assert json.loads(json.dumps(info.as_dict()))["device"] == "cpu"


def test_document_precision_says_autocast(tiny_bert_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(precision.ENV_SWITCH, raising=False)
    monkeypatch.setattr(precision, "native_cpu_bf16", lambda: True)
    bf16 = LandmarkEncoder.from_pretrained(tiny_bert_dir, device="cpu", pooling="mean")
    assert bf16.runtime().documents == "bfloat16 autocast over float32 weights"
    assert bf16.runtime().queries == "float32"  # queries run as loaded
    monkeypatch.setattr(precision, "native_cpu_bf16", lambda: False)
    fp32 = LandmarkEncoder.from_pretrained(tiny_bert_dir, device="cpu", pooling="mean")
    assert fp32.runtime().documents == "float32"


def test_int8_weights(tiny_bert_dir: Path) -> None:
    enc = LandmarkEncoder.from_pretrained(tiny_bert_dir, device="cpu", pooling="mean", quantize="int8")
    assert enc.runtime().weights == "int8 dynamic"


def test_workers_follow_settings_and_environment(tiny_encoder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(prepare_process.ENV_SWITCH, raising=False)
    monkeypatch.delenv(prepare_process.ENV_WORKERS, raising=False)
    enc = tiny_encoder(pooling="mean")
    assert enc.runtime().preparation_workers == 0  # a CPU prepares in the calling process
    enc.prepare_process, enc.prepare_workers = True, 3
    assert enc.runtime().preparation_workers == 3
    monkeypatch.setenv(prepare_process.ENV_SWITCH, "0")
    assert enc.runtime().preparation_workers == 0
    enc.workers = 1
    assert enc.runtime().concurrent_batches == 1


def test_tokenizer_names_the_code_that_tokenises(tiny_encoder, monkeypatch: pytest.MonkeyPatch) -> None:
    enc = tiny_encoder(pooling="mean")
    flash = importlib.util.find_spec("flash_tokenizer") is not None
    name = enc.runtime().tokenizer
    assert "tokenizers" in name and ("flash-tokenizer" in name) == (flash and text_tokenizer(enc.tokenizer).twin.flash() is not None)
    monkeypatch.setenv(FLASH_ENV, "0")
    other = copy.deepcopy(enc.tokenizer)  # a tokenizer object of its own: its twin probes afresh
    enc.tokenizer = other
    assert "flash-tokenizer" not in enc.runtime().tokenizer


def test_cli_runtime_without_a_store(tmp_path: Path, tiny_bert_dir: Path) -> None:
    # the CPU named: without --device a CUDA machine loads the model there, in bf16
    where = ["--db", str(tmp_path / "none"), "--model", str(tiny_bert_dir), "--device", "cpu"]
    result = CliRunner().invoke(app, ["info", "--runtime", *where, "--json"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    assert info["device"] == "cpu" and info["weights"] == "float32" and info["window_tokens"] > 0
    assert not (tmp_path / "none").exists()  # looking never creates a store
    table = CliRunner().invoke(app, ["info", "--runtime", *where])
    assert table.exit_code == 0 and "preparation workers" in table.stdout
    # without --device: the machine's best device and its default precision (bf16 on CUDA)
    from landmark_rag.encode.models.loading import pick_device, pick_dtype

    best = pick_device(None)
    plain = CliRunner().invoke(app, ["info", "--runtime", *where[:4], "--json"])
    assert plain.exit_code == 0, plain.output
    got = json.loads(plain.stdout)
    assert (got["device"], got["weights"]) == (str(best), str(pick_dtype(best, None)).removeprefix("torch."))


def test_cli_runtime_of_a_missing_model_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["info", "--runtime", "--db", str(tmp_path / "none"), "--model", str(tmp_path / "no-model")]
    )
    assert result.exit_code == 1 and "Traceback" not in result.output
