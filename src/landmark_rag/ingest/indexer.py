"""The index loop: files -> text -> (skip if unchanged) -> encode -> store, one document at a time.

Kept free of any CLI or framework so it can be driven from Python as well as from
``landmark-rag index``. Guarantees, in the order a user would ask about them:

- an unchanged file (same content hash as the completely stored document) is skipped;
  a changed one replaces all its old sentences (the store's replace-on-reingest);
- a bad file (binary, undecodable, empty, unreadable, or one the encoder fails on) is
  reported in the result and never stops the run;
- a failure of the *store* (server gone, disk full) is not the file's fault: it stops the
  run with :class:`~landmark_rag.store.StoreError`; every document keeps its previous
  version (or, if new, stays absent) and the next run carries on;
- an interruption (Ctrl-C, a kill) never leaves a half-written document visible: the
  store's write protocol keeps a document's previous version visible until all the new
  sentences are written, a new document stays hidden until complete, and the next run
  redoes what was unfinished and cleans up what it left behind.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tqdm.auto import tqdm

from landmark_rag.ingest.decode import BadFileError, read_document
from landmark_rag.ingest.discover import SkippedPath, SourceFile
from landmark_rag.store import StoreError, content_hash

Status = Literal["indexed", "updated", "unchanged", "skipped"]

#: Documents are encoded in groups of about this many characters (~16k tokens): enough to
#: fill encoder batches with short files, small enough that progress and interruption
#: granularity stay fine.
GROUP_CHARS = 65_536
GROUP_DOCS = 32


@dataclass
class FileOutcome:
    """What happened to one file."""

    doc_id: str
    source: str
    status: Status
    reason: str | None = None
    sentences: int = 0
    tokens: int = 0


@dataclass
class IndexReport:
    """Outcome of one index run (what the CLI summarises)."""

    outcomes: list[FileOutcome] = field(default_factory=list)
    seconds: float = 0.0
    interrupted: bool = False
    not_reached: int = 0  # files not processed because the run was interrupted
    pruned: list[str] = field(default_factory=list)

    def with_status(self, *statuses: Status) -> list[FileOutcome]:
        return [o for o in self.outcomes if o.status in statuses]

    @property
    def tokens(self) -> int:
        return sum(o.tokens for o in self.outcomes)

    @property
    def sentences(self) -> int:
        return sum(o.sentences for o in self.outcomes)

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    def counts(self) -> dict[str, int]:
        keys: tuple[Status, ...] = ("indexed", "updated", "unchanged", "skipped")
        return {k: len(self.with_status(k)) for k in keys}


@dataclass
class PendingDocument:
    """A decoded document that needs encoding: what to store, and how to report it."""

    doc_id: str
    source: str  # where it came from (a path, or a dataset's name for it), for reports
    text: str
    doc_hash: str
    existed: bool  # the store knows the id already (complete or interrupted): "updated"
    metadata: dict[str, Any] = field(default_factory=dict)


Prepared = PendingDocument | FileOutcome


def document_metadata(file: SourceFile) -> dict[str, Any]:
    """Metadata stored with every sentence of a file: where it came from."""
    return {"source": str(file.path), "root": str(file.root)}


def manifest_state(
    store: Any, records: dict[str, dict[str, Any]] | None = None
) -> tuple[dict[str, str | None], set[str]]:
    """Read the store's manifest once: content hash of every complete document, and every
    known id (complete or interrupted). Everything the skip rules need, so a run (or each of
    many workers) never asks the store per document. ``records``: the manifest already read."""
    return _state_of(records if records is not None else store.documents(include_incomplete=True))


def _state_of(records: dict[str, dict[str, Any]]) -> tuple[dict[str, str | None], set[str]]:
    complete = {doc_id: md.get("doc_hash") for doc_id, md in records.items() if md.get("state") == "complete"}
    return complete, set(records)


def prepare_text(
    doc_id: str, source: str, text: str, metadata: dict[str, Any],
    complete: dict[str, str | None], known: set[str],
) -> Prepared:
    """A document's text -> ``unchanged`` (same hash as the complete stored version) or pending."""
    doc_hash = content_hash(text)
    if complete.get(doc_id) == doc_hash:
        return FileOutcome(doc_id, source, "unchanged")
    return PendingDocument(doc_id, source, text, doc_hash, doc_id in known, metadata)


