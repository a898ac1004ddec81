"""Staging folders publish with the permissions of an ordinary folder, not mkdtemp's 0700."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from landmark_rag.staging import staging_dir


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_staging_folder_follows_the_umask(tmp_path: Path, umask_022: None) -> None:
    shared = staging_dir(tmp_path)
    assert shared.parent == tmp_path and shared.name.startswith(".tmp-")
    assert _mode(shared) == 0o755  # readable by the other users of a shared cache
    os.umask(0o077)  # restored by the fixture
    private = staging_dir(tmp_path, prefix=".x.")
    assert private.name.startswith(".x.") and _mode(private) == 0o700
    assert len({staging_dir(tmp_path) for _ in range(20)}) == 20  # never the same folder twice


def test_a_missing_parent_is_an_error_not_a_new_tree(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        staging_dir(tmp_path / "absent")
    assert not (tmp_path / "absent").exists()
