"""The store fails during ``index``: the run stops with one clear line, nothing is lost.

Two kinds of failure, both real: a store call that raises (fault injection around the real
Chroma collection) and a real ``chroma run`` server SIGKILLed at an exact point of a real
``landmark-rag index`` process.
"""

from __future__ import annotations

import numpy as np
import pytest
from reliability.faultkit import (
    ChromaServer,
    cli,
    corpus_versions,
    free_port,
    in_process,
    visible_state,
    write_corpus,
)

from landmark_rag import LandmarkIndex
from landmark_rag.store import ChromaSentenceStore, StoreError, make_client


class FailingCollection:
    """A real Chroma collection whose ``method`` raises ConnectionError from its ``n``-th call on."""

    def __init__(self, inner, method: str, n: int) -> None:
        self.inner, self.method, self.n, self.calls = inner, method, n, 0

    def __getattr__(self, name):
        attr = getattr(self.inner, name)
        if name != self.method:
            return attr

        def call(*args, **kwargs):
            self.calls += 1
            if self.calls >= self.n:
                raise ConnectionError("injected: connection reset by peer")
            return attr(*args, **kwargs)

        return call


#: The index writes each group of documents with one run of the protocol; groups of 2 make the
#: 5 documents 3 groups, so each failure below lands in the second group's write: the sentence
#: upsert (before its commit), the commit's upsert, the first group's clean-up (after its
#: commit), the second group's announce.
@pytest.mark.parametrize(
    ("which", "method", "n"),
    [("collection", "upsert", 2), ("manifest", "upsert", 2), ("collection", "delete", 1), ("manifest", "update", 3)],
)
def test_failing_store_stops_the_run_and_keeps_previous_versions(tmp_path, tiny_encoder, monkeypatch, which, method, n):
    monkeypatch.setattr("landmark_rag.ingest.write.GROUP_DOCS", 2)
    encoder = tiny_encoder(pooling="landmark")
    v1, v2 = corpus_versions(5)
    folder = tmp_path / "corpus"
    write_corpus(folder, v1)
    store = ChromaSentenceStore.open(tmp_path / "db", identity=encoder.config.identity())
    report = LandmarkIndex(store, encoder).add_files([folder], show_progress=False)
    assert report.counts()["indexed"] == 5

    write_corpus(folder, v2)
    broken = ChromaSentenceStore(
        FailingCollection(store.collection, method, n) if which == "collection" else store.collection,
        FailingCollection(store.manifest, method, n) if which == "manifest" else store.manifest,
    )
    with pytest.raises(StoreError, match="ConnectionError: injected") as info:
        LandmarkIndex(broken, encoder).add_files([folder], show_progress=False)
    done = info.value.report  # what was finished before the failure is reported, not lost
    assert done.counts()["skipped"] == 0  # a store failure is never blamed on a file
    state = visible_state(store)
    assert set(state) == set(v1)
    assert all(text in (v1[d], v2[d]) for d, text in state.items())
    # exactly the documents reported written show v2: a group that failed before its commit
    # keeps every previous version, one that failed after it (while deleting its old sentences)
    # is reported written
    assert sum(text == v2[d] for d, text in state.items()) == len(done.with_status("updated"))
    assert len(done.with_status("updated")) == 2  # the first group's

    again = LandmarkIndex(store, encoder).add_files([folder], show_progress=False)
    assert again.counts()["skipped"] == 0
    assert visible_state(store) == v2
    assert store.count_sentences() == sum(md["n_sentences"] for md in store.documents().values())


def test_server_killed_mid_index_gives_one_line_and_rc1(tmp_path, tiny_bert_dir):
    server = ChromaServer(tmp_path / "server-data", free_port())
    server.start()
    try:
        v1, v2 = corpus_versions(6)
        folder = tmp_path / "corpus"
        write_corpus(folder, v1)
        args = ["index", str(folder), "--db", server.url, "--model", str(tiny_bert_dir), "-q"]
        first = in_process(*args)  # in this process: only the run the server dies under is a process
        assert first.exit_code == 0, first.output
        write_corpus(folder, v2)
        # the server dies right after the 2nd group's new sentences were written (groups of 2
        # documents: the first group is done)
        run = cli(*args, kill_at="commit:2", extra_env={"LANDMARK_RAG_TEST_KILL_PID": str(server.proc.pid),
                                                         "LANDMARK_RAG_TEST_GROUP_DOCS": "2"})
        assert run.returncode == 1, run.stderr
        lines = [line for line in run.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: store failed while writing document"), run.stderr
        assert "Traceback" not in run.stderr
        assert "2 document(s) were written before the failure" in lines[0]

        server.stop()
        server.start()  # same data folder: what was committed is there, nothing half-written shows
        store = ChromaSentenceStore.open(collection_name="landmark", client=make_client(server.url), create=False)
        state = visible_state(store)
        assert set(state) == set(v1) and all(text in (v1[d], v2[d]) for d, text in state.items())
        assert sum(text == v2[d] for d, text in state.items()) == 2

        again = in_process(*args)
        assert again.exit_code == 0, again.output
        assert visible_state(store) == v2
        assert store.count_sentences() == sum(md["n_sentences"] for md in store.documents().values())
        vec = np.asarray(store.collection.get(limit=1, include=["embeddings"])["embeddings"][0])
        keys = [(h.sentence.doc_id, h.sentence.index) for h in store.nearest(vec, store.count_sentences())]
        # no duplicate; completeness is checked exactly by visible_state (an exhaustive HNSW search
        # can miss records after many deletes: chroma-core/chroma#7758)
        assert len(keys) == len(set(keys)) and len(keys) <= store.count_sentences()
    finally:
        server.stop()
