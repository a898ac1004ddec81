"""Staging folders publish with the permissions of an ordinary folder, not mkdtemp's 0700."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from landmark_rag.staging import remove_leftovers, staging_dir


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


def test_leftovers_of_killed_writers_are_removed_once_old_and_nothing_else(tmp_path: Path) -> None:
    crashed = staging_dir(tmp_path)
    (crashed / "model.safetensors").write_bytes(b"half")
    claimed = staging_dir(tmp_path, prefix=".claim-")
    entry = tmp_path / "Model-0123456789abcdef"  # a live entry: never a leftover, however old
    entry.mkdir()
    stray_file = tmp_path / ".tmp-file"
    stray_file.write_text("not a folder")
    old_entry = tmp_path / "Model-fedcba9876543210"
    old_entry.mkdir()
    time.sleep(1.2)  # ages are compared with ctime too, which only the clock can age
    in_progress = staging_dir(tmp_path)  # another process is writing it now
    just_claimed = tmp_path / ".claim-0000"
    old_entry.rename(just_claimed)  # a rename keeps the mtime: the ctime says it is fresh

    removed = remove_leftovers(tmp_path, (".tmp-", ".claim-"), older_than_s=1.0)

    assert sorted(removed) == sorted([crashed, claimed])
    assert in_progress.is_dir() and just_claimed.is_dir() and entry.is_dir() and stray_file.is_file()
    assert remove_leftovers(tmp_path / "absent", (".tmp-",)) == []
