"""Fixtures shared by the training tests."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "training-sample"


@pytest.fixture
def one_thread():
    """One torch thread for tests on tiny (32-wide) models: they gain nothing from threads, and
    on a busy machine the extra threads spin-wait. Modules opt in with
    ``pytestmark = pytest.mark.usefixtures("one_thread")``; real-model tests keep all threads."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def sample_set(tmp_path_factory) -> Path:
    """The hand-written training sample (tests/data/training-sample) prepared as a training set."""
    from landmark_rag.train.prepare import prepare

    out = tmp_path_factory.mktemp("sample-set")
    prepare(SAMPLE / "sample.json", SAMPLE / "raw", out, show_progress=False)
    return out


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    """A random 2-layer, 32-wide BERT with all-MiniLM-L6-v2's tokenizer, saved as a model directory."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    from landmark_rag.encode.models.registry import resolve

    path = tmp_path_factory.mktemp("tiny")
    tok = AutoTokenizer.from_pretrained(resolve("all-MiniLM-L6-v2").path)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=128)).save_pretrained(path)
    tok.save_pretrained(path)
    return path
