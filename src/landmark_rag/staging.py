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
from pathlib import Path


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


__all__ = ["staging_dir"]
