"""Storing within a write: what is stored for a document, and each document's outcome.

Why its own module: an encoded document becomes one record per sentence with the source
document's metadata, pages and headings attached (:func:`stored_form`, the one place), and
is written through the store's manifest protocol, once per group where the store can
(:func:`store_documents`). The outcomes must be those of writing one by one whatever the
grouping: a document the store refuses costs only itself, and when the store itself fails
the documents it had committed are still reported (:func:`store_outcomes`,
:func:`write_group`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard

from landmark_rag.extract import BadFileError
from landmark_rag.ingest.encoding import DocumentEncoder, encoded_tokens
from landmark_rag.ingest.planning import Errors, Pending
from landmark_rag.ingest.report import FileOutcome
from landmark_rag.ingest.sources import SourceDocument
from landmark_rag.store import StoreError
from landmark_rag.store.manifest import written_before
from landmark_rag.store.protocols import GroupWriter
from landmark_rag.store.schema import reserved_keys
from landmark_rag.types import EncodedDocument

if TYPE_CHECKING:
    from landmark_rag.store.protocols import SentenceStore


@dataclass(frozen=True)
class StoredDocument:
    """What the store writes for one document: its sentences with their vectors, the
    metadata stored with each of them, and its content hash."""

    encoded: EncodedDocument
    metadata: dict[str, Any]
    doc_hash: str


def stored_form(doc: SourceDocument, encoded: EncodedDocument) -> StoredDocument:
    """What is stored for an encoded document: the one place a source document's own
    information (its metadata, and each sentence's page and heading) is attached to its
    sentences."""
    reserved = reserved_keys(doc.metadata)
    if reserved:  # the store's own value wins on these; say so rather than lose them silently
        warnings.warn(
            f"document {doc.doc_id!r}: metadata keys {reserved} are the store's own (a sentence's span, "
            "ids, versions) or hidden ('_' prefix); their values are not kept. Rename them (e.g. "
            "'published_start') to keep them searchable with where=.",
            UserWarning,
            stacklevel=2,
        )
    if doc.extracted is not None and (doc.extracted.pages or doc.extracted.headings):
        sentences = doc.extracted.locate(encoded.sentences)
        encoded = EncodedDocument(encoded.text, sentences, encoded.embeddings, encoded.doc_id, encoded.tokens)
    return StoredDocument(encoded, dict(doc.metadata), doc.doc_hash)


def store_document(store: SentenceStore, stored: StoredDocument) -> int:
    """Write one document through the store's manifest protocol; returns its sentences."""
    return store.add_document(stored.encoded, metadata=stored.metadata, doc_hash=stored.doc_hash)


def store_documents(
    store: SentenceStore, stored: Sequence[StoredDocument], on_committed: Callable[[int], None] | None = None
) -> list[int]:
    """Write documents through the store's manifest protocol, run once for the group where the
    store can (:class:`~landmark_rag.store.protocols.GroupWriter`), else once per document;
    returns each one's sentences. ``on_committed(n)``: the first ``n`` are stored."""
    if isinstance(store, GroupWriter):
        return list(store.add_documents([s.encoded for s in stored], metadatas=[s.metadata for s in stored],
                                        doc_hashes=[s.doc_hash for s in stored], on_committed=on_committed))
    out = []
    for n, s in enumerate(stored, 1):
        out.append(store_document(store, s))
        if on_committed is not None:
            on_committed(n)
    return out


def store_outcome(store: SentenceStore, stored: StoredDocument, done: FileOutcome, errors: Errors = "report") -> FileOutcome:
    """Write ``stored``: ``done`` when it was written, else (a document the store refuses) a
    ``skipped`` outcome. A failure of the store itself raises :class:`StoreError`."""
    try:
        store_document(store, stored)
    except StoreError:
        raise  # the store failed, not this document: the run stops, the previous version stays
    except Exception as exc:  # reported, the run goes on
        if errors == "raise":
            raise
        return FileOutcome(done.doc_id, done.source, "skipped", f"failed to store: {type(exc).__name__}: {exc}")
    return done


def store_outcomes(
    store: SentenceStore, batch: Sequence[tuple[StoredDocument, FileOutcome]], errors: Errors = "report"
) -> Iterator[FileOutcome]:
    """Write a group of documents (:func:`store_documents`, the protocol once for the group) and
    yield each one's outcome, in order: ``done`` when it was written, as :func:`store_outcome`.

    The outcomes are those of writing the documents one by one: a failure of the store raises
    :class:`StoreError` after yielding the documents it had committed (none, when the group
    failed before its commit); any other failure, which is one document's (the store refused
    it before writing anything), makes the group be written one by one, so that document costs
    only itself. A store that cannot write groups is written one by one from the start.
    """
    if not batch:
        return
    if not isinstance(store, GroupWriter):
        yield from _one_by_one(store, batch, errors)
        return
    committed = 0

    def note(n: int) -> None:
        nonlocal committed
        committed = n

    try:
        store_documents(store, [stored for stored, _ in batch], on_committed=note)
    except StoreError as exc:
        # the store failed, not a document: the run stops; what was committed is reported
        yield from (done for _, done in batch[: max(committed, written_before(exc))])
        raise
    except Exception:  # a document the store refuses: found by writing one by one
        if committed:  # not a refused document: the failure came after a commit
            yield from (done for _, done in batch[:committed])
            raise
        yield from _one_by_one(store, batch, errors)
        return
    except BaseException:
        # Ctrl-C: the documents whose commit went through are written, and counted so
        yield from (done for _, done in batch[:committed])
        raise
    yield from (done for _, done in batch)


def _one_by_one(
    store: SentenceStore, batch: Sequence[tuple[StoredDocument, FileOutcome]], errors: Errors
) -> Iterator[FileOutcome]:
    """:func:`store_outcome` for each document in turn; a document whose write the store failed
    only after its commit is written, and is counted before the failure goes on."""
    for stored, done in batch:
        try:
            outcome = store_outcome(store, stored, done, errors)
        except StoreError as exc:
            if written_before(exc):
                yield done
            raise
        yield outcome


def _storable(encoded: EncodedDocument | Exception) -> TypeGuard[EncodedDocument]:
    """Whether an encoded document goes to the store (else :func:`write_encoded` skips it)."""
    return not isinstance(encoded, Exception) and len(encoded) > 0


def write_group(
    store: SentenceStore, group: Sequence[Pending], encoded: Sequence[EncodedDocument | Exception],
    encoder: DocumentEncoder, errors: Errors = "report",
) -> Iterator[FileOutcome]:
    """Store an encoded group and yield each document's outcome in order: the outcomes of
    :func:`write_encoded` for each in turn, with the store's protocol run once for the documents
    written together (:func:`store_outcomes`).

    A document that is skipped (the encoder failed on it, or found no sentence in it) closes
    the documents before it into a write of their own first, so every outcome, and with
    ``errors="raise"`` the point where the run stops, is where one-by-one writing puts it.
    """
    batch: list[tuple[StoredDocument, FileOutcome]] = []
    for pending, one in zip(group, encoded, strict=True):
        if not _storable(one):
            yield from store_outcomes(store, batch, errors)
            batch = []
            yield write_encoded(store, pending, one, encoder, errors)  # skipped (or raised): nothing stored
            continue
        batch.append(_to_store(pending, one, encoder))
    yield from store_outcomes(store, batch, errors)


def _to_store(pending: Pending, encoded: EncodedDocument, encoder: DocumentEncoder) -> tuple[StoredDocument, FileOutcome]:
    """What is stored for an encoded document, and its outcome once it is."""
    doc = pending.doc
    tokens = encoded_tokens(encoded, doc.text, encoder)
    done = FileOutcome(doc.doc_id, doc.name, pending.status, sentences=len(encoded.sentences), tokens=tokens)
    return stored_form(doc, encoded), done


def write_encoded(
    store: SentenceStore, pending: Pending, encoded: EncodedDocument | Exception, encoder: DocumentEncoder,
    errors: Errors = "report",
) -> FileOutcome:
    """Store one encoded document (:func:`stored_form`, :func:`store_outcome`); a document the
    encoder failed on, or found no sentence in, is ``skipped``."""
    doc = pending.doc
    try:
        if isinstance(encoded, Exception):
            raise encoded
        if len(encoded) == 0:
            raise BadFileError("no sentences found")
    except BadFileError as exc:
        if errors == "raise":
            raise
        return FileOutcome(doc.doc_id, doc.name, "skipped", exc.reason)
    except Exception as exc:  # the encoder's failure on this document
        if errors == "raise":
            raise
        return FileOutcome(doc.doc_id, doc.name, "skipped", f"failed to encode: {type(exc).__name__}: {exc}")
    return store_outcome(store, *_to_store(pending, encoded, encoder), errors)
