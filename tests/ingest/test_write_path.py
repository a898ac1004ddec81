"""The one write path (``ingest/write.py``): the same rules through ``add_texts``, ``add_files``
and the CLI's ``index``.

Real parts: a real Chroma PersistentClient in a tmp folder, the tiny random BERT of
tests/conftest.py (structure only: nothing here depends on what the vectors mean), real
files. A document left ``dirty`` is made exactly as a write killed between its commit and its
cleanup leaves it: sentences of an older version still stored, the manifest record flagged.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from landmark_rag import LandmarkIndex
from landmark_rag.cli import _register, app
from landmark_rag.errors import LandmarkRagError
from landmark_rag.ingest import (
    BadFileError,
    DocumentEncoder,
    SourceDocument,
    StoreFailedError,
    UnusablePathError,
    write_documents,
)
from landmark_rag.store import ChromaSentenceStore, ModelNotRecordedError, StoreError, StoreMismatchError
from landmark_rag.store.schema import sentence_key

TEXTS = {
    "a.txt": "Cats purr when content. They sleep a lot. Kittens play with yarn.",
    "b.txt": "Rockets need fuel. Orbits are curved paths. Satellites circle the Earth.",
}

_register()


@pytest.fixture()
def index(tmp_path: Path, tiny_encoder) -> LandmarkIndex:
    store = ChromaSentenceStore.open(tmp_path / "db", identity=tiny_encoder().config.identity())
    return LandmarkIndex(store, tiny_encoder())


def counting(index: LandmarkIndex, calls: list[list[str]]):
    """An ``encode=`` hook for ``add_texts`` that records which documents were encoded."""

    def encode(texts: list[str], doc_ids: list[str]):
        calls.append(list(doc_ids))
        return index.encoder.encode_documents(texts, doc_ids)

    return encode


def leave_dirty(store: ChromaSentenceStore, doc_id: str) -> list[str]:
    """Make ``doc_id`` look like a write killed after its commit: two sentences of an older
    version still stored, the record ``dirty``. Returns the stale record ids."""
    got = store.collection.get(where={"doc_id": doc_id}, limit=2, include=["documents", "metadatas", "embeddings"])
    stale = [f"{sentence_key(i)}@old" for i in got["ids"]]
    store.collection.add(ids=stale, documents=got["documents"], embeddings=got["embeddings"],
                         metadatas=[{**m, "doc_version": "old"} for m in got["metadatas"]])
    store.manifest.update(ids=[doc_id], metadatas=[{"dirty": True}])
    return stale


def write_folder(folder: Path, texts: dict[str, str] = TEXTS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


# ---------------------------------------------------------------------------- the skip rule
def test_add_texts_rewrites_a_document_whose_metadata_changed(index: LandmarkIndex) -> None:
    calls: list[list[str]] = []
    encode = counting(index, calls)
    index.add_texts(list(TEXTS.values()), ids=list(TEXTS), metadatas=[{"lang": "en"}] * 2, encode=encode)
    index.add_texts(list(TEXTS.values()), ids=list(TEXTS), metadatas=[{"lang": "en"}] * 2, encode=encode)
    assert calls == [list(TEXTS)]  # the same text and metadata: skipped
    index.add_texts([TEXTS["a.txt"]], ids=["a.txt"], metadatas=[{"lang": "fr"}], encode=encode)
    assert calls[-1] == ["a.txt"]  # the same text, other metadata: written again
    assert index.store.documents()["a.txt"]["lang"] == "fr"
    hit = index.store.read_ids(["a.txt:0"])["a.txt:0"]
    assert hit.metadata["lang"] == "fr" and hit.sentence.text == "Cats purr when content."


def test_files_unchanged_are_skipped_and_moved_ones_rewritten(index: LandmarkIndex, tmp_path: Path) -> None:
    first = index.add_files([write_folder(tmp_path / "docs")], show_progress=False)
    assert first.counts() == {"indexed": 2, "updated": 0, "unchanged": 0, "skipped": 0}
    again = index.add_files([tmp_path / "docs"], show_progress=False)
    assert again.counts() == {"indexed": 0, "updated": 0, "unchanged": 2, "skipped": 0}
    assert again.tokens == 0
    # the same files at another path: same ids and text, other source/root metadata
    moved = index.add_files([write_folder(tmp_path / "moved")], show_progress=False)
    assert moved.counts() == {"indexed": 0, "updated": 2, "unchanged": 0, "skipped": 0}
    assert index.store.documents()["a.txt"]["source"] == str((tmp_path / "moved" / "a.txt").resolve())


def test_a_dirty_document_is_finished_by_add_texts(index: LandmarkIndex) -> None:
    calls: list[list[str]] = []
    index.add_texts([TEXTS["a.txt"]], ids=["a.txt"], encode=counting(index, calls))
    stale = leave_dirty(index.store, "a.txt")
    index.add_texts([TEXTS["a.txt"]], ids=["a.txt"], encode=counting(index, calls))
    assert calls == [["a.txt"]]  # unchanged: not encoded again, only finished
    assert index.store.collection.get(ids=stale)["ids"] == []
    assert not index.store.documents()["a.txt"].get("dirty")
    assert index.store.count_sentences() == index.store.documents()["a.txt"]["n_sentences"]


def test_a_dirty_document_is_finished_by_add_files(index: LandmarkIndex, tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "docs")
    index.add_files([folder], show_progress=False)
    stale = leave_dirty(index.store, "b.txt")
    report = index.add_files([folder], show_progress=False)
    assert report.counts()["unchanged"] == 2
    assert index.store.collection.get(ids=stale)["ids"] == []
    assert not any(r.get("dirty") for r in index.store.documents(include_incomplete=True).values())


# ---------------------------------------------------------------------------- the CLI runs it
def test_cli_index_runs_the_write_path_of_landmark_index(tmp_path: Path, tiny_bert_dir: Path) -> None:
    """``landmark-rag index`` and ``LandmarkIndex.add_files`` are one path: each sees the
    other's documents as unchanged, and a text added through ``add_texts`` under a file's id
    with other metadata is written back by the CLI (the one skip rule)."""
    folder, db = write_folder(tmp_path / "docs"), tmp_path / "db"
    cli = CliRunner()
    args = ["index", str(folder), "--db", str(db), "--model", str(tiny_bert_dir), "--pooling", "landmark", "-q"]
    result = cli.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "2 new, 0 updated" in " ".join(result.stdout.split())

    index = LandmarkIndex.open(db, lazy=True)  # the store's own model, not loaded yet
    report = index.add_files([folder], show_progress=False)
    assert report.counts()["unchanged"] == 2 and index.loaded_encoder is None  # nothing to encode

    index.add_texts([TEXTS["a.txt"]], ids=["a.txt"], metadatas=[{"source": "elsewhere"}])
    assert index.loaded_encoder is not None  # loaded on first need, and checked against the store
    result = cli.invoke(app, [*args[:4], "-q"])  # without --model: the recorded one
    assert result.exit_code == 0, result.output
    words = " ".join(result.stdout.split())
    assert "0 new, 1 updated" in words and "unchanged 1" in words
    assert index.store.documents()["a.txt"]["source"] == str((folder / "a.txt").resolve())


def test_add_files_refuses_a_missing_path_before_writing(index: LandmarkIndex, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        index.add_files([tmp_path / "nowhere"], show_progress=False)
    assert index.store.documents(include_incomplete=True) == {}


# ---------------------------------------------------------------------------- failures
def test_one_document_the_encoder_fails_on_costs_only_itself(index: LandmarkIndex) -> None:
    def encode(texts: list[str], doc_ids: list[str]):
        if "bad" in doc_ids:
            raise RuntimeError("the encoder chokes")
        return index.encoder.encode_documents(texts, doc_ids)

    docs = [SourceDocument("good", TEXTS["a.txt"]), SourceDocument("bad", "Fine text. Really."),
            SourceDocument("also", TEXTS["b.txt"])]
    report = write_documents(index.store, docs, lambda: DocumentEncoder(encode))
    assert report.counts() == {"indexed": 2, "updated": 0, "unchanged": 0, "skipped": 1}
    (bad,) = report.with_status("skipped")
    assert bad.doc_id == "bad" and bad.reason == "failed to encode: RuntimeError: the encoder chokes"
    assert set(index.store.documents()) == {"good", "also"}
    with pytest.raises(RuntimeError, match="chokes"):  # the Python API raises instead
        index.add_texts(["Fine text. Really."], ids=["bad"], encode=encode)


@pytest.mark.parametrize("grouped", [True, False])
def test_a_failing_store_stops_the_run_with_its_report(index: LandmarkIndex, grouped: bool) -> None:
    class Broken:
        """The real store, whose writes fail from the second write on (``grouped``: writes of a
        group, ``add_documents``; else a store without them, written one document at a time)."""

        def __init__(self, store: ChromaSentenceStore) -> None:
            self.store, self.writes = store, 0

        def __getattr__(self, name: str):
            if name == "add_documents" and not grouped:
                raise AttributeError(name)
            return getattr(self.store, name)

        def _write(self, method: str, *args, **kwargs):
            self.writes += 1
            if self.writes > 1:
                raise StoreError("store failed while writing: injected")
            return getattr(self.store, method)(*args, **kwargs)

        def add_document(self, *args, **kwargs):
            return self._write("add_document", *args, **kwargs)

        if grouped:

            def add_documents(self, *args, **kwargs):
                return self._write("add_documents", *args, **kwargs)

    docs = [SourceDocument(d, t) for d, t in TEXTS.items()]
    with pytest.raises(StoreFailedError, match="injected") as info:
        write_documents(Broken(index.store), docs, lambda: DocumentEncoder.of(index.encoder), total=2, group_tokens=1)
    assert isinstance(info.value, StoreError)  # existing `except StoreError` clauses catch it
    assert info.value.report.counts()["indexed"] == 1 and info.value.report.not_reached == 1
    assert set(index.store.documents()) == {"a.txt"}


def test_errors_share_one_base_and_keep_their_builtin_ones() -> None:
    import landmark_rag
    from landmark_rag.datasets.longdoc import LongDocFormatError
    from landmark_rag.encode import ModelNotFoundError
    from landmark_rag.extract.errors import DocumentError
    from landmark_rag.train.config import TrainingInputError

    assert landmark_rag.LandmarkRagError is LandmarkRagError
    for error, builtin in [(StoreError, RuntimeError), (StoreFailedError, RuntimeError),
                           (StoreMismatchError, ValueError), (ModelNotRecordedError, ValueError),
                           (BadFileError, ValueError), (UnusablePathError, OSError),
                           (ModelNotFoundError, OSError), (TrainingInputError, ValueError),
                           (LongDocFormatError, ValueError), (DocumentError, ValueError)]:
        assert issubclass(error, LandmarkRagError) and issubclass(error, builtin), error


def test_rows_decode_like_files() -> None:
    from landmark_rag.ingest import row_document

    doc = row_document({"doc_id": "r1", "text": "Tea is a drink.".encode("utf-16"), "lang": "en", "source": None})
    assert isinstance(doc, SourceDocument) and doc.text == "Tea is a drink." and doc.metadata == {"lang": "en"}
    for text, reason in [(" \n ", "empty document (whitespace only)"), (None, "empty document (no text)"),
                         (3, "text is int, not str"), (b"\x00\x01", "binary file (contains NUL bytes)")]:
        outcome = row_document({"doc_id": "r2", "text": text})
        assert outcome.status == "skipped" and outcome.reason == reason, (text, outcome)
