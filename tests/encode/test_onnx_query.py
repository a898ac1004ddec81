"""The ONNX query path (encode/export/onnx_query.py): same vectors as torch, trusted only when its
weights still match, and a cold CLI query that imports neither torch nor transformers.

Real models and a real store; the exporter is torch's own. Timings are in
benchmarks/cli_startup.py, not here.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from landmark_rag import LandmarkEncoder
from landmark_rag.cli import _register, app
from landmark_rag.encode.export.onnx_query import (
    OnnxQueryEncoder,
    export_path,
    export_query_model,
    exportable,
    load_query_encoder,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from test_cli_startup import cli_in_fresh_process

_register()

QUERIES = [
    "Who won Super Bowl 50?",
    "x",
    "What is the boiling point of liquid oxygen in kelvin, and who first described it? " * 40,  # past the window
    "Which NFL team represented the AFC?",
]


@pytest.fixture(autouse=True)
def onnx_on(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = tmp_path_factory.getbasetemp() / "onnx-cache"
    monkeypatch.setenv("LANDMARK_RAG_ONNX", "1")
    monkeypatch.setenv("LANDMARK_RAG_CACHE", str(cache))
    return cache


@pytest.fixture(scope="module")
def default_encoder() -> LandmarkEncoder:
    return LandmarkEncoder.from_pretrained(None, device="cpu")


def test_default_model_gives_the_torch_vectors(default_encoder: LandmarkEncoder, tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        folder = export_query_model(default_encoder, tmp_path)
    finally:
        os.umask(old)
    assert folder is not None and folder == export_path(default_encoder.config.identity(), tmp_path)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755  # a cache shared by a machine's users
    assert export_query_model(default_encoder, tmp_path) == folder  # a second call reuses it
    fast = load_query_encoder(default_encoder.config.identity(), tmp_path)
    assert isinstance(fast, OnnxQueryEncoder)
    assert fast.config.identity() == default_encoder.config.identity()
    np.testing.assert_allclose(fast.encode_queries(QUERIES), default_encoder.encode_queries(QUERIES), atol=1e-5)
    np.testing.assert_allclose(fast.encode_query(QUERIES[0]), default_encoder.encode_query(QUERIES[0]), atol=1e-5)
    assert fast.encode_queries([]).shape == (0, default_encoder.dim)
    assert fast.count_tokens(QUERIES[2]) == default_encoder.count_tokens(QUERIES[2])
    with pytest.raises(TypeError):
        fast.encode_queries("one string")


def test_landmark_query_pooling_and_instruction(tmp_path: Path) -> None:
    # query + [SEP] pooled at the landmark, with an instruction: the other branch of query_jobs
    enc = LandmarkEncoder.from_pretrained(
        "all-MiniLM-L6-v2", device="cpu", query_pooling="landmark", query_instruction="query: "
    )
    assert export_query_model(enc, tmp_path) is not None
    fast = load_query_encoder(enc.config.identity(), tmp_path)
    np.testing.assert_allclose(fast.encode_queries(QUERIES), enc.encode_queries(QUERIES), atol=1e-5)
    # another identity (other instruction) finds nothing
    other = {**enc.config.identity(), "query_instruction": "q: "}
    assert load_query_encoder(other, tmp_path) is None


def test_changed_or_missing_weights_are_not_trusted(default_encoder: LandmarkEncoder, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    folder = export_query_model(default_encoder, tmp_path)
    identity = default_encoder.config.identity()
    meta = json.loads((folder / "query.json").read_text())
    # the weight files it was exported from now hash differently (a retrained adapter)
    fake = tmp_path / "weights"
    fake.mkdir()
    (fake / "model.safetensors").write_bytes(b"not the same weights")
    (folder / "query.json").write_text(json.dumps({**meta, "weight_locations": [str(fake)]}))
    assert load_query_encoder(identity, tmp_path) is None
    # ... or are gone
    (folder / "query.json").write_text(json.dumps({**meta, "weight_locations": [str(tmp_path / "gone")]}))
    assert load_query_encoder(identity, tmp_path) is None
    # a damaged entry is ignored, not fatal
    (folder / "query.json").write_text("{not json")
    assert load_query_encoder(identity, tmp_path) is None
    (folder / "query.json").write_text(json.dumps(meta))
    assert load_query_encoder(identity, tmp_path) is not None
    monkeypatch.setenv("LANDMARK_RAG_ONNX", "0")  # switched off
    assert load_query_encoder(identity, tmp_path) is None
    # no fingerprint, no key: weights that match no file cannot be recognised later
    assert export_path({**identity, "weights_fingerprint": None}, tmp_path) is None


def test_an_export_follows_its_weights_to_a_new_place_and_a_damaged_one_is_made_again(
    default_encoder: LandmarkEncoder, tmp_path: Path
) -> None:
    folder = export_query_model(default_encoder, tmp_path)
    identity = default_encoder.config.identity()
    model_bytes = (folder / "model.onnx").stat().st_mtime_ns
    meta = json.loads((folder / "query.json").read_text())
    # the same weights were found elsewhere once (another environment, a cache folder moved)
    # and that place is gone now: cold queries cannot trust the export ...
    (folder / "query.json").write_text(json.dumps({**meta, "weight_locations": [str(tmp_path / "old-venv")]}))
    assert load_query_encoder(identity, tmp_path) is None
    # ... until the next load of the model points it at where the weights are now
    assert export_query_model(default_encoder, tmp_path) == folder
    assert json.loads((folder / "query.json").read_text()) == meta
    assert (folder / "model.onnx").stat().st_mtime_ns == model_bytes  # the graph was not exported again
    assert load_query_encoder(identity, tmp_path) is not None
    # an unreadable record: the export is made again, in the same place
    (folder / "query.json").write_text("{not json")
    assert export_query_model(default_encoder, tmp_path) == folder
    assert json.loads((folder / "query.json").read_text())["weight_locations"] == meta["weight_locations"]
    assert load_query_encoder(identity, tmp_path) is not None
    assert sorted(p.name for p in folder.parent.iterdir()) == [folder.name]  # nothing left aside
    # a file missing from the export: it is replaced, not exported again on every command
    (folder / "model.onnx").unlink()
    assert load_query_encoder(identity, tmp_path) is None
    assert export_query_model(default_encoder, tmp_path) == folder
    assert (folder / "model.onnx").is_file() and load_query_encoder(identity, tmp_path) is not None
    assert sorted(p.name for p in folder.parent.iterdir()) == [folder.name]


def test_what_is_not_exported(tmp_path: Path) -> None:
    lmk = LandmarkEncoder.from_pretrained("landmark-minilm-lmk", device="cpu")  # isolated landmarks
    assert not exportable(lmk) and export_query_model(lmk, tmp_path) is None
    quant = LandmarkEncoder.from_pretrained(None, device="cpu", quantize="int8")  # weights != files
    assert not exportable(quant)
    mem = LandmarkEncoder.from_pretrained("all-MiniLM-L6-v2", device="cpu")
    mem.add_landmark_token("[LMK]")  # weights changed in memory: no fingerprint
    assert not exportable(mem)


def test_cold_cli_query_skips_torch_and_matches(tmp_path: Path, excerpt_articles, onnx_on: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for art in excerpt_articles[:2]:
        (folder / f"{art.title}.txt").write_text(art.text[:3000], encoding="utf-8")
    db = tmp_path / "db"
    result = CliRunner().invoke(app, ["index", str(folder), "--db", str(db), "--quiet"])
    assert result.exit_code == 0, result.output
    assert list((onnx_on / "onnx-query").iterdir()), "index exports the query model"
    question = excerpt_articles[0].questions[0].text

    code, fast_out, heavy = cli_in_fresh_process("query", question, "--db", db, "-k", "3", "--json")
    assert code == 0, fast_out
    assert "torch" not in heavy and "transformers" not in heavy
    fast = json.loads(fast_out[: fast_out.rindex("]") + 1])

    monkeypatch.setenv("LANDMARK_RAG_ONNX", "0")  # the same query on torch
    code, slow_out, heavy = cli_in_fresh_process("query", question, "--db", db, "-k", "3", "--json")
    assert code == 0 and "torch" in heavy, slow_out
    slow = json.loads(slow_out[: slow_out.rindex("]") + 1])
    assert [(p["doc_id"], p["start"], p["end"]) for p in fast] == [(p["doc_id"], p["start"], p["end"]) for p in slow]
    assert [p["score"] for p in fast] == pytest.approx([p["score"] for p in slow], abs=1e-4)


def test_search_settings_come_from_the_model_as_it_is_now(tmp_path: Path) -> None:
    """A release may change how a model searches (its ``fusion``, its expansion) without touching
    its weights: a cold query on an export written before must search as the torch path would."""
    import shutil

    from landmark_rag.encode.models.registry import DEFAULT_MODEL, packaged_model

    model = tmp_path / "model"
    shutil.copytree(packaged_model(DEFAULT_MODEL), model)
    encoder = LandmarkEncoder.from_pretrained(str(model), device="cpu")
    folder = export_query_model(encoder, tmp_path / "cache")
    assert folder is not None
    config = json.loads((model / "landmark_config.json").read_text())
    config["fusion"] = {**config["fusion"], "lexical_context": 0.25, "weight": 0.4}
    config["expansion"] = "front"
    (model / "landmark_config.json").write_text(json.dumps(config))
    fast = load_query_encoder(encoder.config.identity(), tmp_path / "cache")
    assert fast is not None  # same weights: still trusted
    assert fast.config.fusion == config["fusion"] and fast.config.expansion == "front"
    assert fast.config.identity() == encoder.config.identity()
    torch_now = LandmarkEncoder.from_pretrained(str(model), device="cpu")
    assert (fast.config.fusion, fast.config.expansion) == (torch_now.config.fusion, torch_now.config.expansion)


def test_a_plain_model_searches_with_the_plain_defaults(tmp_path: Path) -> None:
    """A plain model has no config of its own: its export searches with what the torch path
    gives plain bidirectional models, not with whatever the export froze."""
    plain = LandmarkEncoder.from_pretrained("all-MiniLM-L6-v2", device="cpu")
    folder = export_query_model(plain, tmp_path)
    assert folder is not None
    meta = json.loads((folder / "query.json").read_text())
    meta["config"] = {**meta["config"], "expansion": "front", "fusion": {"mode": "hybrid"}}  # an older export's
    (folder / "query.json").write_text(json.dumps(meta))
    fast = load_query_encoder(plain.config.identity(), tmp_path)
    assert fast is not None
    assert (fast.config.expansion, fast.config.fusion) == (plain.config.expansion, plain.config.fusion) == ("surround", {})
