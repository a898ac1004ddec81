"""kill -9 of a LlamaIndex pipeline re-ingest (``ReplaceDocuments``), a failing run, and a
pipeline with another model: the previous version stays visible, the re-run is exact.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import chromadb
import pytest

pytest.importorskip("llama_index.core", reason="the llama-index extra")
pytest.importorskip("llama_index.vector_stores.chroma", reason="the llama-index extra")
from reliability.faultkit import HERE, corpus_versions, env, visible_state

from landmark_rag.store import ChromaSentenceStore


def run_pipeline(db, docs: list[tuple[str, str]], model, tmp_path, *extra: str, kill_at: str | None = None):
    path = tmp_path / "docs.json"
    path.write_text(json.dumps(docs), encoding="utf-8")
    e = env()
    if kill_at:
        e["LANDMARK_RAG_TEST_KILL_AT"] = kill_at
    return subprocess.run(
        [sys.executable, str(HERE / "llama_pipeline_run.py"), str(db), str(path), str(model), *extra],
        capture_output=True, text=True, env=e, timeout=300,
    )


def reader_view(db) -> tuple[dict[str, str], int, dict]:
    from chromadb.api.shared_system_client import SharedSystemClient

    SharedSystemClient.clear_system_cache()  # a new reader, as another process would open it
    collection = chromadb.PersistentClient(path=str(db)).get_collection("landmark")
    store = ChromaSentenceStore.for_collection(collection)
    return visible_state(store), collection.count(), store.documents(include_incomplete=True)


def test_llama_reingest_killed_and_failed_keeps_previous_version(tmp_path, tiny_bert_dir):
    llama_cycle(tmp_path, tiny_bert_dir, kill_points=("encode:1",), other_model=False)


@pytest.mark.slow
def test_llama_reingest_killed_after_commit_and_other_model_refused(tmp_path, tiny_bert_dir):
    llama_cycle(tmp_path, tiny_bert_dir, kill_points=("encode:1", "committed:2"), other_model=True)


def llama_cycle(tmp_path, tiny_bert_dir, *, kill_points: tuple[str, ...], other_model: bool) -> None:
    """Only the killed runs are processes of their own; the others run in this process (the
    same pipeline code, llama_pipeline_run.ingest), which saves a process start each."""
    from reliability.llama_pipeline_run import ingest

    from landmark_rag.store import StoreMismatchError

    v1, v2 = corpus_versions(4)
    db = tmp_path / "db"
    ingest(str(db), list(v1.items()), str(tiny_bert_dir))
    state, _, _ = reader_view(db)
    assert state == v1  # the manifest holds each document's text, rebuilt exactly from its sentences

    # killed while encoding (the case that used to leave 0 records), then right after a commit
    for point in kill_points:
        killed = run_pipeline(db, list(v2.items()), tiny_bert_dir, tmp_path, kill_at=point)
        assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
        state, _, _ = reader_view(db)
        assert set(state) == set(v1) and all(text in (v1[d], v2[d]) for d, text in state.items()), point

    # a run that raises (two documents with one id_) writes nothing and says why
    dup = [("doc00.txt", v2["doc00.txt"]), ("doc00.txt", v2["doc01.txt"])]
    with pytest.raises(ValueError, match="is used by more than one document in this run") as info:
        ingest(str(db), dup, str(tiny_bert_dir))
    assert "overlap" not in str(info.value)
    before_refusal = reader_view(db)[0]

    if other_model:  # another model into this store is refused like every other path
        with pytest.raises(StoreMismatchError, match="pooling"):
            ingest(str(db), list(v2.items()), str(tiny_bert_dir), "mean")
        assert reader_view(db)[0] == before_refusal

    ingest(str(db), list(v2.items()), str(tiny_bert_dir))
    state, count, records = reader_view(db)
    assert state == v2
    assert all(md["state"] == "complete" and "dirty" not in md for md in records.values())
    assert count == sum(md["n_sentences"] for md in records.values())  # no duplicates, nothing stale
