"""The write path prepares group n + 1 while group n encodes (``ingest.write.write_documents``
with an encoder that has ``prepare`` and ``run``), and with ``overlap_store`` (an encoder on an
accelerator) encodes group n + 1 while group n is stored: the overlap happens, and it loses,
duplicates and reorders nothing, whatever the documents' lengths, empty documents included;
a failure in either half costs only its own document; the store is only called from the
calling thread.

Real parts: a real Chroma PersistentClient in a tmp folder, the tiny random BERT of
tests/conftest.py; the encoders below wrap its real ``prepare_documents`` / ``encode_prepared``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from landmark_rag.encode.protocols import PreparingEncoder
from landmark_rag.ingest import DocumentEncoder, SourceDocument, write_documents
from landmark_rag.store import ChromaSentenceStore
from landmark_rag.types import EncodedDocument

WORDS = "Cats purr when content. They sleep a lot. Kittens play with yarn. Rockets need fuel. "


def docs_of_lengths(lengths: Sequence[int]) -> list[SourceDocument]:
    """Documents of ``lengths`` repeats of four sentences (0: an empty document), ids in order."""
    return [SourceDocument(f"d{i:03d}", WORDS * n) for i, n in enumerate(lengths)]


@pytest.fixture()
def store(tmp_path: Path, tiny_encoder) -> ChromaSentenceStore:
    return ChromaSentenceStore.open(tmp_path / "db", identity=tiny_encoder().config.identity())


class Recording:
    """A ``DocumentEncoder`` over the tiny encoder's two halves that records what ran where.

    ``hold_first_run``: the first ``run`` waits (up to 10 s) until ``prepare`` has been called
    for a later group, which only happens if preparation overlaps encoding.
    """

    def __init__(self, encoder: PreparingEncoder, *, hold_first_run: bool = False, fail_prepare: str | None = None,
                 fail_run: str | None = None, overlap_store: bool = False) -> None:
        self.encoder = encoder
        self.overlap_store = overlap_store
        self.prepared: list[list[str]] = []
        self.ran: list[list[str]] = []
        self.encoded: list[list[str]] = []  # calls of encode: the first group, and one-by-one retries
        self.overlapped = threading.Event()
        self.hold_first_run = hold_first_run
        self.fail_prepare, self.fail_run = fail_prepare, fail_run
        self.prepare_threads: set[str] = set()
        self.run_threads: set[str] = set()

    def prepare(self, texts: list[str], ids: list[str]):
        self.prepare_threads.add(threading.current_thread().name)
        self.prepared.append(list(ids))
        if len(self.prepared) >= 2:
            self.overlapped.set()
        if self.fail_prepare in ids:
            raise RuntimeError(f"prepare failed on {self.fail_prepare}")
        return ids, self.encoder.prepare_documents(texts, ids)

    def run(self, prepared) -> list[EncodedDocument]:
        ids, inner = prepared
        self.run_threads.add(threading.current_thread().name)
        if self.hold_first_run and not self.ran:
            assert self.overlapped.wait(10), "the next group was not prepared while this one encoded"
        self.ran.append(list(ids))
        if self.fail_run in ids:
            raise RuntimeError(f"run failed on {self.fail_run}")
        return self.encoder.encode_prepared(inner)

    def encode(self, texts: list[str], ids: list[str]) -> list[EncodedDocument]:
        self.encoded.append(list(ids))
        if self.fail_prepare in ids or self.fail_run in ids:
            raise RuntimeError("this document cannot be encoded")
        return self.encoder.encode_documents(texts, ids)

    def document_encoder(self) -> DocumentEncoder:
        return DocumentEncoder(self.encode, None, self.prepare, self.run, overlap_store=self.overlap_store)


def stored_ids(store: ChromaSentenceStore) -> list[str]:
    return sorted(store.documents())


def test_the_next_group_is_prepared_while_the_current_one_encodes(store, tiny_encoder) -> None:
    rec = Recording(tiny_encoder(), hold_first_run=True)
    docs = docs_of_lengths([3] * 6)
    report = write_documents(store, docs, rec.document_encoder, errors="raise", group_tokens=16)
    assert [o.doc_id for o in report.outcomes] == [d.doc_id for d in docs]
    # the first group is encoded whole while the model loads here; each later one prepared
    # once on the producer thread and run once, in order
    assert rec.encoded == [["d000"]]
    assert rec.ran == rec.prepared == [[d.doc_id] for d in docs[1:]]
    assert rec.prepare_threads == {"landmark-prepare"}
    assert rec.run_threads == {threading.current_thread().name}  # on a CPU the device half runs here


def test_with_overlap_store_the_next_group_encodes_while_the_current_one_is_stored(store, tiny_encoder) -> None:
    rec = Recording(tiny_encoder(), overlap_store=True)
    encoded_before_stored = threading.Event()
    store_threads: set[str] = set()
    add_documents = store.add_documents

    def recording_add(documents, **kwargs):
        store_threads.add(threading.current_thread().name)
        if documents[0].doc_id == "d000":  # the first group's write waits for the second group's encoding
            assert_wait = encoded_before_stored.wait(10)
            assert assert_wait, "the next group was not encoded while this one was stored"
        return add_documents(documents, **kwargs)

    run = rec.run

    def recording_run(prepared):
        out = run(prepared)
        if len(rec.ran) >= 2:
            encoded_before_stored.set()
        return out

    rec.run = recording_run  # type: ignore[method-assign]
    store.add_documents = recording_add  # type: ignore[method-assign]
    docs = docs_of_lengths([3] * 5)
    report = write_documents(store, docs, rec.document_encoder, errors="raise", group_tokens=16)
    assert [o.doc_id for o in report.outcomes] == [d.doc_id for d in docs]
    assert rec.encoded == [["d000"]] and rec.ran == rec.prepared == [[d.doc_id] for d in docs[1:]]
    assert rec.run_threads == {"landmark-encode"}
    assert store_threads == {threading.current_thread().name}  # every write from the calling thread
    assert stored_ids(store) == [d.doc_id for d in docs]


@pytest.mark.parametrize("overlap_store", [False, True])
def test_mixed_lengths_and_empty_documents_lose_and_reorder_nothing(store, tiny_encoder, overlap_store) -> None:
    lengths = [40, 0, 1, 0, 25, 2, 1, 0, 60, 3, 1, 1, 1, 0]
    docs = docs_of_lengths(lengths)
    rec = Recording(tiny_encoder(), overlap_store=overlap_store)
    report = write_documents(store, docs, rec.document_encoder, group_tokens=64)
    assert [o.doc_id for o in report.outcomes] == [d.doc_id for d in docs]
    status = {o.doc_id: o.status for o in report.outcomes}
    assert {d for d, s in status.items() if s == "skipped"} == {d.doc_id for d, n in zip(docs, lengths) if n == 0}
    assert stored_ids(store) == sorted(d.doc_id for d, n in zip(docs, lengths) if n > 0)
    # every document prepared (or, in the first group, encoded whole) once, in document order
    flat = [i for group in rec.encoded[:1] + rec.prepared for i in group]
    assert flat == [d.doc_id for d in docs]
    for doc, n in zip(docs, lengths):
        if n:
            assert len(store.read_document(doc.doc_id)) == 4 * n


def test_vectors_equal_the_one_call_path(store, tiny_encoder) -> None:
    encoder = tiny_encoder()
    docs = docs_of_lengths([7, 1, 30, 2])
    write_documents(store, docs, lambda: DocumentEncoder.of(encoder), errors="raise", group_tokens=32)
    direct = encoder.encode_documents([d.text for d in docs], [d.doc_id for d in docs])
    for doc, want in zip(docs, direct):
        got = store.read_document(doc.doc_id, embeddings=True)
        assert [s.index for s in got.sentences] == [s.index for s in want.sentences]
        np.testing.assert_allclose(got.embeddings, want.embeddings, atol=1e-6)


@pytest.mark.parametrize("overlap_store", [False, True])
@pytest.mark.parametrize("half", ["prepare", "run"])
def test_a_failure_in_either_half_costs_only_its_document(store, tiny_encoder, half: str, overlap_store) -> None:
    docs = docs_of_lengths([2, 3, 1, 4, 2, 5])
    bad = "d003"
    rec = Recording(tiny_encoder(), overlap_store=overlap_store, **{f"fail_{half}": bad})
    report = write_documents(store, docs, rec.document_encoder, group_tokens=48)
    assert [o.doc_id for o in report.outcomes] == [d.doc_id for d in docs]
    status = {o.doc_id: o.status for o in report.outcomes}
    assert status.pop(bad) == "skipped" and set(status.values()) == {"indexed"}
    assert stored_ids(store) == sorted(d.doc_id for d in docs if d.doc_id != bad)
    assert [bad] in rec.encoded  # its group was encoded one by one to find it


@pytest.mark.parametrize("overlap_store", [False, True])
def test_errors_raise_propagates_a_prepare_failure_as_itself(store, tiny_encoder, overlap_store) -> None:
    rec = Recording(tiny_encoder(), fail_prepare="d002", overlap_store=overlap_store)
    with pytest.raises(RuntimeError, match="prepare failed on d002"):
        write_documents(store, docs_of_lengths([2, 2, 2, 2]), rec.document_encoder, errors="raise", group_tokens=16)
    assert "d002" not in stored_ids(store) and "d003" not in stored_ids(store)


def test_a_model_that_fails_to_load_ends_the_run(store) -> None:
    def broken() -> DocumentEncoder:
        raise OSError("no weights here")

    with pytest.raises(OSError, match="no weights here"):
        write_documents(store, docs_of_lengths([1, 1]), broken)
    assert stored_ids(store) == []


@pytest.mark.parametrize("overlap_store", [False, True])
def test_ctrl_c_while_reading_documents_ends_the_run_with_a_report(store, tiny_encoder, overlap_store) -> None:
    def documents():
        yield from docs_of_lengths([2, 2, 2])
        raise KeyboardInterrupt

    rec = Recording(tiny_encoder(), overlap_store=overlap_store)
    report = write_documents(store, documents(), rec.document_encoder, group_tokens=16)
    assert report.interrupted
    assert [o.doc_id for o in report.outcomes] == ["d000", "d001", "d002"]
    assert stored_ids(store) == ["d000", "d001", "d002"]
    assert not [t for t in threading.enumerate() if t.name in ("landmark-prepare", "landmark-encode")]


def test_a_failing_store_stops_the_encoding_thread(store, tiny_encoder) -> None:
    from landmark_rag.ingest import StoreFailedError
    from landmark_rag.store import StoreError

    add_documents = store.add_documents

    def failing_add(documents, **kwargs):
        if "d002" in [d.doc_id for d in documents]:
            raise StoreError("disk full")
        return add_documents(documents, **kwargs)

    store.add_documents = failing_add  # type: ignore[method-assign]
    rec = Recording(tiny_encoder(), overlap_store=True)
    with pytest.raises(StoreFailedError) as caught:
        write_documents(store, docs_of_lengths([2] * 8), rec.document_encoder, group_tokens=16)
    assert [o.doc_id for o in caught.value.report.outcomes] == ["d000", "d001"]
    assert caught.value.report.not_reached == 0  # total unknown
    assert stored_ids(store) == ["d000", "d001"]
    assert not [t for t in threading.enumerate() if t.name in ("landmark-prepare", "landmark-encode")]


def test_the_tiny_encoder_has_both_halves(tiny_encoder) -> None:
    encoder = tiny_encoder()
    assert isinstance(encoder, PreparingEncoder)
    de = DocumentEncoder.of(encoder)
    assert de.prepare is not None and de.run is not None
    assert not de.overlap_store  # on a CPU the forward has every core: no third busy thread
    with pytest.raises(ValueError, match="both prepare and run"):
        DocumentEncoder(de.encode, None, de.prepare, None)


@pytest.mark.parametrize("overlap_store", [False, True])
def test_the_encoder_is_loaded_on_the_calling_thread(store, tiny_encoder, overlap_store) -> None:
    """Loading may read the store (a lazily opened index checks its identity): it happens on
    the thread every store call of the run is made from, once."""
    loads: list[str] = []
    rec = Recording(tiny_encoder(), overlap_store=overlap_store)

    def factory() -> DocumentEncoder:
        loads.append(threading.current_thread().name)
        return rec.document_encoder()

    report = write_documents(store, docs_of_lengths([2] * 5), factory, errors="raise", group_tokens=16)
    assert report.counts()["indexed"] == 5
    assert loads == [threading.current_thread().name]


def test_a_lazily_opened_index_checks_its_model_on_the_calling_thread(tmp_path: Path, tiny_bert_dir: Path,
                                                                      monkeypatch) -> None:
    from landmark_rag import LandmarkIndex

    LandmarkIndex.open(tmp_path / "db", model=str(tiny_bert_dir)).add_texts([WORDS], ids=["first"])
    checks: list[str] = []
    check_identity = ChromaSentenceStore.check_identity

    def recording(self, *args, **kwargs):
        checks.append(threading.current_thread().name)
        return check_identity(self, *args, **kwargs)

    monkeypatch.setattr(ChromaSentenceStore, "check_identity", recording)
    index = LandmarkIndex.open(tmp_path / "db", lazy=True)
    checks.clear()
    index.add_texts([WORDS * n for n in (3, 1, 5, 2)], ids=["a", "b", "c", "d"])
    assert sorted(index.sentence_store.documents()) == ["a", "b", "c", "d", "first"]
    assert checks and set(checks) == {threading.current_thread().name}
    assert not [t for t in threading.enumerate() if t.name in ("landmark-prepare", "landmark-encode")]
