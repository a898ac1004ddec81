"""A store written by a released landmark-rag opens, searches and re-indexes unchanged.

``tests/data/release_store.zip`` was written by commit 64e6a1b and ``release_store.json``
holds what that commit answered on it (``tests/data/make_release_store.py``, README there).
The on-disk format and every stored key value must keep meaning the same thing: a user's
existing store is not re-indexed on upgrade.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from conftest import requires_mpnet
from typer.testing import CliRunner

from landmark_rag import LandmarkIndex
from landmark_rag.cli import _register, app

DATA = Path(__file__).resolve().parents[1] / "data"
EXPECTED = json.loads((DATA / "release_store.json").read_text())


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    with zipfile.ZipFile(DATA / "release_store.zip") as zf:
        zf.extractall(tmp_path / "store")
    return tmp_path / "store"


def _passages(index: LandmarkIndex, mode: str, question: str) -> list[dict]:
    return [
        {"id": p.id, "doc_id": p.doc_id, "start": p.start, "end": p.end, "score": p.score, "text": p.text}
        for p in index.search(question, k=3, mode=mode)
    ]


def test_release_store_opens_searches_and_reindexes(db: Path) -> None:
    # the model is the one the store records; on the CPU, where the release's scores were recorded
    # (fp32): a GPU's default bf16 weights move them by far more than 1e-5
    index = LandmarkIndex.open(db, device="cpu")
    assert index.encoder.model_name == EXPECTED["identity"]["model_name"]
    assert index.store.identity() == EXPECTED["identity"]
    assert index.store.documents(include_incomplete=True) == EXPECTED["documents"]
    assert index.store.count_sentences() == EXPECTED["sentences"]
    for mode, searches in EXPECTED["searches"].items():
        for question, want in searches.items():
            got = _passages(index, mode, question)
            assert [{k: v for k, v in p.items() if k != "score"} for p in got] == [
                {k: v for k, v in p.items() if k != "score"} for p in want
            ], (mode, question)
            assert [p["score"] for p in got] == pytest.approx([p["score"] for p in want], abs=1e-5)

    calls: list[list[str]] = []

    def encode(texts: list[str], doc_ids: list[str]):
        calls.append(list(doc_ids))
        return index.encoder.encode_documents(texts, doc_ids)

    titles = sorted(EXPECTED["texts"])
    texts = [EXPECTED["texts"][t] for t in titles]
    metadatas = [EXPECTED["metadatas"][t] for t in titles]
    assert index.add_texts(texts, ids=titles, metadatas=metadatas, encode=encode) == titles
    assert calls == []  # unchanged text and metadata: nothing encoded, nothing written
    assert index.store.documents(include_incomplete=True) == EXPECTED["documents"]

    changed = EXPECTED["texts"]["Oxygen"] + "\n\nThe Brandt observatory measured oxygen on Mount Kessel in 1931."
    index.add_texts([changed], ids=["Oxygen"], metadatas=[EXPECTED["metadatas"]["Oxygen"]], encode=encode)
    assert calls == [["Oxygen"]]
    records = index.store.documents(include_incomplete=True)
    assert records["Oxygen"]["doc_version"] != EXPECTED["documents"]["Oxygen"]["doc_version"]
    assert records["Oxygen"]["n_sentences"] == EXPECTED["documents"]["Oxygen"]["n_sentences"] + 1
    assert {k: v for k, v in records.items() if k != "Oxygen"} == {
        k: v for k, v in EXPECTED["documents"].items() if k != "Oxygen"
    }
    assert index.store.count_sentences() == EXPECTED["sentences"] + 1  # the old version is gone
    top = index.search("Where was oxygen measured in 1931?", k=1)[0]
    assert top.doc_id == "Oxygen" and "Mount Kessel" in top.text
    assert changed[top.start : top.end] == top.text


def test_release_store_info_reads_the_same(db: Path) -> None:
    _register()
    result = CliRunner().invoke(app, ["info", "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    info = {k: v for k, v in json.loads(result.stdout).items() if k not in ("store", "gguf_cache")}
    # the default model was retrained since; the store is read with the release it was built
    # with, which info names (the collection's own record is unchanged)
    assert info.pop("model_source") == "landmark-minilm-v1"
    assert info == {k: v for k, v in EXPECTED["info"].items() if k != "model_source"}


def test_a_new_store_gets_the_current_default_and_the_release_store_keeps_its_own(db: Path, tmp_path: Path) -> None:
    from landmark_rag.encode.models.loading import packaged_version
    old = LandmarkIndex.open(db)
    new = LandmarkIndex.open(tmp_path / "new")
    new.add_texts(["A lighthouse guides ships at night."], ids=["x"])
    old_fp = old.encoder.config.weights_fingerprint
    new_fp = new.encoder.config.weights_fingerprint
    assert old_fp != new_fp and old.encoder.model_name == new.encoder.model_name == "landmark-minilm"
    assert packaged_version("landmark-minilm", old_fp) == "landmark-minilm-v1"
    assert packaged_version("landmark-minilm", new_fp) == "landmark-minilm"
    assert packaged_version("landmark-minilm", "0" * 16) is None


@pytest.mark.parametrize("name, release", [
    pytest.param(name, release, marks=[requires_mpnet] if "mpnet" in name else [])
    for name, releases in __import__(
        "landmark_rag.encode.models.registry", fromlist=["PREVIOUS_VERSIONS"]
    ).PREVIOUS_VERSIONS.items() for release in releases
])
def test_every_kept_release_ships_and_is_found_by_its_weights(name: str, release: str) -> None:
    """Each retrained packaged model keeps its earlier release: installed, with other weights
    than the current one, and the release a store with those weights loads."""
    from landmark_rag.encode.models.fingerprint import weights_fingerprint
    from landmark_rag.encode.models.loading import _locate, packaged_version
    from landmark_rag.encode.models.registry import packaged_model, resolve

    assert packaged_model(release) is not None
    fingerprints = {}
    for candidate in (name, release):
        path, adapter_dir, _ = _locate(resolve(candidate))
        fingerprints[candidate] = weights_fingerprint([path, adapter_dir])
    assert fingerprints[name] != fingerprints[release]
    assert packaged_version(name, fingerprints[release]) == release
    assert packaged_version(name, fingerprints[name]) == name