def prepare_file(file: SourceFile, complete: dict[str, str | None], known: set[str]) -> Prepared:
    """Read and decode a file, then :func:`prepare_text`; a bad file is a ``skipped`` outcome."""
    try:
        text = read_document(file.path)
    except BadFileError as exc:
        return FileOutcome(file.doc_id, str(file.path), "skipped", exc.reason)
    return prepare_text(file.doc_id, str(file.path), text, document_metadata(file), complete, known)


def duplicate_ids(files: Iterable[SourceFile]) -> dict[int, FileOutcome]:
    """Files (by position) whose document id an earlier file already uses, as ``skipped``.

    Two roots can hold the same relative path; indexing both under one id would make the
    second silently replace the first.
    """
    seen: dict[str, Path] = {}
    out: dict[int, FileOutcome] = {}
    for i, f in enumerate(files):
        if f.doc_id in seen:
            out[i] = FileOutcome(
                f.doc_id, str(f.path), "skipped",
                f"document id {f.doc_id!r} is already used by {seen[f.doc_id]}; index these folders separately",
            )
        else:
            seen[f.doc_id] = f.path
    return out


def in_groups(
    items: Iterable[Prepared], group_chars: int = GROUP_CHARS, group_docs: int = GROUP_DOCS
) -> Iterator[FileOutcome | list[PendingDocument]]:
    """Outcomes as they come, pending documents gathered into encoding groups (in order).

    A group closes at ``group_chars`` characters or ``group_docs`` documents.
    """
    group: list[PendingDocument] = []
    chars = 0
    for item in items:
        if isinstance(item, FileOutcome):
            yield item
            continue
        group.append(item)
        chars += len(item.text)
        if chars >= group_chars or len(group) >= group_docs:
            yield group
            group, chars = [], 0
    if group:
        yield group


def index_files(
    files: Sequence[SourceFile],
    encoder: Any,
    store: Any,
    *,
    batch_size: int = 16,
    show_progress: bool = True,
    group_chars: int = GROUP_CHARS,
    skipped: Sequence[SkippedPath] = (),
) -> IndexReport:
    """Index ``files`` into ``store`` with ``encoder`` (a ``LandmarkEncoder``).

    ``encoder`` may also be a function of no arguments that returns the encoder: it is
    called only when the first file needs encoding, so a run over unchanged files never
    loads a model (the CLI passes one). ``store`` is a
    :class:`~landmark_rag.store.ChromaSentenceStore` (anything with ``documents``,
    ``add_document``). ``batch_size`` counts encoder windows. Returns an
    :class:`IndexReport`; a ``KeyboardInterrupt`` ends the run early with
    ``report.interrupted`` set instead of propagating, so the caller can still summarise.
    ``skipped``: paths discovery could not use (links to nowhere, FIFOs), reported as skipped.
    A :class:`~landmark_rag.store.StoreError` propagates: the store, not a file, failed.
    """
    report = IndexReport()
    report.outcomes.extend(FileOutcome(str(s.path), str(s.path), "skipped", s.reason) for s in skipped)
    records = store.documents(include_incomplete=True)
    complete, known = _state_of(records)
    dirty = {doc_id for doc_id, md in records.items() if md.get("dirty")}
    duplicates = duplicate_ids(files)
    t0 = time.perf_counter()
    bar = tqdm(total=len(files), desc="indexing", unit="doc", disable=not show_progress, dynamic_ncols=True)
    done = 0

    def record(outcome: FileOutcome) -> None:
        nonlocal done
        report.outcomes.append(outcome)
        done += 1
        bar.update(1)

    prepared = (duplicates.get(i) or prepare_file(f, complete, known) for i, f in enumerate(files))
    try:
        for item in in_groups(prepared, group_chars):
            if isinstance(item, FileOutcome):
                if item.status == "unchanged" and item.doc_id in dirty:
                    store.clean_document(item.doc_id)  # an earlier run stopped after the commit, before cleaning
                record(item)
                continue
            if _is_factory(encoder):  # a loader: the first file that needs encoding loads the model
                encoder = encoder()
            for _, outcome in encode_and_store(item, encoder, store, batch_size):
                record(outcome)
                elapsed = time.perf_counter() - t0
                bar.set_postfix_str(f"{report.tokens / max(elapsed, 1e-9):,.0f} tok/s", refresh=False)
    except KeyboardInterrupt:
        report.interrupted = True
        report.not_reached = len(files) - done
    except StoreError as exc:
        report.not_reached = len(files) - done
        exc.report = report  # type: ignore[attr-defined]  # what was done before the store failed
        raise
    finally:
        bar.close()
        report.seconds = time.perf_counter() - t0
    return report


