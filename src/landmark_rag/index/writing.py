"""What ``LandmarkIndex``'s writes hand the one write path (``ingest``).

Why its own module: each ``add_*`` method of the index is a different way into the same
write path (texts, documents already made, files and folders, documents already encoded);
turning its arguments into what ``ingest`` writes is plumbing that the index's wiring does
not need to show. The index keeps the order that matters (the arguments checked and the
files found before its model identity is recorded, and that recorded before anything is
written); these functions do one step each.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from landmark_rag.ingest import (
    DocumentEncoder,
    FileSet,
    IndexReport,
    SourceDocument,
    StoreState,
    file_documents,
    find_files,
    indexed_elsewhere,
    prune_missing,
    store_documents,
    stored_form,
    write_documents,
)
from landmark_rag.store.protocols import SentenceStore
from landmark_rag.types import EncodedDocument

#: a framework's own encoding of whole documents: ``encode(texts, doc_ids)``
Encode = Callable[[list[str], list[str]], Sequence[EncodedDocument]]


def write_sources(
    store: SentenceStore,
    documents: Sequence[SourceDocument],
    encoder: Callable[[], DocumentEncoder],
    *,
    skip_unchanged: bool,
    show_progress: bool | None,
) -> None:
    """Write ``documents`` as ``add_sources`` does: every failure propagates (the caller
    checked every text first, so a failure here is the store's or the encoder's)."""
    write_documents(store, documents, encoder, skip_unchanged=skip_unchanged, errors="raise",
                    total=len(documents), desc="adding", show_progress=show_progress)


def files_to_index(
    store: SentenceStore, paths: Iterable[str | os.PathLike[str]] | FileSet, glob: str | None
) -> FileSet:
    """The files ``add_files`` indexes: ``paths`` searched (a missing path raises
    ``FileNotFoundError`` before anything is written), never the store's own folder."""
    if isinstance(paths, FileSet):
        return paths
    local = getattr(store, "local_path", None)
    return find_files(paths, glob=glob, exclude=[local] if local else [])


def index_files(
    store: SentenceStore,
    found: FileSet,
    encoder: Callable[[], DocumentEncoder],
    *,
    prune: bool,
    show_progress: bool | None,
) -> IndexReport:
    """Write the files found, each file's failure a ``skipped`` outcome; with ``prune``,
    then delete the documents whose file is gone (not after an interrupted run, which has
    not seen every file)."""
    state = StoreState.read(store)  # the manifest, read once for the whole run
    found = indexed_elsewhere(state, found)  # one file, one document: never stored twice
    report = write_documents(
        store, file_documents(found), encoder,
        state=state, total=len(found.files) + len(found.skipped), desc="indexing", show_progress=show_progress,
    )
    if prune and not report.interrupted:
        report.pruned = prune_missing(store, found.roots, report.outcomes)
    return report


def check_encoded(docs: Sequence[EncodedDocument], metadatas: Sequence[dict[str, Any] | None] | None) -> None:
    """``add_documents``'s arguments: one metadata per document, and every document named
    (a stored sentence's id starts with its document's)."""
    if metadatas is not None and len(metadatas) != len(docs):
        raise ValueError(f"got {len(metadatas)} metadatas for {len(docs)} documents")
    if any(not d.doc_id for d in docs):
        raise ValueError("add_documents needs EncodedDocuments with a doc_id")


def store_encoded(
    store: SentenceStore, docs: Sequence[EncodedDocument], metadatas: Sequence[dict[str, Any] | None] | None
) -> None:
    """Store documents already encoded as they are (the write path's last step)."""
    stored = [
        stored_form(SourceDocument(str(doc.doc_id), doc.text, dict((metadatas[i] if metadatas else None) or {})), doc)
        for i, doc in enumerate(docs)
    ]
    # the manifest's protocol once per group of documents, not once per document
    store_documents(store, stored)
