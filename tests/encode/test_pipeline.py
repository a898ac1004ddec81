"""The producer thread that prepares group n + 1 while group n encodes (``runtime.prefetch.Prefetch``),
and the worker processes that may prepare groups for it (``runtime.process``): nothing lost,
duplicated or reordered; an error surfaces as itself, where it happened; the thread ends."""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import prepare_faults
import pytest
import torch

from landmark_rag.encode import encoder as encoder_module
from landmark_rag.encode.runtime import prefetch as prefetch_module
from landmark_rag.encode.runtime import process
from landmark_rag.encode.runtime.prefetch import Prefetch
from landmark_rag.segment.tokens import text_tokenizer


def _producers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "landmark-prepare"]


def _wait_gone() -> None:
    for _ in range(100):
        if not _producers():
            return
        time.sleep(0.01)
    raise AssertionError("the producer thread is still running")


def test_prefetch_keeps_order_and_every_item() -> None:
    def slow(n: int):
        for i in range(n):
            if i % 7 == 0:
                time.sleep(0.001)
            yield i

    with Prefetch(slow(200), depth=2) as items:
        assert list(items) == list(range(200))
    _wait_gone()


def test_prefetch_raises_the_producers_error_after_the_items_before_it() -> None:
    class Boom(Exception):
        pass

    def failing():
        yield from range(5)
        raise Boom("item 5")

    got: list[int] = []
    with pytest.raises(Boom, match="item 5"), Prefetch(failing()) as items:
        got.extend(items)
    assert got == [0, 1, 2, 3, 4]
    _wait_gone()


def test_prefetch_stops_the_producer_when_the_consumer_leaves() -> None:
    made = []

    def endless():
        i = 0
        while True:
            made.append(i)
            yield i
            i += 1

    with pytest.raises(KeyError), Prefetch(endless()) as items:
        for x in items:
            if x == 3:
                raise KeyError("consumer failed")
    _wait_gone()
    assert len(made) <= 7  # bounded: the queue holds one item ahead


def test_ctrl_c_does_not_wait_for_a_long_item(monkeypatch) -> None:
    from landmark_rag.encode.runtime import prefetch

    monkeypatch.setattr(prefetch, "INTERRUPT_WAIT", 0.2)
    release = threading.Event()

    def slow():
        yield 0
        release.wait(30)  # an item that takes long: a large file's extraction
        yield 1

    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt), Prefetch(slow()) as items:
        for _ in items:
            raise KeyboardInterrupt
    assert time.perf_counter() - t0 < 5  # not the item's 30 s
    release.set()
    _wait_gone()


def test_a_consumer_on_another_thread_is_told_its_producer_stopped() -> None:
    def endless():
        i = 0
        while True:
            yield i
            i += 1

    outcome: list[BaseException | int] = []
    stage = Prefetch(endless())
    items = stage.__enter__()
    next(items)

    def consume() -> None:
        try:
            for x in items:
                outcome.append(x)
                time.sleep(0.01)
        except BaseException as exc:  # noqa: BLE001 - what the test looks at
            outcome.append(exc)

    consumer = threading.Thread(target=consume)
    consumer.start()
    time.sleep(0.05)
    stage.close()
    consumer.join(5)
    assert not consumer.is_alive()  # not stranded on an empty queue
    assert isinstance(outcome[-1], prefetch_module.PrefetchStopped)
    _wait_gone()


def _docs() -> list[str]:
    short = "One line only."
    medium = " ".join(f"Sentence {i} tells of the {i}th harbour wall." for i in range(30))
    long = " ".join(f"Line {i} of the long chronicle records the year {1200 + i} in detail." for i in range(400))
    return [medium, "", short, long, "   ", medium[:200], short + " Two lines now.", long[:3000], ""]


