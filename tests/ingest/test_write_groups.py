"""The write path stores each encoded group with the store's protocol run once for the group
(``ingest.write.write_group`` -> ``ChromaSentenceStore.add_documents``), and reports exactly
what writing one document at a time reports: the same outcomes in the same order, a document
the store refuses skipped alone, a store failure stopping the run with the documents it had
committed counted.

Real parts: a real Chroma PersistentClient in a tmp folder, the tiny random BERT of
tests/conftest.py. The one-by-one reference is the same store behind a wrapper without
``add_documents`` (a store of the protocol that cannot write groups).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from landmark_rag.ingest import DocumentEncoder, SourceDocument, StoreFailedError, write_documents
from landmark_rag.store import ChromaSentenceStore, StoreError
from landmark_rag.store.protocols import GroupWriter
from landmark_rag.types import EncodedDocument

WORDS = "Cats purr when content. They sleep a lot. Kittens play with yarn. Rockets need fuel. "


def docs_of_lengths(lengths: Sequence[int]) -> list[SourceDocument]:
    """Documents of ``lengths`` repeats of four sentences (0: an empty document), ids in order."""
    return [SourceDocument(f"d{i:03d}", WORDS * n, {"n": n}) for i, n in enumerate(lengths)]


class OneByOne:
    """The real store without ``add_documents``: the write path writes it one document at a time."""

    def __init__(self, store: ChromaSentenceStore) -> None:
        self.store = store

    def __getattr__(self, name: str) -> Any:
        if name == "add_documents":
            raise AttributeError(name)
        return getattr(self.store, name)


class Spy:
    """The real store, recording the documents of each ``add_documents`` call; ``fail``: the
    calls whose documents include that id raise it (a ``StoreError`` or any other error)."""

    def __init__(self, store: ChromaSentenceStore, fail: tuple[str, Exception] | None = None) -> None:
        self.store, self.fail = store, fail
        self.groups: list[list[str]] = []
        self.singles: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def add_documents(self, documents: Sequence[EncodedDocument], **kwargs: Any) -> list[int]:
        ids = [str(d.doc_id) for d in documents]
        self.groups.append(ids)
        if self.fail is not None and self.fail[0] in ids:
            raise self.fail[1]
        return self.store.add_documents(documents, **kwargs)

    def add_document(self, encoded: EncodedDocument, **kwargs: Any) -> int:
        self.singles.append(str(encoded.doc_id))
        if self.fail is not None and self.fail[0] == encoded.doc_id:
            raise self.fail[1]
        return self.store.add_document(encoded, **kwargs)


def open_store(path: Path, tiny_encoder) -> ChromaSentenceStore:
    return ChromaSentenceStore.open(path, identity=tiny_encoder().config.identity())


def snapshot(store: ChromaSentenceStore) -> dict[str, Any]:
    """What readers see, and the counts that must be exact."""
    records = store.documents(include_incomplete=True)
    return {
        "records": {d: {k: v for k, v in md.items() if k != "doc_version"} for d, md in records.items()},
        "sentences": {d: store.read_document(d).sentences for d in records},
        "count": store.count_sentences(),
    }


def test_the_store_is_a_group_writer_and_a_wrapper_without_add_documents_is_not(tmp_path, tiny_encoder) -> None:
    store = open_store(tmp_path / "db", tiny_encoder)
    assert isinstance(store, GroupWriter) and not isinstance(OneByOne(store), GroupWriter)


def test_each_group_is_one_write_and_the_report_equals_one_by_one(tmp_path, tiny_encoder, monkeypatch) -> None:
    monkeypatch.setattr("landmark_rag.ingest.write.GROUP_DOCS", 4)
    encoder = tiny_encoder()
    lengths = [2, 1, 0, 3, 1, 1, 2, 1, 1, 2]  # d002 is empty: skipped, between two writes of its group
    reports, states = {}, {}
    for mode in ("grouped", "one"):
        store = open_store(tmp_path / mode, tiny_encoder)
        target = Spy(store) if mode == "grouped" else OneByOne(store)
        for version in (1, 2):  # new documents, then every one replaced (d003 shrinks)
            docs = docs_of_lengths([1 if (version, n) == (2, 3) else n for n in lengths])
            if version == 2:
                docs = [SourceDocument(d.doc_id, d.text and d.text + " Version two.", d.metadata) for d in docs]
            report = write_documents(target, docs, lambda: DocumentEncoder.of(encoder))
            reports[mode, version] = [(o.doc_id, o.status, o.reason, o.sentences, o.tokens) for o in report.outcomes]
        states[mode] = snapshot(store)
        if mode == "grouped":
            # groups of 4 documents; the skipped one splits its group's write in two
            assert target.groups == [["d000", "d001"], ["d003"], ["d004", "d005", "d006", "d007"], ["d008", "d009"]] * 2
            assert target.singles == []
    assert reports["grouped", 1] == reports["one", 1] and reports["grouped", 2] == reports["one", 2]
    assert {s for _, s, *_ in reports["grouped", 2]} == {"updated", "skipped"}
    assert states["grouped"] == states["one"]
    assert states["grouped"]["count"] == sum(md["n_sentences"] for md in states["grouped"]["records"].values())


@pytest.mark.parametrize("errors", ["report", "raise"])
def test_a_document_the_store_refuses_costs_only_itself(tmp_path, tiny_encoder, errors) -> None:
    """A document the store refuses before writing (its vectors do not match its sentences)
    fails the group's write with a ValueError; the group is then written one by one, so that
    document is reported (or, with ``raise``, raised) exactly as one-by-one writing does and the
    others land."""
    encoder = tiny_encoder()
    docs = docs_of_lengths([1, 2, 1, 3, 1])

    def encode(texts: list[str], doc_ids: list[str]) -> list[EncodedDocument]:
        out = list(encoder.encode_documents(texts, doc_ids))
        return [
            EncodedDocument(e.text, e.sentences, e.embeddings[:-1], e.doc_id, e.tokens) if e.doc_id == "d002" else e
            for e in out
        ]

    got = {}
    for mode in ("grouped", "one"):
        store = open_store(tmp_path / mode, tiny_encoder)
        target = Spy(store) if mode == "grouped" else OneByOne(store)
        if errors == "raise":
            with pytest.raises(ValueError, match="sentences and embeddings differ in length"):
                write_documents(target, docs, lambda: DocumentEncoder(encode), errors="raise")
            got[mode] = (sorted(store.documents()), snapshot(store))
        else:
            report = write_documents(target, docs, lambda: DocumentEncoder(encode))
            got[mode] = ([(o.doc_id, o.status, o.reason) for o in report.outcomes], snapshot(store))
        if mode == "grouped":
            assert target.groups == [[d.doc_id for d in docs]]  # tried as a group first, then one by one
            assert target.singles == ([d.doc_id for d in docs] if errors == "report" else ["d000", "d001", "d002"])
    assert got["grouped"] == got["one"]
    if errors == "report":
        outcomes = got["grouped"][0]
        assert outcomes[2] == (
            "d002",
            "skipped",
            "failed to store: ValueError: sentences and embeddings differ in length",
        )
        assert [s for _, s, _ in outcomes] == ["indexed", "indexed", "skipped", "indexed", "indexed"]
    else:
        assert got["grouped"][0] == ["d000", "d001"]  # the ones before it, as one by one


def test_a_store_failure_stops_the_run_and_counts_only_committed_groups(tmp_path, tiny_encoder, monkeypatch) -> None:
    monkeypatch.setattr("landmark_rag.ingest.write.GROUP_DOCS", 2)
    store = open_store(tmp_path / "db", tiny_encoder)
    target = Spy(store, fail=("d003", StoreError("store failed while writing: injected")))
    with pytest.raises(StoreFailedError, match="injected") as info:
        write_documents(
            target, docs_of_lengths([1, 1, 1, 1, 1, 1]), lambda: DocumentEncoder.of(tiny_encoder()), total=6
        )
    report = info.value.report
    assert [o.doc_id for o in report.outcomes] == ["d000", "d001"]  # the failing group: none of it
    assert report.not_reached == 4 and report.counts()["skipped"] == 0
    assert sorted(store.documents()) == ["d000", "d001"]
    assert target.singles == []  # a store failure is not retried one by one


def test_a_store_failure_after_a_groups_commit_counts_the_group(tmp_path, tiny_encoder, monkeypatch) -> None:
    """The store fails while deleting the replaced versions (after the commit): the group's
    new versions are what readers see, so the report counts them written; the next run cleans up."""
    from chromadb.api.models.Collection import Collection

    monkeypatch.setattr("landmark_rag.ingest.write.GROUP_DOCS", 3)
    encoder = tiny_encoder()
    store = open_store(tmp_path / "db", tiny_encoder)
    docs = docs_of_lengths([1, 2, 1, 1, 2])
    write_documents(store, docs, lambda: DocumentEncoder.of(encoder))
    new = [SourceDocument(d.doc_id, d.text + " Version two.", d.metadata) for d in docs]
    delete = Collection.delete

    def failing_delete(self, *args, **kwargs):
        raise ConnectionError("injected: connection reset by peer")

    monkeypatch.setattr(Collection, "delete", failing_delete)
    with pytest.raises(StoreFailedError, match="injected") as info:
        write_documents(store, new, lambda: DocumentEncoder.of(encoder))
    assert [(o.doc_id, o.status) for o in info.value.report.outcomes] == [(d.doc_id, "updated") for d in docs[:3]]
    records = store.documents(include_incomplete=True)
    assert [d for d, md in sorted(records.items()) if md.get("dirty")] == ["d000", "d001", "d002"]
    for d in new:
        text = " ".join(s.text for s in store.read_document(d.doc_id).sentences)
        assert text.endswith("Version two.") == (d.doc_id in ("d000", "d001", "d002"))
    monkeypatch.setattr(Collection, "delete", delete)
    again = write_documents(store, new, lambda: DocumentEncoder.of(encoder))
    assert again.counts() == {"indexed": 0, "updated": 2, "unchanged": 3, "skipped": 0}
    records = store.documents(include_incomplete=True)
    assert not [d for d, md in records.items() if md.get("dirty")]
    assert store.count_sentences() == sum(md["n_sentences"] for md in records.values())


def test_vectors_and_sentences_land_exactly_in_a_group(tmp_path, tiny_encoder) -> None:
    encoder = tiny_encoder()
    store = open_store(tmp_path / "db", tiny_encoder)
    docs = docs_of_lengths([3, 1, 5, 2])
    write_documents(store, docs, lambda: DocumentEncoder.of(encoder), errors="raise")
    direct = encoder.encode_documents([d.text for d in docs], [d.doc_id for d in docs])
    for doc, want in zip(docs, direct, strict=True):
        got = store.read_document(doc.doc_id, embeddings=True)
        assert got.sentences == want.sentences
        np.testing.assert_allclose(got.embeddings, want.embeddings, atol=1e-6)
        assert store.documents()[doc.doc_id]["n"] == len(want) // 4


def test_ctrl_c_after_a_groups_commit_counts_the_group(tmp_path, tiny_encoder, monkeypatch) -> None:
    """Ctrl-C right after a group's commit (at the move of the generation): its documents are
    stored in their new version, so the interrupted run's report counts them written."""
    import landmark_rag.store.manifest as manifest_module

    monkeypatch.setattr("landmark_rag.ingest.write.GROUP_DOCS", 3)
    store = open_store(tmp_path / "db", tiny_encoder)
    merge, calls = manifest_module.merge_metadata, []

    def interrupted(*args: Any, **kwargs: Any) -> None:
        calls.append(1)
        if len(calls) == 2:  # the second group's move of the generation
            raise KeyboardInterrupt
        merge(*args, **kwargs)

    monkeypatch.setattr(manifest_module, "merge_metadata", interrupted)
    report = write_documents(
        store, docs_of_lengths([1, 1, 1, 1, 1, 1, 1]), lambda: DocumentEncoder.of(tiny_encoder()), total=7
    )
    assert report.interrupted
    assert [o.doc_id for o in report.outcomes] == [f"d{i:03d}" for i in range(6)]
    assert report.not_reached == 1
    assert sorted(store.documents()) == [f"d{i:03d}" for i in range(6)]


def test_one_by_one_a_document_committed_before_the_store_failed_is_counted(tmp_path, tiny_encoder, monkeypatch) -> None:
    """A store without ``add_documents`` (one document at a time) fails right after a
    document's commit: that document is stored, and the report counts it before the run stops."""
    import landmark_rag.store.manifest as manifest_module

    store = open_store(tmp_path / "db", tiny_encoder)

    def failing(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError("injected: connection reset by peer")

    monkeypatch.setattr(manifest_module, "merge_metadata", failing)
    with pytest.raises(StoreFailedError, match="injected") as info:
        write_documents(OneByOne(store), docs_of_lengths([1, 1, 1]), lambda: DocumentEncoder.of(tiny_encoder()))
    assert [o.doc_id for o in info.value.report.outcomes] == ["d000"]
    assert sorted(store.documents()) == ["d000"]
