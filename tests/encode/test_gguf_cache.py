"""The GGUF cache: one dequantised copy per GGUF content, wherever the file is installed."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from conftest import requires_smollm2

from landmark_rag.encode.models.fingerprint import file_digest
from landmark_rag.encode.models.loading import (
    _adopt_location_keyed,
    _gguf_cache_path,
    _location_keyed_path,
    _prune_location_keyed,
    _same_weights,
    materialise_gguf,
)
from landmark_rag.encode.models.registry import ModelSource
from landmark_rag.staging import set_aside


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


def _entry(folder: Path, weights: bytes | None = b"W" * 64, marked: bool = False) -> Path:
    folder.mkdir(parents=True)
    if weights is not None:
        (folder / "config.json").write_text("{}")
        (folder / "model.safetensors").write_bytes(weights)
    if marked:
        (folder / "gguf.sha256").write_text("0" * 64 + "\n")
    return folder


def _age(folder: Path, days: float = 2) -> None:
    then = time.time() - days * 24 * 3600
    for p in (folder, *folder.iterdir()):
        os.utime(p, (then, then))


def test_old_copies_of_the_same_weights_are_pruned_and_nothing_else(tmp_path: Path) -> None:
    root = tmp_path / "gguf"
    target = _entry(root / "Model.Q4_1-0123456789abcdef", marked=True)
    copies = [_entry(root / "Model.Q4_1-aaaaaaaaaaaaaaaa"), _entry(root / "Model.Q4_1-bbbbbbbbbbbbbbbb")]
    incomplete = _entry(root / "Model.Q4_1-9999999999999999", weights=None)  # an interrupted release's
    other_bytes = _entry(root / "Model.Q4_1-8888888888888888", weights=b"V" * 64)  # some env's stores' bytes
    other_version = _entry(root / "Model.Q4_1-cccccccccccccccc", weights=b"U" * 64, marked=True)
    other_model = _entry(root / "Other.Q4_1-dddddddddddddddd")
    not_an_entry = _entry(root / "Model.Q4_1-notes")
    in_progress = _entry(root / ".tmp-Model.Q4_1-eeee")

    # just made: an earlier release's process may be loading from them, so they stay for now
    assert _prune_location_keyed(target) == []
    assert all(d.is_dir() for d in (*copies, incomplete))

    for d in root.iterdir():
        _age(d)
    removed = _prune_location_keyed(target)

    assert sorted(removed) == sorted([*copies, incomplete])
    assert not any(d.exists() for d in removed)
    kept = (target, other_bytes, other_version, other_model, not_an_entry, in_progress)
    assert all(d.is_dir() for d in kept)
    assert sorted(p.name for p in root.iterdir()) == sorted(d.name for d in kept)  # no claimed leftovers


def test_an_entry_is_claimed_by_one_process_only(tmp_path: Path) -> None:
    entry = _entry(tmp_path / "gguf" / "Model.Q4_1-aaaaaaaaaaaaaaaa")
    first = set_aside(entry, ".claim-")
    assert first is not None and first.parent == entry.parent and not entry.exists()
    assert (first / "model.safetensors").is_file()
    assert set_aside(entry, ".claim-") is None  # the other adopter or pruner backs off


def test_an_environment_whose_copy_lost_the_content_key_keeps_its_own_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Environments A and B each had an entry from before the content key; A upgraded first and
    # its copy became the shared entry. B's stores fingerprinted B's copy.
    monkeypatch.setenv("LANDMARK_RAG_CACHE", str(tmp_path / "cache"))
    a = _gguf(tmp_path / "venv-a", b"GGUF" + b"\x06" * 4096)
    b = _gguf(tmp_path / "venv-b", b"GGUF" + b"\x06" * 4096)
    _entry(_location_keyed_path(a), weights=b"A's dequantisation")
    own_b = _entry(_location_keyed_path(b), weights=b"B's dequantisation")
    _age(own_b)
    shared = materialise_gguf(a)
    assert shared == _gguf_cache_path(a) == _gguf_cache_path(b)
    assert own_b.is_dir()  # other bytes: not pruned although old

    assert materialise_gguf(b) == own_b  # B keeps loading the weights its stores recorded
    assert (own_b / "gguf.sha256").is_file() and materialise_gguf(b) == own_b
    assert _prune_location_keyed(shared, grace_s=0) == []  # marked: kept
    assert materialise_gguf(a) == shared

    # The normal case, identical bytes: the environment's old copy goes, the shared one serves
    c = _gguf(tmp_path / "venv-c", b"GGUF" + b"\x06" * 4096)
    own_c = _entry(_location_keyed_path(c), weights=b"A's dequantisation")
    assert materialise_gguf(c) == shared and not own_c.exists()
    assert not [p for p in shared.parent.iterdir() if p.name.startswith(".")]


def test_an_adopter_that_loses_the_race_puts_its_copy_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANDMARK_RAG_CACHE", str(tmp_path / "cache"))
    source = _gguf(tmp_path / "venv", b"GGUF" + b"\x07" * 4096)
    old = _entry(_location_keyed_path(source), weights=b"mine")
    target = _entry(_gguf_cache_path(source), weights=b"theirs", marked=True)  # made meanwhile
    assert _adopt_location_keyed(source, target)  # the target is there: the load can go on
    assert (old / "model.safetensors").read_bytes() == b"mine" and not (old / "gguf.sha256").exists()
    assert materialise_gguf(source) == old  # and, holding other bytes, it is what loads here


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


def test_an_entry_another_process_takes_mid_comparison_is_neither_served_nor_fatal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from landmark_rag.encode.models import fingerprint, loading

    monkeypatch.setenv("LANDMARK_RAG_CACHE", str(tmp_path / "cache"))
    source = _gguf(tmp_path / "venv", b"GGUF" + b"\x08" * 4096)
    target = _entry(_gguf_cache_path(source), weights=b"shared", marked=True)
    old = _entry(_location_keyed_path(source), weights=b"other")
    real = loading.weights_fingerprint

    def taken_meanwhile(locations):  # a prune or an adopt elsewhere moves it first
        shutil.rmtree(old, ignore_errors=True)
        return real(locations)

    monkeypatch.setattr(loading, "weights_fingerprint", taken_meanwhile)
    assert materialise_gguf(source) == target  # not the folder that is gone
    monkeypatch.setattr(loading, "weights_fingerprint", real)

    def vanished(path: Path) -> str:
        raise FileNotFoundError(path)

    monkeypatch.setattr(fingerprint, "file_digest", vanished)
    assert not _same_weights(target, target)  # unreadable: never proven identical, never pruned
