"""``ray_index`` and ``landmark-rag index --ray`` on a real local Ray and a real Chroma server.

One Ray session (``num_cpus=2``, no dashboard) and one ``chroma run`` server (loopback only)
serve the whole module, both stopped by their fixtures: starting Ray is the main cost. The
corpus is the three SQuAD excerpt articles of tests/data (CC BY-SA 4.0) as files, plus a
binary and an empty file so the skip rules are exercised too. The reference is the
single-process core path (``LandmarkIndex.add_files``) into a second collection of the same server.

The module reads like a user's session: the first run (fixture ``ray_run``) fills the ``ray``
collection that the re-run tests then change, so each of them also runs alone.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="the ray extra is not installed")

from servers import free_port, running_chroma
from typer.testing import CliRunner

from landmark_rag import LandmarkIndex
from landmark_rag.cli import _register, app
from landmark_rag.distributed import RayConnectionError, StoreUnavailableError, ray_index
from landmark_rag.distributed import pipeline as ray_pipeline
from landmark_rag.distributed.worker import EncodeWorker
from landmark_rag.ingest import discover_files
from landmark_rag.store import ChromaSentenceStore, make_client
from landmark_rag.store.schema import sentence_key

_register()
RUNNER = CliRunner()
MODEL = "all-MiniLM-L6-v2"
OVERRIDES = {"pooling": "landmark"}  # in-context vectors: every sentence depends on its neighbours
SRC = Path(__import__("landmark_rag").__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def chroma_url(tmp_path_factory: pytest.TempPathFactory):
    with running_chroma(tmp_path_factory.mktemp("srv")) as url:
        yield url


@pytest.fixture(scope="module")
def ray_session():
    """A local Ray on 2 CPUs whose workers import this checkout's package (and the test
    helpers, for the worker classes a test defines)."""
    old = os.environ.get("PYTHONPATH")
    tests = Path(__file__).resolve().parents[1]
    os.environ["PYTHONPATH"] = os.pathsep.join([str(SRC), str(tests), *([old] if old else [])])
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING", log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory, excerpt_articles) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    names = {"Oxygen": "oxygen.txt", "Black_Death": "history/black_death.txt", "Prime_number": "prime_number.md"}
    for art in excerpt_articles:
        path = root / names[art.title]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(art.text, encoding="utf-8")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64))
    (root / "empty.txt").write_text("  \n")
    return root


def _index_on_ray(corpus: Path, url: str, collection: str, **kw):
    return ray_index([corpus], url, model=MODEL, overrides=OVERRIDES, collection=collection, workers=2,
                     show_progress=False, **kw)


def _contents(url: str, collection: str) -> dict[str, tuple[str, dict, np.ndarray]]:
    store = ChromaSentenceStore.open(client=make_client(url), collection_name=collection, create=False)
    got = store.collection.get(include=["documents", "metadatas", "embeddings"])
    assert len(got["ids"]) == len(set(got["ids"])) == store.count_sentences()
    # keyed by (doc_id, index) without the write's version, which differs per write
    out = {sentence_key(i): (t, {k: x for k, x in m.items() if k != "doc_version"}, np.asarray(v)) for i, t, m, v in
           zip(got["ids"], got["documents"], got["metadatas"], got["embeddings"], strict=True)}
    assert len(out) == len(got["ids"])  # one version per sentence after a finished run
    return out


def _outcomes(report) -> list[tuple]:
    return sorted((o.doc_id, o.status, o.reason, o.sentences, o.tokens) for o in report.outcomes)


@pytest.fixture(scope="module")
def reference(chroma_url: str, corpus: Path, minilm_landmark):
    """The single-process core run (``LandmarkIndex.add_files``) into collection ``single``."""
    store = ChromaSentenceStore.open(client=make_client(chroma_url), collection_name="single",
                                     identity=minilm_landmark.config.identity())
    report = LandmarkIndex(store, minilm_landmark).add_files([corpus], show_progress=False)
    assert report.counts() == {"indexed": 3, "updated": 0, "unchanged": 0, "skipped": 2}
    return report


@pytest.fixture(scope="module")
def ray_run(ray_session, chroma_url: str, corpus: Path):
    """The first Ray run, into collection ``ray``, which the re-run tests then change."""
    return _index_on_ray(corpus, chroma_url, "ray")


# ---------------------------------------------------------------------------- equality
def test_ray_index_equals_single_process(ray_run, chroma_url: str, reference) -> None:
    report = ray_run
    assert _outcomes(report) == _outcomes(reference)  # same ids, statuses, skip reasons, counts
    ours, ref = _contents(chroma_url, "ray"), _contents(chroma_url, "single")
    assert sorted(ours) == sorted(ref) and len(ours) == reference.sentences
    for sid, (text, md, vec) in ref.items():
        text2, md2, vec2 = ours[sid]
        assert text2 == text and md2 == md  # offsets, doc hash, source/root metadata
        np.testing.assert_allclose(vec2, vec, atol=1e-5)
    # offsets point into the file exactly
    sid = next(iter(ours))
    text, md, _ = ours[sid]
    assert Path(md["source"]).read_text(encoding="utf-8")[md["start"]:md["end"]] == text
    store = ChromaSentenceStore.open(client=make_client(chroma_url), collection_name="ray", create=False)
    assert store.identity()["pooling"] == "landmark"
    assert all(r["state"] == "complete" for r in store.documents(include_incomplete=True).values())


def test_cli_unchanged_rerun_encodes_nothing(ray_run, chroma_url: str, corpus: Path) -> None:
    """No --model: the store's recorded model (with its pooling) is used; nothing is encoded.

    One document is left as a run killed after its commit leaves it (``dirty``, with sentences
    of an older version still stored): the run finishes it, as the local path does.
    """
    before = _contents(chroma_url, "ray")
    store = ChromaSentenceStore.open(client=make_client(chroma_url), collection_name="ray", create=False)
    doc = "oxygen.txt"
    got = store.collection.get(where={"doc_id": doc}, limit=2, include=["documents", "metadatas", "embeddings"])
    stale = [f"{sentence_key(i)}@old" for i in got["ids"]]
    store.collection.add(ids=stale, documents=got["documents"], embeddings=got["embeddings"],
                         metadatas=[{**m, "doc_version": "old"} for m in got["metadatas"]])
    store.manifest.update(ids=[doc], metadatas=[{"dirty": True}])
    result = RUNNER.invoke(app, ["index", str(corpus), "--db", chroma_url, "--collection", "ray",
                                 "--ray", "local", "--workers", "2", "-q"])
    assert result.exit_code == 0, result.output
    assert "0 new, 0 updated (0 sentences)" in result.stdout
    assert "nothing to encode" in result.stdout and "unchanged  3" in result.stdout
    after = _contents(chroma_url, "ray")  # one version per sentence: the stale ones are gone
    assert sorted(after) == sorted(before)
    assert store.collection.get(ids=stale)["ids"] == []
    assert not any(r.get("dirty") for r in store.documents(include_incomplete=True).values())


# slow: the skip rule is the shared write path's (tests/ingest, tests/cli cover it in one process);
# this checks the Ray run reaches it, at the cost of two more Ray runs
@pytest.mark.slow
def test_changed_file_reencodes_only_that_file(ray_run, chroma_url: str, corpus: Path) -> None:
    """One changed file, and one document an earlier run left unfinished: exactly those two."""
    path = corpus / "prime_number.md"
    original = path.read_text(encoding="utf-8")
    store = ChromaSentenceStore.open(client=make_client(chroma_url), collection_name="ray", create=False)
    unfinished = "history/black_death.txt"  # as a run killed between "writing" and "complete" leaves it
    store.manifest.update(ids=[unfinished], metadatas=[{**store.documents()[unfinished], "state": "writing"}])
    assert unfinished not in store.documents()
    try:
        path.write_text(original[: len(original) // 2], encoding="utf-8")  # shrinks: old tail must go
        report = _index_on_ray(corpus, chroma_url, "ray")
        changed = sorted((o.doc_id, o.status) for o in report.outcomes if o.tokens > 0)
        assert changed == [(unfinished, "updated"), ("prime_number.md", "updated")]
        assert report.counts() == {"indexed": 0, "updated": 2, "unchanged": 1, "skipped": 2}
        ours = _contents(chroma_url, "ray")
        n_prime = next(o.sentences for o in report.outcomes if o.doc_id == "prime_number.md")
        prime = sorted(int(s.rsplit(":", 1)[1]) for s in ours if s.startswith("prime_number.md:"))
        assert prime == list(range(n_prime))  # no stale sentence of the old version
        assert unfinished in store.documents()  # complete again
        assert len(ours) == sum(r["n_sentences"] for r in ChromaSentenceStore.open(
            client=make_client(chroma_url), collection_name="ray", create=False).documents().values())
    finally:
        path.write_text(original, encoding="utf-8")


def test_nothing_to_do_starts_no_workers(ray_run, chroma_url: str, tmp_path: Path) -> None:
    """An empty folder: an empty report and an untouched store (no actors are started)."""
    before = _contents(chroma_url, "ray")
    report = ray_index([tmp_path], chroma_url, collection="ray", workers=2, show_progress=False)
    assert report.outcomes == [] and not report.interrupted
    assert sorted(_contents(chroma_url, "ray")) == sorted(before)


# ---------------------------------------------------------------------------- faults
def faulty_worker(batch: int, mode: str, marker: str) -> type[EncodeWorker]:
    """An ``EncodeWorker`` that fails once, on its ``batch``-th batch, after writing that batch's
    first document: ``exit`` dies as a killed process would (no cleanup, no exception),
    ``raise`` fails the batch with a ``TimeoutError``, a transient error Ray is told to retry.
    The ``marker`` file is created atomically when the fault fires, so exactly one fault
    happens per run however many actors (or restarted actors) see their ``batch``-th batch.

    Built in a function so that Ray ships the class by value to its workers.
    """

    class FaultyWorker(EncodeWorker):
        batches = 0

        def __call__(self, rows):
            self.batches += 1
            if self.batches != batch or not _claim(marker):
                return super().__call__(rows)
            first = rows.to_pylist()[0]
            super().__call__({k: [v] for k, v in first.items()})  # part of the batch is written
            if mode == "exit":
                os._exit(1)
            raise TimeoutError(f"injected fault on batch {self.batches}")

    return FaultyWorker


def _claim(marker: str) -> bool:
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.write(fd, f"{os.getpid()}\n".encode())
    os.close(fd)
    return True


# slow: a run that survives a dead worker rests on the manifest protocol (the kill -9 cases of
# tests/reliability check it in the default run) and on Ray restarting the actor; no line of
# the driver runs here that the equality test does not run
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["exit", "raise"])
def test_worker_fault_mid_run_loses_and_duplicates_nothing(
    ray_session, chroma_url: str, corpus: Path, reference, tmp_path: Path, mode: str, monkeypatch
) -> None:
    """``exit``: the worker process dies (as killed); ``raise``: its batch fails with an error."""
    import ray.data

    marker = tmp_path / "fault-fired"
    collection = f"fault-{mode}"
    monkeypatch.setattr(ray_pipeline, "EncodeWorker", faulty_worker(1, mode, str(marker)))
    monkeypatch.setattr(ray.data.DataContext.get_current(), "actor_task_retry_on_errors", [TimeoutError])
    report = _index_on_ray(corpus, chroma_url, collection)
    assert marker.exists()  # the fault really fired, after the worker had written part of its batch
    assert _outcomes(report) == _outcomes(reference)
    ours, ref = _contents(chroma_url, collection), _contents(chroma_url, "single")
    assert sorted(ours) == sorted(ref)  # 0 lost, 0 duplicated (ids are unique per _contents)
    for sid, (text, _, vec) in ref.items():
        assert ours[sid][0] == text
        np.testing.assert_allclose(ours[sid][2], vec, atol=1e-5)
    store = ChromaSentenceStore.open(client=make_client(chroma_url), collection_name=collection, create=False)
    assert all(r["state"] == "complete" for r in store.documents(include_incomplete=True).values())


def test_cli_ray_store_failure_stops_with_one_line(ray_session, corpus: Path, tmp_path: Path, tiny_bert_dir,
                                                   monkeypatch) -> None:
    """``index --ray`` into a local folder (the driver writes): the store's sentence upsert fails
    from the 2nd document on (a real Chroma collection whose call raises ConnectionError). The
    run stops with exit code 1 and one line; the re-run completes the index exactly. One
    worker: into a folder the driver is the one writer, however many actors encode."""
    from chromadb.api.models.Collection import Collection

    db = tmp_path / "db"
    upsert, calls = Collection.upsert, []

    def failing(self, *args, **kwargs):
        if self.name == "landmark":
            calls.append(1)
            if len(calls) >= 2:
                raise ConnectionError("injected: connection reset by peer")
        return upsert(self, *args, **kwargs)

    args = ["index", str(corpus), "--db", str(db), "--ray", "local", "--workers", "1", "--model",
            str(tiny_bert_dir), "-q"]
    monkeypatch.setattr(Collection, "upsert", failing)
    result = RUNNER.invoke(app, args)
    monkeypatch.undo()
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: store failed while writing document")
    # how many were written depends on how Ray hands the rows back (one batch of one document
    # first, or of two, written as one group with one upsert): the count must be the store's
    written = re.search(r"(\d+) document\(s\) were written before the failure", lines[0])
    assert "ConnectionError: injected" in lines[0] and written is not None, lines[0]
    store = ChromaSentenceStore.open(db, create=False)
    assert 1 <= int(written[1]) < 3
    assert len(store.documents()) == int(written[1])  # the failed ones are not visible: nothing half-written

    again = RUNNER.invoke(app, args)
    assert again.exit_code == 0, again.output
    # the documents of the group that failed were announced (hidden "writing" records), so they
    # come back "updated"; one that no group had reached would come back "new"
    done = re.search(r"indexed\s+(\d+) new, (\d+) updated", again.stdout)
    assert done is not None and int(done[1]) + int(done[2]) == 3 - int(written[1]) and int(done[2]) >= 1, again.stdout
    assert f"unchanged  {written[1]}" in again.stdout
    records = store.documents(include_incomplete=True)
    assert len(records) == 3 and not any(r.get("dirty") for r in records.values())
    assert store.count_sentences() == sum(r["n_sentences"] for r in records.values())


# ---------------------------------------------------------------------------- bad input
def test_unreachable_server_is_a_clear_error(corpus: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(StoreUnavailableError, match="cannot open the store"):
        ray_index([corpus], url, show_progress=False)
    result = RUNNER.invoke(app, ["index", str(corpus), "--db", url, "--ray", "local", "--workers", "2", "-q"])
    assert result.exit_code == 1 and "cannot open the store" in result.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written anywhere


def test_unanswering_ray_address_is_a_clear_error(chroma_url: str, corpus: Path) -> None:
    address = f"ray://127.0.0.1:{free_port()}"
    t0 = time.monotonic()
    with pytest.raises(RayConnectionError, match="no Ray cluster answers"):
        ray_index([corpus], chroma_url, collection="never", ray_address=address, show_progress=False)
    assert time.monotonic() - t0 < 30
    result = RUNNER.invoke(app, ["index", str(corpus), "--db", chroma_url, "--collection", "never",
                                 "--ray", address, "-q"])
    assert result.exit_code == 1 and "no Ray cluster answers" in result.stderr
    names = [c if isinstance(c, str) else c.name for c in make_client(chroma_url).list_collections()]
    assert "never" not in names  # nothing written


# ---------------------------------------------------------------------------- packaging
def test_core_install_does_not_import_ray() -> None:
    code = (
        "import sys, landmark_rag, landmark_rag.ingest, landmark_rag.store\n"
        "from landmark_rag.cli import _register, app\n"
        "_register()\n"
        "from typer.testing import CliRunner\n"
        "assert CliRunner().invoke(app, ['index', '--help']).exit_code == 0\n"
        "bad = sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.'))\n"
        "assert not bad, bad\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr


# ---------------------------------------------------------------------------- other inputs
@pytest.mark.slow
def test_dataset_into_local_folder(ray_session, chroma_url: str, corpus: Path, reference, tmp_path: Path) -> None:
    """A ``ray.data.Dataset`` of (doc_id, text, metadata) into a local folder: the driver writes."""
    files = [f for f in discover_files([corpus]) if f.path.suffix in (".txt", ".md") and f.path.stat().st_size > 8]
    rows = [{"doc_id": f.doc_id, "text": f.path.read_text(encoding="utf-8"), "lang": "en"} for f in files]
    rows.append({"doc_id": "blank", "text": " \n ", "lang": "en"})
    report = ray_index(ray.data.from_items(rows), tmp_path / "db", model=MODEL, overrides=OVERRIDES, workers=2,
                       show_progress=False)
    assert report.counts() == {"indexed": 3, "updated": 0, "unchanged": 0, "skipped": 1}
    store = ChromaSentenceStore.open(tmp_path / "db", create=False)
    got = store.collection.get(include=["documents", "metadatas", "embeddings"])
    ref = _contents(chroma_url, "single")
    keys = [sentence_key(i) for i in got["ids"]]
    assert sorted(keys) == sorted(ref)
    for sid, text, md, vec in zip(keys, got["documents"], got["metadatas"], got["embeddings"], strict=True):
        assert text == ref[sid][0] and md["lang"] == "en" and md["start"] == ref[sid][1]["start"]
        np.testing.assert_allclose(vec, ref[sid][2], atol=1e-5)
    with pytest.raises(ValueError, match="doc_id must be unique"):
        ray_index(ray.data.from_items(rows + rows[:1]), tmp_path / "db", show_progress=False)


# ---------------------------------------------------------------------------- actor sizing
def test_gpu_actors_get_their_nodes_cpus() -> None:
    """A GPU actor's preparation pool needs CPUs: by default each gets an equal share of its
    node's CPUs less the reserve Ray Data's reads need, bounded by the smallest GPU node."""
    sizing, reserve, cap = ray_pipeline._sizing, ray_pipeline.NODE_CPU_RESERVE, ray_pipeline.GPU_ACTOR_MAX_CPUS
    one = [{"CPU": 16.0, "GPU": 1.0}]
    assert sizing(None, 1, None, {"CPU": 16, "GPU": 1}, one) == (1, 16.0 - reserve)
    eight = [{"CPU": 96.0, "GPU": 8.0}]
    assert sizing(None, 1, None, {"CPU": 96, "GPU": 8}, eight) == (8, float((96 - reserve) // 8))
    assert sizing(None, 0.5, None, {"CPU": 96, "GPU": 8}, eight) == (16, float((96 - reserve) // 16))
    # a CPU-only head node holds no GPU actor and does not count; the smaller GPU node bounds all
    mixed = [{"CPU": 4.0}, {"CPU": 64.0, "GPU": 2.0}, {"CPU": 12.0, "GPU": 2.0}]
    assert sizing(None, 1, None, {"CPU": 80, "GPU": 4}, mixed) == (4, float((12 - reserve) // 2))
    assert sizing(None, 1, None, {"CPU": 256, "GPU": 1}, [{"CPU": 256.0, "GPU": 1.0}]) == (1, float(cap))
    assert sizing(None, 1, None, {"CPU": 2, "GPU": 1}, [{"CPU": 2.0, "GPU": 1.0}]) == (1, 1.0)  # at least one
    assert sizing(2, 1, 3, {"CPU": 16, "GPU": 2}, one) == (2, 3.0)  # the caller's choice stands
    assert sizing(None, 1, None, {"CPU": 16, "GPU": 1}) == (1, 1.0)  # nodes unknown: one CPU
    # fractions of a GPU: Ray packs 1 / gpus actors on each GPU (1.0 // 0.2 is 4.0 in floats)
    assert sizing(None, 0.2, None, {"CPU": 64, "GPU": 1}, [{"CPU": 64.0, "GPU": 1.0}]) == (5, float((64 - reserve) // 5))
    assert sizing(10, 0.1, None, {"CPU": 100, "GPU": 1}, [{"CPU": 100.0, "GPU": 1.0}]) == (10, float((100 - reserve) // 10))
    # fewer workers than GPUs: a node holds at most that many, so each may take more
    assert sizing(2, 1, None, {"CPU": 96, "GPU": 8}, eight) == (2, float(cap))
    assert sizing(2, 1, None, {"CPU": 20, "GPU": 8}, [{"CPU": 20.0, "GPU": 8.0}]) == (2, float((20 - reserve) // 2))
    # CPU actors are sized from the cluster's CPUs, as before
    assert sizing(None, 0, None, {"CPU": 8}) == (4, 2.0)


def test_node_resources_lists_the_live_nodes(ray_session) -> None:
    from landmark_rag.distributed.cluster import node_resources

    nodes = node_resources()
    assert len(nodes) == 1 and nodes[0]["CPU"] == 2.0 and nodes[0].get("GPU", 0.0) == 0.0