@pytest.mark.parametrize("group_tokens", [1, 300, 1 << 17])
def test_groups_of_any_size_give_each_document_its_own_vectors(tiny_encoder, monkeypatch, group_tokens) -> None:
    enc = tiny_encoder(max_length=64)
    docs = _docs()
    alone = [enc.encode_documents([d])[0] for d in docs]
    monkeypatch.setattr(encoder_module, "_GROUP_TOKENS", group_tokens)
    together = enc.encode_documents(docs, doc_ids=[f"d{i}" for i in range(len(docs))], batch_size=3)
    assert [d.doc_id for d in together] == [f"d{i}" for i in range(len(docs))]
    assert [d.text for d in together] == docs
    for a, b in zip(alone, together, strict=True):
        assert [(s.start, s.end) for s in a.sentences] == [(s.start, s.end) for s in b.sentences]
        assert b.embeddings.shape == (len(b.sentences), enc.dim)
        np.testing.assert_allclose(a.embeddings, b.embeddings, atol=1e-5, rtol=0)
        assert b.tokens == a.tokens and (b.tokens > 0) == (len(b) > 0)
    assert [len(d) for d in together][1] == 0 and len(together[3]) > 100
    _wait_gone()


def test_an_error_in_the_middle_surfaces_as_itself(tiny_encoder, monkeypatch) -> None:
    enc = tiny_encoder(max_length=64)
    monkeypatch.setattr(encoder_module, "_GROUP_TOKENS", 50)
    docs = _docs()

    class SegmenterFailed(RuntimeError):
        pass

    threads: set[str] = set()

    def segmenter(text: str):
        threads.add(threading.current_thread().name)
        if "chronicle" in text:
            raise SegmenterFailed("cannot split the chronicle")
        from landmark_rag.segment import sentencex_spans

        return sentencex_spans(text)

    with pytest.raises(SegmenterFailed, match="chronicle"):
        enc.encode_documents(docs, segmenter=segmenter)
    assert threads == {"landmark-prepare"}  # it was raised on the producer thread
    _wait_gone()
    with pytest.raises(TypeError, match="must be str"):
        enc.encode_documents([docs[0], docs[2], b"bytes"])  # type: ignore[list-item]
    _wait_gone()
    # and the encoder works on afterwards
    assert len(enc.encode_documents([docs[2]])[0]) == 1


