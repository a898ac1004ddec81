"""The documented LlamaIndex example and examples/llama_index_pipeline.py actually run."""

from __future__ import annotations

import ast
import re
import runpy
import sys

import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("llama_index.vector_stores.chroma")

from conftest import REPO, SHARED_SQUAD
from llama_index.core import Settings

DOC = REPO / "docs" / "llama_index.md"
EXAMPLE = REPO / "examples" / "llama_index_pipeline.py"
ALLOWED = (
    "llama_index.core",
    "llama_index.vector_stores.chroma",
    "chromadb",
    "llama_index.embeddings.landmark",
    "llama_index.node_parser.landmark",
    "llama_index.postprocessor.landmark",
)


@pytest.fixture
def restore_settings():
    saved = (Settings._embed_model, Settings._transformations, Settings._llm)
    yield
    Settings._embed_model, Settings._transformations, Settings._llm = saved


def test_docs_example_runs(tmp_path, monkeypatch, capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)
    runnable = [b for b in blocks if "pipeline.run" in b]
    assert len(runnable) == 1
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    exec(compile(runnable[0], str(DOC), "exec"), namespace)  # noqa: S102 - the docs' own example is the test
    out = capsys.readouterr().out
    n = namespace["vector_store"].client.count()
    assert f"{n} sentences stored" in out and n >= 8
    sources = namespace["response"].source_nodes
    assert sources
    docs = {d.id_: d.text for d in namespace["docs"]}
    for hit in sources:
        md = hit.node.metadata
        assert docs[md["doc_id"]][md["start"] : md["end"]] == hit.node.text
    assert (tmp_path / "landmark_llama_db").is_dir()


def test_docs_import_block_is_the_integration_path():
    """The page's first block is the imports it recommends; they must resolve to the adapters."""
    import landmark_rag.llama_index as adapters

    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)
    namespace: dict = {}
    exec(compile(blocks[0], str(DOC), "exec"), namespace)  # noqa: S102 - the docs' own example is the test
    for name in ("LandmarkEmbedding", "LandmarkNodeParser", "ReplaceDocuments", "BoundaryExpansionPostprocessor"):
        assert namespace[name] is getattr(adapters, name)
    assert "from llama_index.embeddings.landmark import LandmarkEmbedding" in blocks[0]


def _imported_modules(path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_example_imports_only_the_public_surface():
    third_party = {m for m in _imported_modules(EXAMPLE) if m.split(".")[0] not in sys.stdlib_module_names}
    assert third_party and all(m != "__future__" for m in third_party)
    bad = {m for m in third_party if not any(m == a or m.startswith(a + ".") for a in ALLOWED)}
    assert not bad, bad


def test_example_script_runs(tmp_path, monkeypatch, capsys, restore_settings):
    argv = [str(EXAMPLE), "--data", str(SHARED_SQUAD), "--articles", "2", "--paragraphs", "2", "--db", str(tmp_path)]
    monkeypatch.setattr(sys, "argv", argv)
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    out = capsys.readouterr().out
    m = re.search(r"\[1\] IngestionPipeline: 2 documents -> (\d+) sentence nodes, (\d+) in Chroma", out)
    assert m and m.group(1) == m.group(2) and int(m.group(1)) > 10
    for tag in ("[2]", "[3]"):
        assert re.search(rf"\{tag[:-1]}\] .*: {m.group(1)} sentences in Chroma", out), out
    assert out.count("[4] Q:") == 2
