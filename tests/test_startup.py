"""Start-up and round-trip costs that are design, not tuning (issue 14).

- ``import landmark_rag`` and the CLI with all its commands registered import neither torch,
  transformers, chromadb nor peft (checked in a fresh interpreter: this process has them all);
- ``landmark-rag info`` and an unchanged re-index never load a model (no torch in the
  process), while a changed file still gets encoded;
- the expansion of a query's hits reads every neighbour in one store call, whatever the
  number of documents and the strategy, and gives the same passages as per-document reads.

Timings live in benchmarks/cli_startup.py and benchmarks/query_latency.py, not here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from landmark_rag.cli import _register, app
from landmark_rag.expand import Adaptive, InMemorySource, Surround, expand_hits
from landmark_rag.retrieve import cosine_rescore
from landmark_rag.segment import segment_sentences
from landmark_rag.store import ChromaSentenceStore
from landmark_rag.types import EncodedDocument

SRC = Path(__file__).resolve().parents[1] / "src"
HEAVY = ("torch", "transformers", "chromadb", "peft", "bm25s")

_register()


def fresh_python(code: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a new interpreter with this checkout's sources first on the path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=cwd, timeout=600)


def cli_in_fresh_process(*args: object) -> tuple[int, str, list[str]]:
    """Run the CLI in a new interpreter: (exit code, output, heavy modules it imported)."""
    code = (
        "import sys, json\n"
        "from landmark_rag.cli import main\n"
        f"sys.argv = ['landmark-rag', *{[str(a) for a in args]!r}]\n"
        "code = 0\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code or 0\n"
        f"print('@@' + json.dumps([code, sorted(m for m in {HEAVY!r} if m in sys.modules)]))\n"
    )
    out = fresh_python(code)
    assert "@@" in out.stdout, out.stderr[-3000:]
    head, _, tail = out.stdout.rpartition("@@")
    code, heavy = json.loads(tail)
    return code, head + out.stderr, heavy


def test_import_pulls_in_no_heavy_package() -> None:
    out = fresh_python(
        "import sys, landmark_rag, landmark_rag.cli\n"
        "landmark_rag.cli._register()\n"
        "from landmark_rag import LandmarkIndex, LandmarkConfig, segment_sentences\n"
        "import landmark_rag.encode, landmark_rag.ingest, landmark_rag.store, landmark_rag.expand\n"
        "segment_sentences('One. Two.')\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    # the lazy names still resolve to the real objects
    out = fresh_python("from landmark_rag import LandmarkEncoder; import torch; print(LandmarkEncoder.__module__)")
    assert out.returncode == 0 and out.stdout.strip() == "landmark_rag.encode.encoder", out.stderr


@pytest.fixture(scope="module")
def indexed_folder(tmp_path_factory: pytest.TempPathFactory, excerpt_articles) -> tuple[Path, Path]:
    """Two excerpt articles as files, indexed once in this process."""
    root = tmp_path_factory.mktemp("startup")
    folder = root / "docs"
    folder.mkdir()
    for art in excerpt_articles[:2]:
        (folder / f"{art.title}.txt").write_text(art.text[:3000], encoding="utf-8")
    db = root / "db"
    result = CliRunner().invoke(app, ["index", str(folder), "--db", str(db), "--quiet"])
    assert result.exit_code == 0, result.output
    return folder, db


def test_info_and_unchanged_reindex_load_no_model(indexed_folder: tuple[Path, Path]) -> None:
    folder, db = indexed_folder
    code, output, heavy = cli_in_fresh_process("info", "--db", db, "--json")
    assert code == 0, output
    assert json.loads(output[: output.rindex("}") + 1])["documents"] == 2
    assert "torch" not in heavy and "transformers" not in heavy

    code, output, heavy = cli_in_fresh_process("index", folder, "--db", db, "--quiet")
    assert code == 0, output
    assert "unchanged  2" in output.replace("│", " ") or "unchanged 2" in " ".join(output.split())
    assert "torch" not in heavy and "transformers" not in heavy and "peft" not in heavy


def test_changed_file_after_lazy_open_is_encoded(indexed_folder: tuple[Path, Path], tmp_path: Path) -> None:
    folder, db = indexed_folder
    import shutil

    copy_db, copy_folder = tmp_path / "db", tmp_path / "docs"
    shutil.copytree(db, copy_db)
    shutil.copytree(folder, copy_folder)
    first = sorted(copy_folder.iterdir())[0]
    first.write_text(first.read_text(encoding="utf-8") + " The observatory opened in 1931.", encoding="utf-8")
    code, output, heavy = cli_in_fresh_process("index", copy_folder, "--db", copy_db, "--quiet")
    assert code == 0, output
    words = " ".join(output.split())
    assert "1 updated" in words and "unchanged 1" in words, output
    assert "torch" in heavy  # the model was loaded for the changed file only
    store = ChromaSentenceStore.open(copy_db, create=False)
    assert store.documents()[first.name]["doc_hash"] != ChromaSentenceStore.open(db, create=False).documents()[
        first.name
    ]["doc_hash"]


# ------------------------------------------------------------------ one store read per query
class CountingCollection:
    """The real Chroma collection, counting ``get`` calls (a spy: every call goes through)."""

    def __init__(self, collection) -> None:
        self._collection = collection
        self.gets = 0

    def get(self, *args, **kwargs):
        self.gets += 1
        return self._collection.get(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._collection, name)


TEXTS = {
    "a": "Cats purr when content. They sleep a lot. Kittens play with yarn. Old cats nap in the sun. Dogs bark.",
    "b": "Rockets need fuel. Orbits are curved paths. Satellites circle the Earth. Launches are loud. Mars is red.",
    "c": "Bread needs yeast. Dough rises overnight. Ovens bake loaves. Crusts turn brown. Butter melts on toast.",
}


@pytest.mark.parametrize("strategy", [Surround(2, 2), Adaptive(margin=1.0, max_tokens=1000)], ids=["surround", "adaptive"])
def test_expansion_reads_neighbours_in_one_store_call(tmp_path: Path, strategy) -> None:
    rng = np.random.default_rng(0)
    store = ChromaSentenceStore.open(tmp_path / "db", "unit", identity={"model_name": "m"})
    memory = InMemorySource()
    for doc_id, text in TEXTS.items():
        sents = segment_sentences(text, doc_id=doc_id)
        vecs = rng.normal(size=(len(sents), 8)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        store.add_document(EncodedDocument(text, sents, vecs, doc_id))
        memory.sentences[doc_id], memory.embeddings[doc_id] = sents, vecs
    query = rng.normal(size=8).astype(np.float32)
    query /= np.linalg.norm(query)
    hits = store.query(query, 9)
    assert len({h.sentence.doc_id for h in hits}) == 3  # hits in every document

    spy = CountingCollection(store.collection)
    counted = ChromaSentenceStore(spy, store.manifest)
    batched = expand_hits(hits, counted, strategy, query_vector=query)
    assert spy.gets == 1
    per_doc = expand_hits(hits, memory, strategy, query_vector=query)
    assert [(p.doc_id, p.first_index, p.last_index, p.text) for p in batched] == [
        (p.doc_id, p.first_index, p.last_index, p.text) for p in per_doc
    ]
    for p in batched:
        assert p.text == TEXTS[p.doc_id][p.start : p.end]

    spy.gets = 0
    rescored = cosine_rescore(batched, counted, query)
    assert spy.gets == 1
    assert [round(p.score, 5) for p in rescored] == [round(p.score, 5) for p in cosine_rescore(per_doc, memory, query)]


# ------------------------------------------------------------------ malloc
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
@pytest.mark.parametrize(
    ("env", "expected"),
    [({}, "True"), ({"LANDMARK_RAG_MALLOPT": "0"}, "False"), ({"MALLOC_MMAP_THRESHOLD_": "65536"}, "True")],
)
def test_mmap_threshold_is_pinned_once_unless_the_user_decides(env: dict[str, str], expected: str) -> None:
    code = (
        "from landmark_rag.encode.malloc import pin_mmap_threshold\n"
        "print(pin_mmap_threshold(), pin_mmap_threshold())\n"
    )
    base = {k: v for k, v in os.environ.items() if k not in ("LANDMARK_RAG_MALLOPT", "MALLOC_MMAP_THRESHOLD_")}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
        env={**base, **env, "PYTHONPATH": str(SRC)},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [expected, expected]
