"""Tools of the fault suite: a corpus in two versions, real subprocesses, a real Chroma server.

Nothing here is a stub: the store is a real Chroma PersistentClient or a real ``chroma run``
server on 127.0.0.1, the CLI runs as a separate ``landmark-rag`` process, and faults are real
(SIGKILL, a server process stopped, a store call that raises). The model is a tiny random BERT
(tests/conftest.py ``tiny_bert_dir``) so that the cost is process start-up, not encoding.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

# the one chroma-server helper of the test suite (tests/servers.py), re-exported for the fault tests
from servers import ChromaServer, free_port  # noqa: F401

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SRC = REPO / "src"
EXCERPT = REPO / "tests" / "data" / "squad_excerpt.json"
LAUNCHER = HERE / "kill_launcher.py"


# ---------------------------------------------------------------------------- corpus
def paragraphs() -> list[str]:
    """Real SQuAD paragraphs (the 9 of tests/data/squad_excerpt.json), the fault corpus's texts."""
    data = json.loads(EXCERPT.read_text(encoding="utf-8"))["data"]
    return [p["context"] for art in data for p in art["paragraphs"]]


def corpus_versions(n_docs: int = 6) -> tuple[dict[str, str], dict[str, str]]:
    """Version 1 and version 2 of ``n_docs`` files: v2 changes every file and its sentence count."""
    paras = paragraphs()
    v1 = {f"doc{i:02d}.txt": paras[i % len(paras)] + "\n\n" + paras[(i + 1) % len(paras)] for i in range(n_docs)}
    v2 = {name: text.split("\n\n")[1] + " An added closing sentence for version two." for name, text in v1.items()}
    return v1, v2


def write_corpus(folder: Path, texts: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8")


# ---------------------------------------------------------------------------- processes
def env() -> dict[str, str]:
    out = dict(os.environ)
    out["PYTHONPATH"] = str(SRC) + os.pathsep + out.get("PYTHONPATH", "")
    out["TOKENIZERS_PARALLELISM"] = "false"
    out["NO_COLOR"] = "1"
    return out


def cli(
    *args: str, kill_at: str | None = None, extra_env: dict[str, str] | None = None, timeout: float = 300, **kw: Any
) -> subprocess.CompletedProcess:
    """Run ``landmark-rag ARGS`` in a fresh process; ``kill_at="point:n"`` SIGKILLs it there."""
    e = {**env(), **(extra_env or {})}
    if kill_at:
        e["LANDMARK_RAG_TEST_KILL_AT"] = kill_at
    return subprocess.run(
        [sys.executable, str(LAUNCHER), *args], capture_output=True, text=True, env=e, timeout=timeout, **kw
    )


def in_process(*args: str) -> Any:
    """``landmark-rag ARGS`` in this process (the same code, no process start), for the
    runs of a test that are not killed: a process start costs seconds of CPU."""
    from chromadb.api.shared_system_client import SharedSystemClient
    from typer.testing import CliRunner

    from landmark_rag.cli import _register, app

    _register()
    SharedSystemClient.clear_system_cache()  # see the store as other processes left it
    return CliRunner().invoke(app, list(args))


def popen_cli(*args: str, extra_env: dict[str, str] | None = None, **kw: Any) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(LAUNCHER), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**env(), **(extra_env or {})}, **kw,
    )


# ---------------------------------------------------------------------------- checks
def visible_state(store: Any) -> dict[str, str]:
    """What a reader sees: document id -> the text of its visible version (from its sentences).

    Also asserts the reader-side invariants: each visible document is complete (its sentences
    are exactly 0..n-1 of the manifest's count) and every sentence is an exact slice of the
    stored document text.
    """
    out = {}
    for doc_id, md in store.documents().items():
        sents = store.read_document(doc_id).sentences
        assert [s.index for s in sents] == list(range(md["n_sentences"])), (doc_id, len(sents), md)
        text = store.document_text(doc_id)
        for s in sents:
            assert text[s.start : s.end] == s.text, (doc_id, s.index)
        out[doc_id] = text
    return out


def search_duplicates(store: Any, vector: Any, k: int) -> list[tuple[str, int]]:
    """(doc_id, index) pairs that a search returns more than once (should be none)."""
    hits = store.nearest(vector, k)
    counts = Counter((h.sentence.doc_id, h.sentence.index) for h in hits)
    return [key for key, n in counts.items() if n > 1]


def sentence_ids_by_doc(store: Any) -> Counter:
    got = store.collection.get(include=["metadatas"])
    return Counter(md["doc_id"] for md in got["metadatas"])
