"""Start-up and round-trip costs that are design, not tuning (issue 14).

- ``import landmark_rag`` and the CLI with all its commands registered import neither torch,
  transformers, chromadb nor peft (checked in a fresh interpreter: this process has them all);
- ``landmark-rag info`` and an unchanged re-index never load a model (no torch in the
  process), while a changed file still gets encoded;
(the one-store-read-per-query check is tests/expand/test_batched_reads.py, the malloc pin
tests/encode/test_malloc.py). Timings live in benchmarks/cli_startup.py, not here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from landmark_rag.cli import _register, app
from landmark_rag.store import ChromaSentenceStore
from tests.child_env import pythonpath

HEAVY = ("torch", "transformers", "chromadb", "peft", "bm25s")

_register()


def fresh_python(code: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a new interpreter with this checkout's sources first on the path."""
    env = {**os.environ, "PYTHONPATH": pythonpath()}
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

    # the store is copied, the folder changed in place: a document's metadata is its file's
    # path, so files at another path would be (rightly) re-written too
    copy_db = tmp_path / "db"
    shutil.copytree(db, copy_db)
    first = min(folder.iterdir())
    original = first.read_text(encoding="utf-8")
    try:
        first.write_text(original + " The observatory opened in 1931.", encoding="utf-8")
        code, output, heavy = cli_in_fresh_process("index", folder, "--db", copy_db, "--quiet")
    finally:
        first.write_text(original, encoding="utf-8")
    assert code == 0, output
    words = " ".join(output.split())
    assert "1 updated" in words and "unchanged 1" in words, output
    assert "torch" in heavy  # the model was loaded for the changed file only
    store = ChromaSentenceStore.open(copy_db, create=False)
    assert store.documents()[first.name]["doc_hash"] != ChromaSentenceStore.open(db, create=False).documents()[
        first.name
    ]["doc_hash"]