@pytest.mark.parametrize("group_tokens", [1, 300, 1 << 17])
def test_the_two_halves_equal_one_call(tiny_encoder, monkeypatch, group_tokens) -> None:
    """``encode_prepared(prepare_documents(...))`` is ``encode_documents(...)``: the write path
    calls the halves on two threads and must store the same vectors."""
    enc = tiny_encoder(max_length=64)
    docs = _docs()
    ids = [f"d{i}" for i in range(len(docs))]
    whole = enc.encode_documents(docs, doc_ids=ids, batch_size=3)
    monkeypatch.setattr(encoder_module, "_GROUP_TOKENS", group_tokens)
    prepared = enc.prepare_documents(docs, doc_ids=ids, batch_size=3)
    assert prepared.documents == len(docs) and prepared.tokens == sum(d.tokens for d in whole)
    halves = enc.encode_prepared(prepared)
    assert [d.doc_id for d in halves] == ids and [d.text for d in halves] == docs
    for a, b in zip(whole, halves, strict=True):
        assert a.sentences == b.sentences and a.tokens == b.tokens
        np.testing.assert_allclose(a.embeddings, b.embeddings, atol=1e-5, rtol=0)
    # sentences given by the caller go through the halves as they are
    given = whole[0].sentences[:3]
    one = enc.encode_prepared(enc.prepare_documents([docs[0]], sentences=[given]))[0]
    assert one.sentences == [s.with_doc_id(None) for s in given] and len(one.embeddings) == 3
    with pytest.raises(TypeError, match="must be str"):
        enc.prepare_documents([docs[0], b"bytes"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="same length"):
        enc.prepare_documents(docs, doc_ids=ids[:2])
    with pytest.raises(TypeError, match="list of texts"):
        enc.prepare_documents("one text")  # type: ignore[arg-type]


# ---------------------------------------------------------------------- the preparation process
# (encode/runtime/process.py): a large call's documents segmented and tokenised in a worker
# process; the same documents, in order, nothing lost, errors surfacing as themselves


@pytest.fixture
def worker_restarts(monkeypatch):
    monkeypatch.setattr(process, "_STARTS", 0)
    yield
    process.close_shared_workers()


def _ready_worker(enc) -> process.PreparationWorker:
    """This process's worker once it is up and has the encoder's tokenizer (until then an
    encoder prepares its chunks itself, which these tests want to see it not do)."""
    (worker,) = process.shared_workers(1)
    tt = text_tokenizer(enc.tokenizer)
    deadline = time.monotonic() + 60
    while worker.tokenizer_key(tt) is None:
        assert worker.alive and time.monotonic() < deadline, "the preparation process did not come up"
        time.sleep(0.02)
    return worker


def _many_docs() -> list[str]:
    cut = "an unpunctuated run of words that no segmenter can split " * 12  # cut to fit a window
    return [d for d in _docs() if "chronicle" not in d] * 3 + [cut, "", _docs()[0]]


def _same(a, b, atol: float = 0.0) -> None:
    """The same documents, sentences and tokens; vectors equal (within ``atol``: documents
    batched with other neighbours are padded to other widths, which moves the last bits)."""
    assert [d.doc_id for d in a] == [d.doc_id for d in b]
    for x, y in zip(a, b, strict=True):
        assert x.text == y.text and x.sentences == y.sentences and x.tokens == y.tokens
        np.testing.assert_allclose(x.embeddings, y.embeddings, atol=atol, rtol=0)


def test_the_worker_process_prepares_the_same_documents(tiny_encoder, monkeypatch, worker_restarts) -> None:
    enc = tiny_encoder(max_length=64)
    docs = _many_docs()
    ids = [f"d{i}" for i in range(len(docs))]
    monkeypatch.setattr(encoder_module, "_GROUP_TOKENS", 300)
    monkeypatch.setattr(encoder_module, "_TASK_CHARS", 1500)  # many chunks, several in flight
    enc.prepare_process = False
    here = enc.encode_documents(docs, doc_ids=ids, batch_size=3)
    assert max(len(s.text) for d in here for s in d.sentences) < len(docs[-3])  # the run was cut
    enc.prepare_process = True
    worker = _ready_worker(enc)
    sent: list[str] = []
    submit = worker.submit
    monkeypatch.setattr(worker, "submit", lambda target, *args: sent.append(target) or submit(target, *args))
    there = enc.encode_documents(docs, doc_ids=ids, batch_size=3)
    assert sent.count(process.TASK) >= 4  # every chunk went there
    _same(there, here)
    _wait_gone()


def test_the_worker_imports_neither_torch_nor_the_callers_main(tiny_encoder, monkeypatch, worker_restarts) -> None:
    enc = tiny_encoder(max_length=64)
    worker = _ready_worker(enc)
    monkeypatch.setattr(encoder_module, "_TASK_CHARS", 1500)
    enc.prepare_process = True
    enc.encode_documents(_many_docs())  # groups laid out and padded there, from the layout sent
    names = ["torch", "transformers", "__mp_main__", "landmark_rag.encode.encoder"]
    assert worker.submit("prepare_faults:loaded", names).result(timeout=60) == []


def _ready_pool(enc, n: int) -> list[process.PreparationWorker]:
    workers = process.shared_workers(n)
    assert len(workers) == n
    tt = text_tokenizer(enc.tokenizer)
    deadline = time.monotonic() + 60
    for worker in workers:
        while worker.tokenizer_key(tt) is None:
            assert worker.alive and time.monotonic() < deadline, "a preparation process did not come up"
            time.sleep(0.02)
    return workers


def test_cuda_prepares_larger_groups_than_a_cpu(tiny_encoder, monkeypatch, worker_restarts) -> None:
    """On a CPU a worker's group is bounded by ``_TASK_CHARS`` (the chunks handed over show it);
    CUDA's bound is the larger one, since there each group costs the launching thread."""
    enc = tiny_encoder(max_length=64)
    monkeypatch.setattr(encoder_module, "_TASK_CHARS", 1500)
    monkeypatch.setattr(encoder_module, "_CUDA_TASK_CHARS", 6000)
    enc.prepare_process = True
    worker = _ready_worker(enc)
    sizes: list[int] = []
    submit = worker.submit
    monkeypatch.setattr(worker, "submit", lambda target, key, texts, *rest: sizes.append(sum(map(len, texts)))
                        or submit(target, key, texts, *rest))
    docs = _many_docs()
    enc.encode_documents(docs)
    longest = max(len(d) for d in docs)
    assert sizes and max(sizes) < 1500 + longest  # a chunk closes once it reaches the bound
    assert enc._task_chars == 1500
    kept = enc.device
    try:
        enc.device = torch.device("cuda")  # read only: nothing runs there
        assert enc._task_chars == 6000
        enc.device = torch.device("mps")  # no deferred launches there: the CPU's bound
        assert enc._task_chars == 1500
    finally:
        enc.device = kept
    # the chunking reads the device's bound: with CUDA's, chunks grow past the CPU's
    monkeypatch.setattr(encoder_module, "_TASKS_PER_WORKER", 1)  # the call's share must not cap it
    monkeypatch.setattr(type(enc), "_task_chars", property(lambda self: encoder_module._CUDA_TASK_CHARS))
    sizes.clear()
    enc.encode_documents(docs)
    assert max(sizes) >= 1500 + longest


@pytest.mark.parametrize("pooling", ["landmark", "mean"])
def test_a_pool_of_workers_prepares_the_same_documents_in_order(tiny_encoder, monkeypatch, worker_restarts, pooling) -> None:
    """Documents of very different lengths (one of 400 sentences next to empty ones) spread
    over three workers that finish in any order: the same sentences and vectors, in order."""
    enc = tiny_encoder(max_length=64, pooling=pooling)
    docs = [*_docs(), *_many_docs()]
    ids = [f"d{i}" for i in range(len(docs))]
    monkeypatch.setattr(encoder_module, "_TASK_CHARS", 1500)
    enc.prepare_process = False
    here = enc.encode_documents(docs, doc_ids=ids, batch_size=3)
    halves_here = enc.encode_prepared(enc.prepare_documents(docs, doc_ids=ids, batch_size=3))
    enc.prepare_process, enc.prepare_workers = True, 3
    workers = _ready_pool(enc, 3)
    sent: dict[int, int] = {}
    for worker in workers:
        submit = worker.submit
        monkeypatch.setattr(
            worker, "submit",
            lambda target, *args, _w=worker, _s=submit: sent.__setitem__(_w.pid, sent.get(_w.pid, 0) + 1) or _s(target, *args),
        )
    there = enc.encode_documents(docs, doc_ids=ids, batch_size=3)
    assert len(sent) == 3 and sum(sent.values()) >= 6  # every worker had a share
    _same(there, here, atol=1e-5)
    sent.clear()
    _same(enc.encode_prepared(enc.prepare_documents(docs, doc_ids=ids, batch_size=3)), halves_here, atol=1e-5)
    assert sum(sent.values()) >= 6  # the host half alone goes there too
    _wait_gone()


def test_a_worker_of_a_pool_that_ends_mid_way_loses_nothing(tiny_encoder, monkeypatch, caplog, worker_restarts) -> None:
    enc = tiny_encoder(max_length=64)
    monkeypatch.setattr(encoder_module, "_TASK_CHARS", 1500)
    docs = _docs() * 3
    enc.prepare_process = False
    here = enc.encode_documents(docs)
    enc.prepare_process, enc.prepare_workers = True, 2
    first = _ready_pool(enc, 2)
    monkeypatch.setattr(process, "TASK", "prepare_faults:prepare_or_die")
    with caplog.at_level("WARNING", logger="landmark_rag.encode.encoder"):
        there = enc.encode_documents(docs)
    _same(there, here, atol=1e-5)
    assert "preparation process ended" in caplog.text and not all(w.alive for w in first)
    _wait_gone()
    monkeypatch.setattr(process, "TASK", "landmark_rag.encode.runtime.process:prepare_group")
    second = _ready_pool(enc, 2)  # the next large call has two workers again
    assert all(w.alive for w in second)
    _same(enc.encode_documents(docs), here, atol=1e-5)


def test_worker_tasks_come_back_in_order_with_their_own_errors(tiny_encoder, worker_restarts) -> None:
    worker = _ready_worker(tiny_encoder(max_length=64))
    futures = [worker.submit("json:loads", text) for text in ("1", "[2]", "{not json", '"four"')]
    assert futures[0].result(timeout=60) == 1 and futures[1].result(timeout=60) == [2]
    with pytest.raises(json.JSONDecodeError) as info:
        futures[2].result(timeout=60)
    assert any("raised in the preparation process" in note for note in info.value.__notes__)
    assert futures[3].result(timeout=60) == "four"


def test_an_error_in_the_worker_surfaces_as_itself(tiny_encoder, monkeypatch, worker_restarts) -> None:
    enc = tiny_encoder(max_length=64)
    enc.prepare_process = True
    monkeypatch.setattr(encoder_module, "_GROUP_TOKENS", 50)
    monkeypatch.setattr(encoder_module, "_TASK_CHARS", 1500)
    _ready_worker(enc)
    monkeypatch.setattr(process, "TASK", "prepare_faults:prepare_or_fail")
    with pytest.raises(prepare_faults.ChunkFailed, match="chronicle"):
        enc.encode_documents(_docs())
    _wait_gone()
    docs = _many_docs()
    with pytest.raises(TypeError, match="must be str"):
        enc.encode_documents([*docs[:6], b"bytes", *docs[6:]])  # type: ignore[list-item]
    _wait_gone()
    monkeypatch.undo()
    enc.prepare_process = False
    here = enc.encode_documents(docs)
    enc.prepare_process = True
    _same(enc.encode_documents(docs), here)  # and it works on afterwards


def test_a_worker_that_ends_mid_way_loses_nothing(tiny_encoder, monkeypatch, caplog, worker_restarts) -> None:
    enc = tiny_encoder(max_length=64)
    monkeypatch.setattr(encoder_module, "_GROUP_TOKENS", 50)
    monkeypatch.setattr(encoder_module, "_TASK_CHARS", 1500)
    docs = _docs() * 2
    enc.prepare_process = False
    here = enc.encode_documents(docs)
    enc.prepare_process = True
    first = _ready_worker(enc)
    monkeypatch.setattr(process, "TASK", "prepare_faults:prepare_or_die")
    with caplog.at_level("WARNING", logger="landmark_rag.encode.encoder"):
        there = enc.encode_documents(docs)
    _same(there, here)
    assert "preparation process ended" in caplog.text and not first.alive
    _wait_gone()
    second = _ready_worker(enc)  # the next large call has a worker again
    assert second.alive and second.pid != first.pid


@pytest.mark.parametrize(
    ("env", "setting", "expected"),
    [(None, None, False), ("1", None, True), (None, True, True), ("on", False, False), ("0", True, False), ("off", None, False)],
)
def test_the_switch(monkeypatch, env, setting, expected) -> None:
    if env is None:
        monkeypatch.delenv(process.ENV_SWITCH, raising=False)
    else:
        monkeypatch.setenv(process.ENV_SWITCH, env)
    assert process.wanted(setting) is expected


@pytest.mark.parametrize(
    ("env", "workers_env", "setting", "workers", "accelerator", "cores", "expected"),
    [
        (None, None, None, None, False, 16, 0),  # a CPU: off unless asked
        ("1", None, None, None, False, 16, 1),  # asked on a CPU: one worker
        (None, None, None, None, True, 16, 12),  # an accelerator: the cores less four, at most 12
        (None, None, None, None, True, 8, 4),
        (None, None, None, None, True, 4, 0),  # too few cores to spare
        (None, "6", None, None, True, 16, 6),
        (None, "6", None, 3, True, 16, 3),  # the encoder's own count first
        ("0", None, True, 3, True, 16, 0),  # the switch off wins
        (None, None, False, None, True, 16, 0),
        (None, None, True, 0, True, 16, 0),  # zero workers: none
        ("1", "0", None, None, False, 16, 0),
        (None, None, True, None, True, 4, 1),  # asked for on a small host: one
    ],
)
def test_how_many_workers(monkeypatch, env, workers_env, setting, workers, accelerator, cores, expected) -> None:
    for name, value in ((process.ENV_SWITCH, env), (process.ENV_WORKERS, workers_env)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    monkeypatch.setattr(process, "cores", lambda: cores)
    assert process.pool_size(setting, workers, accelerator) == expected


def test_a_request_the_worker_cannot_read_ends_it_and_loses_nothing(tiny_encoder, monkeypatch, worker_restarts) -> None:
    enc = tiny_encoder(max_length=64)
    worker = _ready_worker(enc)
    with pytest.raises(process.WorkerGone):
        worker.submit("json:loads", prepare_faults.Unreadable()).result(timeout=60)
    deadline = time.monotonic() + 30
    while worker.alive and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not worker.alive  # ended, not hanging with the caller waiting on it

    class Local:  # does not pickle at all: the task is refused here, the worker lives on
        pass

    second = _ready_worker(enc)
    with pytest.raises(process.WorkerGone, match="could not be sent"):
        second.submit("json:loads", Local()).result(timeout=60)
    assert second.alive and second.submit("json:loads", "[1]").result(timeout=60) == [1]


def test_a_str_subclass_of_the_callers_is_prepared_as_its_text(tiny_encoder, monkeypatch, worker_restarts) -> None:
    class Text(str):
        pass

    enc = tiny_encoder(max_length=64)
    monkeypatch.setattr(encoder_module, "_TASK_CHARS", 1500)
    docs = _many_docs()
    enc.prepare_process = False
    here = enc.encode_documents(docs)
    enc.prepare_process = True
    first = _ready_worker(enc)
    _same(enc.encode_documents([Text(d) for d in docs]), here, atol=1e-5)
    assert first.alive


def test_a_bad_worker_count_is_an_error(monkeypatch) -> None:
    monkeypatch.setenv(process.ENV_SWITCH, "1")
    monkeypatch.setenv(process.ENV_WORKERS, "many")
    with pytest.raises(ValueError, match="LANDMARK_RAG_PREPARE_WORKERS"):
        process.pool_size(None, None)
    with pytest.raises(ValueError, match="0 or more"):
        process.pool_size(True, -2)


def test_a_child_forked_after_the_pool_started_neither_hangs_nor_disturbs_it(tiny_encoder, worker_restarts) -> None:
    """A fork (multiprocessing, a DataLoader) while the pool's reader threads wait on their
    pipes: the child lets go of the parent's pipe ends and goes on; the parent's workers answer."""
    import os

    enc = tiny_encoder(max_length=64)
    workers = _ready_pool(enc, 2)
    pid = os.fork()
    if pid == 0:  # the child: prove it got past the fork hooks, then leave at once
        os._exit(0 if not process._WORKERS else 3)
    deadline = time.monotonic() + 30
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            raise AssertionError("the forked child hung")
        time.sleep(0.02)
    assert os.waitstatus_to_exitcode(status) == 0
    assert [w.submit("json:loads", "[1]").result(timeout=60) for w in workers] == [[1], [1]]


@pytest.mark.parametrize("group_tokens", [1, 300, 1 << 17])
def test_launched_batches_finish_as_the_batches_run_one_by_one(tiny_encoder, monkeypatch, group_tokens) -> None:
    """An accelerator's path (each group's batches launched, the group finished once the next
    one is launched), taken here on the CPU: the same vectors, in order, as batches run one
    after the other; and a batch that runs out of memory there is retried in halves."""
    import torch

    from landmark_rag.encode.encoder import LandmarkEncoder

    enc = tiny_encoder(max_length=64, pooling="mean")
    docs = _docs()
    ids = [f"d{i}" for i in range(len(docs))]
    monkeypatch.setattr(encoder_module, "_GROUP_TOKENS", group_tokens)
    here = enc.encode_documents(docs, doc_ids=ids, batch_size=3)
    monkeypatch.setattr(LandmarkEncoder, "_defer_on_cpu", True)
    launched = []
    real_launch = LandmarkEncoder._launch_group
    monkeypatch.setattr(LandmarkEncoder, "_launch_group", lambda self, plan: launched.append(plan) or real_launch(self, plan))
    _same(enc.encode_documents(docs, doc_ids=ids, batch_size=3), here, atol=1e-6)
    assert launched
    real = LandmarkEncoder._forward_pool_device
    calls: list[int] = []

    def flaky(self, batch, *args, **kwargs):
        calls.append(len(batch.jobs))
        if len(calls) == 2 and len(batch.jobs) > 1:
            raise torch.OutOfMemoryError("a simulated out-of-memory")
        return real(self, batch, *args, **kwargs)

    monkeypatch.setattr(LandmarkEncoder, "_forward_pool_device", flaky)
    _same(enc.encode_documents(docs, doc_ids=ids, batch_size=3), here, atol=1e-6)
    _same(enc.encode_prepared(enc.prepare_documents(docs, doc_ids=ids, batch_size=3)), here, atol=1e-6)


@pytest.mark.parametrize(
    ("content", "expected"),
    [("max 100000\n", 16), ("150000 100000\n", 2), ("50000 100000\n", 1), ("garbage", 16), (None, 16), ("0 0", 16)],
)
def test_cores_are_capped_by_a_cgroup_quota(monkeypatch, content, expected) -> None:
    import io

    monkeypatch.setattr(process.os, "sched_getaffinity", lambda _pid: set(range(16)), raising=False)

    def fake_open(path, *args, **kwargs):
        if content is None:
            raise FileNotFoundError(path)
        return io.StringIO(content)

    monkeypatch.setattr(process, "open", fake_open, raising=False)
    assert process.cores() == expected


@pytest.mark.parametrize("pooling", ["landmark", "mean"])
def test_groups_prepared_together_run_as_one_pass_on_an_accelerator(tiny_encoder, monkeypatch, worker_restarts, pooling) -> None:
    """On an accelerator's path (taken here on the CPU), groups the workers have already
    prepared when the next one is due are joined into one pass (up to ``batch_tokens``): far
    fewer passes, the same documents, sentences and vectors, in order."""
    from landmark_rag.encode.encoder import LandmarkEncoder

    enc = tiny_encoder(max_length=64, pooling=pooling)
    docs = [*_docs(), *_many_docs()]
    ids = [f"d{i}" for i in range(len(docs))]
    monkeypatch.setattr(encoder_module, "_TASK_CHARS", 1500)
    enc.prepare_process = False
    here = enc.encode_documents(docs, doc_ids=ids, batch_tokens=1 << 14)
    enc.prepare_process, enc.prepare_workers = True, 2
    for worker in _ready_pool(enc, 2):
        submit = worker.submit

        def settled(target, *args, _submit=submit):
            future = _submit(target, *args)
            future.exception(timeout=60)  # done before it is looked at: every group is ready at once
            return future

        monkeypatch.setattr(worker, "submit", settled)
    monkeypatch.setattr(LandmarkEncoder, "_defer_on_cpu", True)
    passes: list[int] = []
    real = LandmarkEncoder._forward_pool_device

    def counted(self, batch, *args, **kwargs):
        passes.append(batch.ids.numel())
        return real(self, batch, *args, **kwargs)

    monkeypatch.setattr(LandmarkEncoder, "_forward_pool_device", counted)
    joined = enc.encode_documents(docs, doc_ids=ids, batch_tokens=1 << 14)
    joined_passes, passes[:] = list(passes), []
    monkeypatch.setattr(encoder_module, "_take_ready", lambda *args: None)
    alone = enc.encode_documents(docs, doc_ids=ids, batch_tokens=1 << 14)
    assert len(passes) >= 6 and len(joined_passes) <= len(passes) / 3
    assert max(joined_passes) <= 1 << 14
    _same(joined, here, atol=1e-5)
    _same(alone, here, atol=1e-5)
    _wait_gone()