def _is_factory(encoder: Any) -> bool:
    """Whether ``encoder`` is a loader to call rather than an encoder."""
    return callable(encoder) and not hasattr(encoder, "encode_documents")


def encode_and_store(
    batch: Sequence[PendingDocument], encoder: Any, store: Any, batch_size: int = 16
) -> Iterator[tuple[PendingDocument, FileOutcome]]:
    """Encode a group together and store each document through the store's manifest protocol.

    If the group fails, retry one by one so one bad file costs only itself; a document the
    encoder fails on is a ``skipped`` outcome and the run goes on. A failure of the store
    itself (:class:`~landmark_rag.store.StoreError`) propagates: it is not the document's
    fault, the document keeps its previous version, and the caller stops the run.
    """
    if not batch:
        return
    try:
        encoded = encoder.encode_documents([p.text for p in batch], doc_ids=[p.doc_id for p in batch],
                                           batch_size=batch_size)
    except Exception:  # noqa: BLE001 - isolate the failing file below
        encoded = None
    for i, item in enumerate(batch):
        try:
            doc = encoded[i] if encoded is not None else encoder.encode_document(item.text, item.doc_id)
            if len(doc) == 0:
                raise BadFileError("no sentences found")
            n = store.add_document(doc, metadata=item.metadata, doc_hash=item.doc_hash)
        except BadFileError as exc:
            yield item, FileOutcome(item.doc_id, item.source, "skipped", exc.reason)
            continue
        except StoreError:
            raise  # the store failed, not this file: stop (the previous version stays visible)
        except Exception as exc:  # noqa: BLE001 - reported, the run goes on
            yield item, FileOutcome(
                item.doc_id, item.source, "skipped", f"failed to encode: {type(exc).__name__}: {exc}"
            )
            continue
        yield item, FileOutcome(
            item.doc_id, item.source, "updated" if item.existed else "indexed",
            sentences=n, tokens=count_tokens(encoder, item.text),
        )


def count_tokens(encoder: Any, text: str) -> int:
    """Tokens of a whole document (for tokens/s), without the tokenizer's too-long warning."""
    tokenizer = getattr(encoder, "tokenizer", None)
    if tokenizer is None:
        return int(encoder.count_tokens(text))
    return len(tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])


def prune_missing(store: Any, roots: Iterable[Path]) -> list[str]:
    """Delete documents indexed from one of ``roots`` whose source file no longer exists."""
    roots = {str(Path(r).resolve()) for r in roots}
    gone = []
    for doc_id, md in store.documents(include_incomplete=True).items():
        source = md.get("source")
        if md.get("root") in roots and isinstance(source, str) and not Path(source).exists():
            store.delete_document(doc_id)
            gone.append(doc_id)
    return sorted(gone)
