"""The GGUF cache: one dequantised copy per GGUF content, wherever the file is installed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import requires_smollm2

from landmark_rag.encode.models.fingerprint import file_digest
from landmark_rag.encode.models.loading import (
    _gguf_cache_path,
    _location_keyed_path,
    _prune_location_keyed,
    materialise_gguf,
)
from landmark_rag.encode.models.registry import ModelSource


def _gguf(folder: Path, content: bytes, name: str = "Model.Q4_1.gguf") -> ModelSource:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(content)
    return ModelSource(str(folder), gguf_file=name)


def test_the_same_file_in_two_environments_shares_one_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each virtual environment installs the packaged GGUF at its own path; keying the cache by
    # location gave each of them its own half-gigabyte copy.
    monkeypatch.setenv("LANDMARK_RAG_CACHE", str(tmp_path / "cache"))
    first = _gguf(tmp_path / "venv-a" / "site-packages", b"GGUF" + b"\x01" * 4096)
    second = _gguf(tmp_path / "venv-b" / "site-packages", b"GGUF" + b"\x01" * 4096)
    os.utime(Path(second.path) / "Model.Q4_1.gguf", ns=(1, 1))  # another install time, too
    assert _gguf_cache_path(first) == _gguf_cache_path(second)
    assert _gguf_cache_path(first).parent == tmp_path / "cache" / "gguf"
    assert _gguf_cache_path(first).name.startswith("Model.Q4_1-")


def test_other_bytes_or_another_name_get_another_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANDMARK_RAG_CACHE", str(tmp_path / "cache"))
    base = _gguf(tmp_path / "a", b"GGUF" + b"\x01" * 4096)
    changed = _gguf(tmp_path / "b", b"GGUF" + b"\x01" * 4095 + b"\x02")
    renamed = _gguf(tmp_path / "c", b"GGUF" + b"\x01" * 4096, name="Other.Q4_1.gguf")
    paths = {_gguf_cache_path(s) for s in (base, changed, renamed)}
    assert len(paths) == 3


def test_a_file_changed_in_place_gets_a_new_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANDMARK_RAG_CACHE", str(tmp_path / "cache"))
    source = _gguf(tmp_path / "a", b"GGUF" + b"\x01" * 4096)
    before = _gguf_cache_path(source)
    (Path(source.path) / "Model.Q4_1.gguf").write_bytes(b"GGUF" + b"\x03" * 5000)
    assert _gguf_cache_path(source) != before


def test_location_keyed_entries_of_the_same_name_are_pruned_and_nothing_else(tmp_path: Path) -> None:
    root = tmp_path / "gguf"
    target = root / "Model.Q4_1-0123456789abcdef"
    legacy = [root / "Model.Q4_1-aaaaaaaaaaaaaaaa", root / "Model.Q4_1-bbbbbbbbbbbbbbbb"]
    other_version = root / "Model.Q4_1-cccccccccccccccc"  # marked: another installed GGUF's entry
    other_model = root / "Other.Q4_1-dddddddddddddddd"
    not_an_entry = root / "Model.Q4_1-notes"
    in_progress = root / ".tmp-Model.Q4_1-eeee"
    for d in (target, *legacy, other_version, other_model, not_an_entry, in_progress):
        d.mkdir(parents=True)
        (d / "config.json").write_text("{}")
    for d in (target, other_version):
        (d / "gguf.sha256").write_text("0" * 64 + "\n")

    # just made: an earlier release's process may be loading from them, so they stay for now
    assert _prune_location_keyed(target) == []
    assert all(d.is_dir() for d in legacy)

    removed = _prune_location_keyed(target, grace_s=0)

    assert sorted(removed) == sorted(legacy)
    assert not any(d.exists() for d in legacy)
    assert all(d.is_dir() for d in (target, other_version, other_model, not_an_entry, in_progress))


def test_an_entry_an_earlier_release_made_of_this_file_is_renamed_not_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its bytes are what stores written with it fingerprinted; dequantising again (with another
    # transformers) could write others. The file here is no real GGUF: dequantising would fail.
    monkeypatch.setenv("LANDMARK_RAG_CACHE", str(tmp_path / "cache"))
    source = _gguf(tmp_path / "venv" / "site-packages", b"GGUF" + b"\x05" * 4096)
    old = _location_keyed_path(source)
    old.mkdir(parents=True)
    (old / "config.json").write_text('{"model_type": "llama"}')
    (old / "model.safetensors").write_bytes(b"the weights stores were written with")

    entry = materialise_gguf(source)

    assert entry == _gguf_cache_path(source) != old and not old.exists()
    assert (entry / "model.safetensors").read_bytes() == b"the weights stores were written with"
    assert (entry / "gguf.sha256").read_text().strip() == file_digest(Path(source.path) / "Model.Q4_1.gguf")
    assert materialise_gguf(source) == entry


@requires_smollm2
def test_the_packaged_smollm2_entry_records_its_source(smollm2_dir: Path, tmp_path: Path) -> None:
    from landmark_rag.encode.models.registry import resolve

    source = resolve("SmolLM2-135M-Instruct")
    gguf = Path(source.path) / str(source.gguf_file)
    assert smollm2_dir == _gguf_cache_path(source)
    assert (smollm2_dir / "gguf.sha256").read_text().strip() == file_digest(gguf)
    # A copy of the same file elsewhere (another environment's install) finds the same entry.
    copy = tmp_path / "elsewhere" / gguf.name
    copy.parent.mkdir()
    try:
        os.link(gguf, copy)
    except OSError:
        shutil.copyfile(gguf, copy)
    assert _gguf_cache_path(ModelSource(str(copy.parent), gguf_file=copy.name)) == smollm2_dir
