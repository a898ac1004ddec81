"""Raw files of a recipe: found in a local folder, or downloaded, and always checksum-verified.

The folder layout is ``RAW/<source name>/<file name>``. A file is accepted only when its SHA-256
equals the recipe's: the training set is then the same bytes on every machine, and a truncated
download or a Git-LFS pointer is refused instead of silently training on something else.
"""

from __future__ import annotations

import hashlib
import shutil
import urllib.request
from pathlib import Path

from tqdm.auto import tqdm

from landmark_rag.train.config import TrainingInputError
from landmark_rag.train.prepare.recipe import Recipe


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def raw_files(
    recipe: Recipe, raw_dir: Path, *, download: bool = False, show_progress: bool = True
) -> dict[str, list[Path]]:
    """Every raw file of the recipe by source, verified; missing files are downloaded when
    ``download``, else listed (with their addresses) in one :class:`TrainingInputError`."""
    out: dict[str, list[Path]] = {}
    missing: list[tuple[str, str]] = []
    keys = [f"{s.name}/{f}" for s in recipe.sources for f in recipe.files.get(s.name, ())]
    for key in tqdm(keys, desc="checking raw files", unit="file", disable=not show_progress):
        source_name, _, name = key.partition("/")
        source = recipe.source(source_name)
        path = raw_dir / source_name / name
        url = source.url(name)
        if not path.is_file() and download and url:
            _download(url, path)
        if not path.is_file():
            missing.append((key, url or "(not downloadable: see the recipe's source)"))
            continue
        got = sha256_of(path)
        if got != recipe.checksums[key]:
            want = recipe.checksums[key]
            raise TrainingInputError(f"{path}: sha256 {got[:12]}... is not the recipe's {want[:12]}...")
        out.setdefault(source_name, []).append(path)
    if missing:
        listing = "\n".join(f"  {raw_dir / key}  <-  {url}" for key, url in missing[:10])
        more = f"\n  ... and {len(missing) - 10} more" if len(missing) > 10 else ""
        raise TrainingInputError(
            f"{len(missing)} raw file(s) of recipe {recipe.name!r} are missing; put them here (or pass "
            f"--download):\n{listing}{more}"
        )
    return out


def _download(url: str, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=60) as resp, tmp.open("wb") as f:
            shutil.copyfileobj(resp, f)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise TrainingInputError(f"cannot download {url}: {exc}") from exc
    tmp.replace(path)
