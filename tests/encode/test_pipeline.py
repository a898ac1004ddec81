"""The producer thread that prepares group n + 1 while group n encodes (``runtime.parallel.Prefetch``):
nothing lost, duplicated or reordered; an error surfaces as itself, where it happened; the thread ends."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from landmark_rag.encode import encoder as encoder_module
from landmark_rag.encode.runtime.parallel import Prefetch


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
