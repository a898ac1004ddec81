"""A folder to build something in before renaming it into place.

Caches (dequantised GGUF models, ONNX query exports) and a store's lexical index are written
into a fresh folder beside their final place and then renamed there, so a reader never sees
half of one. ``tempfile.mkdtemp`` would do, except that it makes the folder readable by its
owner alone (mode 0700), and the rename publishes it with that mode: a cache shared by the
users of one machine (``LANDMARK_RAG_CACHE``) or a store written by a service account could
then not be read by anyone else. ``os.mkdir`` applies the process's umask like any folder
the user makes, and does so without touching the umask itself (which is process-wide, so
reading it by setting it would race with other threads).
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from pathlib import Path

#: A staging folder this old was left by a process that died mid-write (writes take seconds
#: to minutes), so it can go.
LEFTOVER_AGE_S = 24 * 3600


def staging_dir(parent: str | os.PathLike[str], prefix: str = ".tmp-") -> Path:
    """Create and return a new, uniquely named folder in ``parent`` (which must exist), with
    the permissions of an ordinary ``mkdir`` (``0o777`` less the umask)."""
    parent = Path(parent)
    for _ in range(100):
        path = parent / f"{prefix}{secrets.token_hex(6)}"
        try:
            os.mkdir(path, 0o777)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"no free name for a staging folder in {parent}")  # pragma: no cover


def set_aside(entry: str | os.PathLike[str], prefix: str) -> Path | None:
    """Rename ``entry`` to a new private name beside it (``prefix`` plus random hex) and return
    that name, or ``None`` if the rename fails (most often: the entry is gone).

    A rename is atomic, so of two processes that would move or remove the same folder (one
    adopting a cache entry, another pruning it; two replacing a damaged one) exactly one gets
    it, and the other backs off instead of deleting files from under the winner."""
    entry = Path(entry)
    aside = entry.with_name(f"{prefix}{secrets.token_hex(6)}")
    try:
        os.rename(entry, aside)
    except OSError:
        return None
    return aside


def remove_leftovers(
    parent: str | os.PathLike[str], prefixes: tuple[str, ...], older_than_s: float = LEFTOVER_AGE_S
) -> list[Path]:
    """Remove folders in ``parent`` whose names start with one of ``prefixes`` and that were
    last changed or renamed over ``older_than_s`` ago: staging or set-aside folders of a
    process killed before it could publish or delete them, which nothing else would remove."""
    removed: list[Path] = []
    now = time.time()
    try:
        entries = list(Path(parent).iterdir())
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(prefixes):
            continue
        try:
            st = entry.stat()
        except OSError:
            continue
        # ctime too: a rename (how an entry is claimed or set aside) keeps a folder's mtime,
        # so a months-old entry claimed a moment ago would otherwise look abandoned
        if not entry.is_dir() or now - max(st.st_mtime, st.st_ctime) < older_than_s:
            continue
        shutil.rmtree(entry, ignore_errors=True)
        if not entry.exists():
            removed.append(entry)
    return removed


__all__ = ["LEFTOVER_AGE_S", "remove_leftovers", "set_aside", "staging_dir"]
