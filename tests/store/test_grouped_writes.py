"""Writing a group of documents with the manifest's protocol run once for the group
(``ChromaSentenceStore.add_documents``, ``Manifest.write_many``).

The promises are those of one document at a time, per document: the same records and
sentences as sequential ``add_document`` calls; a reader sees each document in its previous
or its new complete version, never a mix, whatever call of the protocol fails; the next write
finishes the job with exact counts. And the point of it: the number of Chroma calls a group
makes does not grow with the group.

Real parts: a real Chroma PersistentClient in a tmp folder, real SQuAD paragraphs
(tests/data/squad_excerpt.json) segmented by the package's segmenter; failures are raised
from the real collections' methods (patched on Chroma's ``Collection`` class, so they hold
whichever collection object the store holds).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from chromadb.api.models.Collection import Collection
from reliability.faultkit import paragraphs, visible_state

from landmark_rag.store import ChromaSentenceStore, StoreError
from landmark_rag.store.client import Collections
from landmark_rag.store.lexical import StoreLexicalIndex
from landmark_rag.store.manifest import DocumentWrite, GroupWriteError, new_version
from landmark_rag.store.schema import VERSION, sentence_key, sentence_metadata
from landmark_rag.types import EncodedDocument, Sentence
from tests.random_vectors import encode

#: Chroma calls that change a collection; a failure is injected at each of them in turn.
WRITES = ("upsert", "update", "delete", "modify", "add")
#: Every Chroma call a store makes to a collection (the counted ones).
CALLS = (*WRITES, "get", "query", "count")




def open_store(path: Path) -> ChromaSentenceStore:
    return ChromaSentenceStore.open(path, "unit", identity={"model_name": "m", "pooling": "landmark"})


def reader_of(store: ChromaSentenceStore) -> ChromaSentenceStore:
    """A reader over the writer's own collection objects (same process, same Chroma system, so
    it sees every call of the write as it lands), never re-opened in the middle of a write."""
    reader = ChromaSentenceStore(store.collection, store.manifest)
    reader._io.local_path = None  # always current: the re-open on change is tested elsewhere
    return reader


def corpus() -> tuple[dict[str, str], dict[str, str]]:
    """Six documents in two versions: v2 shrinks some, grows others, and changes every text."""
    paras = paragraphs()
    v1 = {f"doc{i}": paras[i] for i in range(6)}
    v2 = {
        "doc0": paras[0].split(". ")[0] + ". Only this sentence is left.",
        "doc1": paras[1] + " " + paras[7],
        "doc2": paras[2].replace("the", "a"),
        "doc3": paras[8],
        "doc4": paras[4] + " A closing sentence.",
        "doc5": paras[5][: len(paras[5]) // 2].rsplit(". ", 1)[0] + ".",
    }
    return v1, v2


METADATA = {
    "doc0": {"source": "a.txt", "tags": ["x", "y"], "gone": None},
    "doc1": {"source": "b.txt", "n": 3},
    "doc2": {"source": "c.txt", "old_key": "dropped in v2"},
}


def encoded(texts: dict[str, str], seed: int = 0) -> list[EncodedDocument]:
    return [encode(text, doc_id, seed + i) for i, (doc_id, text) in enumerate(texts.items())]


def metadatas(texts: dict[str, str], version: int) -> list[dict[str, Any] | None]:
    out: list[dict[str, Any] | None] = []
    for doc_id in texts:
        md = dict(METADATA.get(doc_id, {}))
        if version == 2:
            md.pop("old_key", None)
            md["edition"] = 2
        out.append(md or None)
    return out


def stored(store: ChromaSentenceStore) -> dict[str, Any]:
    """Everything a store holds, with the versions (fresh per write) taken out."""
    records = {
        d: {k: v for k, v in md.items() if k != VERSION} for d, md in store.documents(include_incomplete=True).items()
    }
    got = store.collection.get(include=["metadatas", "documents", "embeddings"])
    rows = sorted(
        (sentence_key(i), {k: v for k, v in md.items() if k != VERSION}, text, np.round(vec, 5).tolist())
        for i, md, text, vec in zip(got["ids"], got["metadatas"], got["documents"], got["embeddings"], strict=True)
    )
    texts = {d: store.document_text(d) for d in records}
    return {"records": records, "rows": rows, "texts": texts, "count": store.count_sentences()}


def search(store: ChromaSentenceStore, docs: list[EncodedDocument]) -> list[list[tuple[str | None, int]]]:
    return [[(h.sentence.doc_id, h.sentence.index) for h in store.nearest(d.embeddings[0], 5)] for d in docs]


# ---------------------------------------------------------------------------- fault injection
class Calls:
    """Chroma's collection methods, counted and optionally failing: the ``fail_at``-th write
    call (:data:`WRITES`) raises ConnectionError instead of running, and ``before_write`` runs
    before each write call (a reader looking at the store between two steps)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.writes: list[str] = []
        self.fail_at: int | None = None
        self.before_write: Callable[[str], None] | None = None

    @contextmanager
    def patched(self) -> Iterator[Calls]:
        """The patches for the ``with`` block only (a test's own monkeypatches stay)."""
        with pytest.MonkeyPatch.context() as mp:
            for name in CALLS:
                mp.setattr(Collection, name, self._wrap(name, getattr(Collection, name)))
            yield self

    def _wrap(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        calls = self

        def call(collection: Collection, *args: Any, **kwargs: Any) -> Any:
            which = "manifest" if collection.name.endswith("__documents") else "sentences"
            if name not in WRITES:
                calls.counts[f"{which}.{name}"] += 1
                return original(collection, *args, **kwargs)
            step = f"{which}.{name}"
            if calls.before_write is not None:
                hook, calls.before_write = calls.before_write, None  # the reader's own calls are not the write's
                try:
                    hook(step)
                finally:
                    calls.before_write = hook
            calls.counts[step] += 1
            calls.writes.append(step)
            if calls.fail_at is not None and len(calls.writes) == calls.fail_at:
                raise ConnectionError(f"injected at {step}")
            return original(collection, *args, **kwargs)

        return call


# ---------------------------------------------------------------------------- equal to sequential
def test_grouped_write_equals_sequential_write(tmp_path: Path) -> None:
    v1, v2 = corpus()
    one, grouped = open_store(tmp_path / "one"), open_store(tmp_path / "grouped")
    for texts, version in ((v1, 1), ({**v2, "new": paragraphs()[6]}, 2)):
        docs, mds = encoded(texts, 10 * version), metadatas(texts, version)
        counts = [one.add_document(d, metadata=md) for d, md in zip(docs, mds, strict=True)]
        assert grouped.add_documents(docs, metadatas=mds) == counts == [len(d.sentences) for d in docs]
        assert stored(grouped) == stored(one)
        assert search(grouped, docs) == search(one, docs)
        assert visible_state(grouped) == visible_state(one) == texts
    records = grouped.documents(include_incomplete=True)
    assert all(md["state"] == "complete" and "dirty" not in md for md in records.values())
    assert grouped.count_sentences() == sum(md["n_sentences"] for md in records.values())
    assert "old_key" not in records["doc2"] and records["doc2"]["edition"] == 2  # keys the new version lacks go
    # every document has a version of its own, as if written alone
    assert len({md[VERSION] for md in records.values()}) == len(records)


def test_hashes_text_and_an_empty_document_as_add_document(tmp_path: Path) -> None:
    one, grouped = open_store(tmp_path / "one"), open_store(tmp_path / "grouped")
    docs = [*encoded({"a": paragraphs()[0]}), EncodedDocument("", [], np.zeros((0, 8), np.float32), "empty")]
    for d, h in zip(docs, ["given-hash", None], strict=True):
        one.add_document(d, doc_hash=h, store_text=False)
    assert grouped.add_documents(docs, doc_hashes=["given-hash", None], store_text=False) == [len(docs[0]), 0]
    assert stored(grouped) == stored(one)
    assert grouped.documents()["a"]["doc_hash"] == "given-hash" and grouped.document_text("a") is None


def test_a_document_that_cannot_be_written_fails_the_call_before_anything_is_written(tmp_path: Path) -> None:
    store = open_store(tmp_path / "db")
    good = encoded({"a": paragraphs()[0], "b": paragraphs()[1]})
    short = EncodedDocument(good[1].text, good[1].sentences, good[1].embeddings[:-1], "short")
    with pytest.raises(ValueError, match="sentences and embeddings differ in length"):
        store.add_documents([good[0], short])
    with pytest.raises(ValueError, match="doc_id"):
        store.add_documents([good[0], EncodedDocument(good[1].text, good[1].sentences, good[1].embeddings)])
    wide = EncodedDocument(good[1].text, good[1].sentences, np.ones((len(good[1]), 9), np.float32), "wide")
    with pytest.raises(ValueError):  # vectors of two widths: the group's rows cannot be laid out
        store.add_documents([good[0], wide])
    with pytest.raises(ValueError, match="metadatas"):
        store.add_documents(good, metadatas=[None])
    assert store.count_sentences() == 0 and store.documents(include_incomplete=True) == {}


# ---------------------------------------------------------------------------- failures between steps
def test_a_failure_at_any_call_of_a_group_keeps_previous_versions_and_the_next_write_is_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replace of 5 documents plus a new one in one group, failing at its 1st, 2nd, ... write
    call in turn until one run makes no more calls than that. A reader looks before every call:
    until the commit it sees every previous version and not the new document, from the commit
    on every new version; the failed write leaves exactly one of the two views, and the next
    write finishes with exact counts."""
    v1, v2 = corpus()
    v2 = {k: v2[k] for k in list(v2)[:5]}
    group = {**v2, "new": paragraphs()[6]}
    # 6 records a call: the 6 documents' sentences take several sentence upserts (and their
    # old versions several deletes), and the group still fits one manifest call
    # (add_documents keeps groups within the batch size)
    monkeypatch.setattr(Collections, "batch_size", lambda self: 6)
    seen: list[str] = []
    fail_at = 0
    while True:
        fail_at += 1
        store = open_store(tmp_path / f"db{fail_at}")
        store.add_documents(encoded(v1))
        reader = reader_of(store)
        views: list[tuple[str, dict[str, str]]] = []
        calls = Calls()
        calls.fail_at = fail_at
        calls.before_write = lambda step: views.append((step, visible_state(reader)))  # noqa: B023 - this run's
        with calls.patched():
            try:
                out = store.add_documents(encoded(group, 100))
            except StoreError as exc:
                error = exc
            else:
                break  # no call left to fail: every step was failed once
        assert "ConnectionError: injected at" in str(error)
        committed = isinstance(error, GroupWriteError)
        seen.append(calls.writes[-1])
        # before each call up to the failing one: old until the commit call ran, new after it
        commit = next((i for i, (step, _) in enumerate(views) if step == "manifest.upsert" and i > 1), None)
        for i, (_step, view) in enumerate(views):
            after_commit = commit is not None and i > commit
            assert view == ({**v1, **group} if after_commit else v1), (fail_at, i)
        # after the failure: exactly one of the two, as the error says
        assert visible_state(reader) == ({**v1, **group} if committed else v1), fail_at
        if committed:
            assert error.written == len(group)
            assert str(error).startswith("store failed while writing documents 'doc0' to 'new' (a group of 6)")
        # the next write finishes the job
        assert store.add_documents(encoded(group, 100)) == [len(d) for d in encoded(group, 100)]
        assert visible_state(reader) == {**v1, **group}
        records = store.documents(include_incomplete=True)
        assert all(md["state"] == "complete" and "dirty" not in md for md in records.values())
        assert store.count_sentences() == sum(md["n_sentences"] for md in records.values())
    assert out == [len(d) for d in encoded(group, 100)]
    # every step was failed once: announce (flag the complete records, write the new one), the
    # sentence batches, the commit, the generation, the deletes of the old versions, `dirty` removed
    steps = [step for i, step in enumerate(seen) if i == 0 or seen[i - 1] != step]
    assert steps == [
        "manifest.update",
        "manifest.upsert",
        "sentences.upsert",
        "manifest.upsert",
        "manifest.modify",
        "sentences.delete",
        "manifest.update",
    ]
    assert seen.count("sentences.upsert") >= 3 and seen.count("sentences.delete") >= 2


def test_adopting_sentences_written_without_a_record_in_a_group(tmp_path: Path, monkeypatch) -> None:
    """Sentences another tool wrote (no manifest record, no version) are the document's
    previous version: visible until the group's commit, deleted after it, as one by one."""
    paras = paragraphs()
    results = {}
    for mode in ("one", "grouped"):
        store = open_store(tmp_path / mode)
        store.add_document(encode(paras[0], "known"))
        old = encode(paras[1], "foreign", 5)
        store.collection.upsert(  # as another tool writes: plain ids, no version, no record
            ids=[f"foreign:{s.index}" for s in old.sentences],
            embeddings=old.embeddings,
            metadatas=[sentence_metadata(s) for s in old.sentences],
            documents=[s.text for s in old.sentences],
        )
        reader = reader_of(store)
        assert [s.text for s in reader.read_document("foreign").sentences] == [s.text for s in old.sentences]
        new = [encode(paras[2], "foreign", 6), encode(paras[3], "known", 7), encode(paras[4], "fresh", 8)]
        calls = Calls()
        views: list[tuple[str, list[str], list[str]]] = []

        def look(step: str, reader: ChromaSentenceStore = reader, views: list = views) -> None:
            views.append(
                (
                    step,
                    [s.text for s in reader.read_document("foreign").sentences],
                    [s.text for s in reader.read_document("fresh").sentences],
                )
            )

        calls.before_write = look
        with calls.patched():
            if mode == "one":
                for d in new:
                    store.add_document(d)
            else:
                store.add_documents(new)
        commit = max(i for i, (step, _, _) in enumerate(views) if step == "manifest.upsert")
        if mode == "grouped":
            # the group's last manifest upsert is its commit; before it the old sentences show
            for i, (_, foreign, fresh) in enumerate(views):
                assert foreign == (
                    [s.text for s in new[0].sentences] if i > commit else [s.text for s in old.sentences]
                )
                assert fresh == ([s.text for s in new[2].sentences] if i > commit else [])
        assert reader.read_document("foreign").sentences == new[0].sentences
        assert not store.collection.get(ids=[f"foreign:{s.index}" for s in old.sentences])["ids"]
        records = store.documents(include_incomplete=True)
        assert all(md["state"] == "complete" and "dirty" not in md for md in records.values())
        assert store.count_sentences() == sum(md["n_sentences"] for md in records.values())
        results[mode] = stored(store)
    assert results["grouped"] == results["one"]


def test_an_interrupted_adopting_group_is_finished_by_the_next(tmp_path: Path, monkeypatch) -> None:
    paras = paragraphs()
    store = open_store(tmp_path / "db")
    old = encode(paras[1], "foreign", 5)
    store.collection.upsert(
        ids=[f"foreign:{s.index}" for s in old.sentences],
        embeddings=old.embeddings,
        metadatas=[sentence_metadata(s) for s in old.sentences],
        documents=[s.text for s in old.sentences],
    )
    new = [encode(paras[2], "foreign", 6), encode(paras[3], "other", 7)]
    calls = Calls()
    calls.fail_at = 3  # announce (one upsert: the adopted record and the new one), sentences, then the commit
    with calls.patched(), pytest.raises(StoreError):
        store.add_documents(new)
    assert calls.writes == ["manifest.upsert", "sentences.upsert", "manifest.upsert"]
    reader = reader_of(store)
    assert reader.read_document("foreign").sentences == old.sentences  # adopted, still the old version
    assert reader.documents(include_incomplete=True)["foreign"]["dirty"] is True
    assert "other" not in reader.documents()
    store.add_documents(new)
    assert reader.read_document("foreign").sentences == new[0].sentences
    assert store.count_sentences() == len(new[0]) + len(new[1])


def test_sentences_whose_record_was_lost_stay_visible_through_an_interrupted_rewrite(tmp_path: Path) -> None:
    """Sentences this package wrote carry their version; when their record is gone (a manifest
    lost or pruned by hand) they are still the document, and adopting them must name that
    version: a rewrite keeps them visible until its commit, one that stops before it leaves
    them visible (and a clean keeps them), the next one replaces them."""
    paras = paragraphs()
    store = open_store(tmp_path / "db")
    old = encode(paras[1], "lost", 5)
    store.add_documents([old, encode(paras[0], "kept", 4)])
    store.manifest.delete(ids=["lost"])
    reader = reader_of(store)
    assert reader.read_document("lost").sentences == old.sentences
    new = encode(paras[2], "lost", 6)
    calls = Calls()
    calls.fail_at = 3  # announce, sentences, then the commit
    views: list[list[Sentence]] = []
    calls.before_write = lambda step: views.append(reader.read_document("lost").sentences)
    with calls.patched(), pytest.raises(StoreError):
        store.add_documents([new])
    assert views == [old.sentences] * 3
    assert reader.read_document("lost").sentences == old.sentences
    record = reader.documents(include_incomplete=True)["lost"]
    assert record["dirty"] is True and record["n_sentences"] == len(old)
    assert store.clean_document("lost") == len(new)  # the new version's orphans, not the old version
    assert reader.read_document("lost").sentences == old.sentences
    assert store.add_documents([new]) == [len(new)]
    assert reader.read_document("lost").sentences == new.sentences
    assert store.count_sentences() == len(new) + len(encode(paras[0], "kept", 4))


def test_adopting_sentences_of_several_versions_keeps_the_largest_set(tmp_path: Path, caplog) -> None:
    """Without a record, sentences of two versions cannot all stay visible under one record:
    the largest set does, with a warning, and the rewrite replaces all of them. Sentences with
    a hash and without one are one set (one with no hash belongs to any); a version stored as a
    number is named as it is. The lexical index holds exactly what readers see."""
    paras = paragraphs()
    store = open_store(tmp_path / "db")
    big, small = encode(paras[1] + " " + paras[7], "mixed", 5), encode(paras[3], "mixed", 6)
    assert len(big) > len(small)
    for doc, version in ((big, "vbig"), (small, "vsmall")):
        store.collection.upsert(
            ids=[f"mixed:{s.index}@{version}" for s in doc.sentences],
            embeddings=doc.embeddings,
            metadatas=[{**sentence_metadata(s), VERSION: version, "doc_hash": version} for s in doc.sentences],
            documents=[s.text for s in doc.sentences],
        )
    plain, numbered = encode(paras[4], "plain", 7), encode(paras[6], "numbered", 3)
    store.collection.upsert(
        ids=[f"plain:{s.index}" for s in plain.sentences],
        embeddings=plain.embeddings,
        metadatas=[{**sentence_metadata(s), **({"doc_hash": "h"} if s.index % 2 else {})} for s in plain.sentences],
        documents=[s.text for s in plain.sentences],
    )
    store.collection.upsert(
        ids=[f"numbered:{s.index}" for s in numbered.sentences],
        embeddings=numbered.embeddings,
        metadatas=[{**sentence_metadata(s), VERSION: 7, "doc_hash": "n"} for s in numbered.sentences],
        documents=[s.text for s in numbered.sentences],
    )
    reader = reader_of(store)
    new = [encode(paras[2], "mixed", 8), encode(paras[5], "plain", 9), encode(paras[0], "numbered", 10)]
    calls = Calls()
    calls.fail_at = 3
    with calls.patched(), pytest.raises(StoreError), caplog.at_level("WARNING", "landmark_rag.store.manifest"):
        store.add_documents(new)
    warned = (
        f"document 'mixed' has sentences of several versions and no manifest record; the {len(big)} of 'vbig' "
        f"stay visible until it is rewritten, the other {len(small)} are hidden and go with its next clean or write"
    )
    assert [r.getMessage() for r in caplog.records if "several versions" in r.getMessage()] == [warned]
    old = {"mixed": big, "plain": plain, "numbered": numbered}
    assert {d: reader.read_document(d).sentences for d in old} == {d: doc.sentences for d, doc in old.items()}
    records = reader.documents(include_incomplete=True)
    assert {d: records[d]["n_sentences"] for d in old} == {d: len(doc) for d, doc in old.items()}
    lexical = StoreLexicalIndex(reader, cache_dir=False).sync(force=True)
    assert {d: len(lexical.docs[d].ids) for d in old} == {d: len(doc) for d, doc in old.items()}
    assert store.clean_document("numbered") == len(new[2])  # the interrupted write's, not the adopted ones
    assert reader.read_document("numbered").sentences == numbered.sentences
    store.add_documents(new)
    assert [reader.read_document(d).sentences for d in old] == [d.sentences for d in new]
    assert store.count_sentences() == sum(len(d) for d in new)


def test_sentences_no_record_can_name_are_hidden_with_a_warning(tmp_path: Path, caplog) -> None:
    """An empty ``doc_version`` reads as none, so no record can name such sentences: adopting
    them hides them, with a warning, and the rewrite replaces them (nothing else is touched)."""
    paras = paragraphs()
    store = open_store(tmp_path / "db")
    kept, odd = encode(paras[0], "kept", 1), encode(paras[1], "odd", 2)
    store.add_documents([kept])
    store.collection.upsert(
        ids=[f"odd:{s.index}" for s in odd.sentences],
        embeddings=odd.embeddings,
        metadatas=[{**sentence_metadata(s), VERSION: ""} for s in odd.sentences],
        documents=[s.text for s in odd.sentences],
    )
    calls = Calls()
    calls.fail_at = 3
    with calls.patched(), pytest.raises(StoreError), caplog.at_level("WARNING", "landmark_rag.store.manifest"):
        store.add_documents([encode(paras[2], "odd", 3)])
    assert any("empty doc_version" in r.getMessage() for r in caplog.records)
    reader = reader_of(store)
    assert reader.read_document("odd").sentences == []
    assert reader.documents(include_incomplete=True)["odd"]["n_sentences"] == 0
    new = encode(paras[2], "odd", 3)
    store.add_documents([new])
    assert reader.read_document("odd").sentences == new.sentences
    assert reader.read_document("kept").sentences == kept.sentences
    assert store.count_sentences() == len(kept) + len(new)


# ---------------------------------------------------------------------------- duplicates
def test_a_document_twice_in_one_call_is_written_as_one_by_one(tmp_path: Path) -> None:
    paras = paragraphs()
    docs = [
        encode(paras[0], "a", 1),
        encode(paras[1], "b", 2),
        encode(paras[2], "a", 3),
        encode(paras[3], "a", 4),
        encode(paras[4], "c", 5),
    ]
    one, grouped = open_store(tmp_path / "one"), open_store(tmp_path / "grouped")
    counts = [one.add_document(d) for d in docs]
    assert grouped.add_documents(docs) == counts
    assert stored(grouped) == stored(one)
    assert visible_state(grouped) == {"a": paras[3], "b": paras[1], "c": paras[4]}  # the last write of "a" wins
    assert grouped.count_sentences() == len(docs[1]) + len(docs[3]) + len(docs[4])


def test_write_many_refuses_a_group_that_names_a_document_twice(tmp_path: Path) -> None:
    store = open_store(tmp_path / "db")
    docs = [DocumentWrite("a", new_version(), 0, "h"), DocumentWrite("a", new_version(), 0, "h")]
    with pytest.raises(ValueError, match="more than once"):
        store._manifest.write_many(docs, lambda: None)
    assert store.documents(include_incomplete=True) == {}


# ---------------------------------------------------------------------------- calls per group
@pytest.mark.parametrize("replace", [False, True])
def test_chroma_calls_per_group_do_not_grow_with_its_size(tmp_path: Path, monkeypatch, replace: bool) -> None:
    texts = [p for p in paragraphs()]
    per_size = {}
    for n in (1, 4, 32):
        store = open_store(tmp_path / f"db{n}-{replace}")
        docs = [encode(texts[i % len(texts)], f"d{i}", i) for i in range(n)]
        if replace:
            store.add_documents(docs)
            docs = [encode(texts[(i + 1) % len(texts)], f"d{i}", 100 + i) for i in range(n)]
        calls = Calls()
        with calls.patched():
            store.add_documents(docs)
        per_size[n] = dict(calls.counts)
        assert visible_state(store) == {d.doc_id: d.text for d in docs}
    assert per_size[1] == per_size[4] == per_size[32], per_size
    counts = per_size[32]
    assert counts["manifest.modify"] == 1  # the generation moves once per group
    assert counts["manifest.upsert"] == (1 if replace else 2)  # commit (+ the new documents' records)
    assert sum(counts.values()) <= 9, counts
    # one document at a time makes those calls per document
    store = open_store(tmp_path / f"one-{replace}")
    docs = [encode(texts[i % len(texts)], f"d{i}", i) for i in range(8)]
    if replace:
        store.add_documents(docs)
    calls = Calls()
    with calls.patched():
        for d in docs:
            store.add_document(d)
    assert sum(calls.counts.values()) >= 8 * 8


def test_vectors_of_another_width_anywhere_in_the_call_fail_it_before_any_write(tmp_path: Path) -> None:
    """The width is checked across the whole call, also past a repeated id that starts a second
    group: the call fails naming the document, nothing written."""
    store = open_store(tmp_path / "db")
    a, b = encode("Alpha beta. Gamma delta.", "a"), encode("Beta one. Beta two.", "b")
    wide = encode("Alpha again. And wider.", "a")
    wide = EncodedDocument(wide.text, wide.sentences, np.ones((len(wide.sentences), 9), np.float32) / 3, "a")
    with pytest.raises(ValueError, match="'a' has vectors of width"):
        store.add_documents([a, b, wide])
    assert store.count_sentences() == 0 and store.documents(include_incomplete=True) == {}


def test_a_write_stopped_between_commit_and_generation_moves_it_when_cleaned(tmp_path: Path, monkeypatch) -> None:
    """The store fails right after a group's commit, at the move of the generation: the new
    versions are visible (GroupWriteError counts them) and the generation has not moved; the
    next clean of the dirty records moves it, so readers that cache by generation see them."""
    import landmark_rag.store.manifest as manifest_module

    store = open_store(tmp_path / "db")
    store.add_documents([encode("Alpha beta. Gamma delta.", "a"), encode("Beta one. Beta two.", "b")])
    before = store.generation()
    merge = manifest_module.merge_metadata

    def failing(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError("injected: connection reset by peer")

    monkeypatch.setattr(manifest_module, "merge_metadata", failing)
    with pytest.raises(GroupWriteError) as info:
        store.add_documents([encode("Alpha new. Gamma new.", "a", 1), encode("Beta new.", "b", 1)])
    assert info.value.written == 2
    assert store.generation() == before
    assert [s.text for s in store.read_document("a").sentences] == ["Alpha new.", "Gamma new."]
    monkeypatch.setattr(manifest_module, "merge_metadata", merge)
    assert sum(store.clean_document(d) for d in ("a", "b")) == 4  # the replaced versions' sentences
    assert store.generation() != before
    records = store.documents(include_incomplete=True)
    assert not any(md.get("dirty") for md in records.values())
    assert store.count_sentences() == sum(md["n_sentences"] for md in records.values())
