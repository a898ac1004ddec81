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
from collections.abc import Iterable, Sequence
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
class _Pending:
    file: SourceFile
    text: str
    doc_hash: str
    existed: bool


def document_metadata(file: SourceFile) -> dict[str, Any]:
    """Metadata stored with every sentence of a file: where it came from."""
    return {"source": str(file.path), "root": str(file.root)}


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

    ``store`` is a :class:`~landmark_rag.store.ChromaSentenceStore` (anything with
    ``documents``, ``add_document``). ``batch_size`` counts encoder windows. Returns an
    :class:`IndexReport`; a ``KeyboardInterrupt`` ends the run early with
    ``report.interrupted`` set instead of propagating, so the caller can still summarise.
    ``skipped``: paths discovery could not use (links to nowhere, FIFOs), reported as skipped.
    A :class:`~landmark_rag.store.StoreError` propagates: the store, not a file, failed.
    """
    report = IndexReport()
    report.outcomes.extend(FileOutcome(str(s.path), str(s.path), "skipped", s.reason) for s in skipped)
    records = store.documents(include_incomplete=True)
    complete = {doc_id: md.get("doc_hash") for doc_id, md in records.items() if md.get("state") == "complete"}
    dirty = {doc_id for doc_id, md in records.items() if md.get("dirty")}
    known = set(records)
    t0 = time.perf_counter()
    bar = tqdm(total=len(files), desc="indexing", unit="doc", disable=not show_progress, dynamic_ncols=True)
    pending: list[_Pending] = []
    pending_chars = 0
    seen: dict[str, Path] = {}
    done = 0

    def flush() -> None:
        nonlocal pending, pending_chars, done
        batch, pending, pending_chars = pending, [], 0
        for item, outcome in _encode_and_store(batch, encoder, store, batch_size):
            report.outcomes.append(outcome)
            done += 1
            bar.update(1)
            elapsed = time.perf_counter() - t0
            bar.set_postfix_str(f"{report.tokens / max(elapsed, 1e-9):,.0f} tok/s", refresh=False)

    try:
        for f in files:
            if f.doc_id in seen:
                report.outcomes.append(FileOutcome(
                    f.doc_id, str(f.path), "skipped",
                    f"document id {f.doc_id!r} is already used by {seen[f.doc_id]}; index these folders separately",
                ))
                done += 1
                bar.update(1)
                continue
            seen[f.doc_id] = f.path
            try:
                text = read_document(f.path)
            except BadFileError as exc:
                report.outcomes.append(FileOutcome(f.doc_id, str(f.path), "skipped", exc.reason))
                done += 1
                bar.update(1)
                continue
            doc_hash = content_hash(text)
            if complete.get(f.doc_id) == doc_hash:
                if f.doc_id in dirty:  # an earlier run stopped after the commit, before cleaning up
                    store.clean_document(f.doc_id)
                report.outcomes.append(FileOutcome(f.doc_id, str(f.path), "unchanged"))
                done += 1
                bar.update(1)
                continue
            pending.append(_Pending(f, text, doc_hash, f.doc_id in known))
            pending_chars += len(text)
            if pending_chars >= group_chars or len(pending) >= GROUP_DOCS:
                flush()
        flush()
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


def _encode_and_store(
    batch: list[_Pending], encoder: Any, store: Any, batch_size: int
) -> Iterable[tuple[_Pending, FileOutcome]]:
    """Encode a group together; if that fails, retry one by one so one bad file costs only itself."""
    if not batch:
        return
    try:
        encoded = encoder.encode_documents(
            [p.text for p in batch], doc_ids=[p.file.doc_id for p in batch], batch_size=batch_size
        )
    except Exception:  # noqa: BLE001 - isolate the failing file below
        encoded = None
    for i, item in enumerate(batch):
        try:
            doc = encoded[i] if encoded is not None else encoder.encode_document(item.text, item.file.doc_id)
            if len(doc) == 0:
                raise BadFileError("no sentences found")
            n = store.add_document(doc, metadata=document_metadata(item.file), doc_hash=item.doc_hash)
        except BadFileError as exc:
            yield item, FileOutcome(item.file.doc_id, str(item.file.path), "skipped", exc.reason)
            continue
        except StoreError:
            raise  # the store failed, not this file: stop (the previous version stays visible)
        except Exception as exc:  # noqa: BLE001 - reported, the run goes on
            yield item, FileOutcome(
                item.file.doc_id, str(item.file.path), "skipped", f"failed to encode: {type(exc).__name__}: {exc}"
            )
            continue
        yield item, FileOutcome(
            item.file.doc_id, str(item.file.path), "updated" if item.existed else "indexed",
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
