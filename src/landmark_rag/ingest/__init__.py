"""Writing documents into a store, without any framework: the one write path.

``ingest/write.py`` runs the steps every writer goes through, each in a module of its own
(``planning.py``: skip unchanged, finish an interrupted write; ``encoding.py``; ``storing.py``;
``stored_files.py``: files indexed elsewhere or gone); ``sources.py`` what a document to write is and how
files, texts and dataset rows become one (what a file is and how it is read:
``landmark_rag.extract``); ``discover.py`` which files; ``pages.py`` how a framework
loader's pages of one file become one document. ``LandmarkIndex.add_texts`` /
``add_files``, the CLI's ``index`` and the Ray workers all run through it.
"""

from landmark_rag.extract import BadFileError
from landmark_rag.extract.text import decode_bytes
from landmark_rag.ingest.discover import FileSet, SkippedPath, SourceFile, UnusablePathError, discover_files, find_files
from landmark_rag.ingest.pages import Page, join_pages, shared_metadata
from landmark_rag.ingest.report import FileOutcome, IndexReport, StoreFailedError
from landmark_rag.ingest.sources import (
    SourceDocument,
    decode_text,
    file_documents,
    file_metadata,
    hash_id,
    read_document,
    read_file,
    readable_files,
    row_document,
    text_documents,
    unique_files,
)
from landmark_rag.ingest.write import (
    GROUP_TOKENS,
    DocumentEncoder,
    StoredDocument,
    StoreState,
    encoder_batch_size,
    finish_unchanged,
    indexed_elsewhere,
    is_unchanged,
    prune_missing,
    store_document,
    store_documents,
    store_outcome,
    stored_form,
    write_documents,
)

__all__ = [
    "GROUP_TOKENS",
    "BadFileError",
    "DocumentEncoder",
    "FileOutcome",
    "FileSet",
    "IndexReport",
    "Page",
    "SkippedPath",
    "SourceDocument",
    "SourceFile",
    "StoreFailedError",
    "StoreState",
    "StoredDocument",
    "UnusablePathError",
    "decode_bytes",
    "decode_text",
    "discover_files",
    "encoder_batch_size",
    "file_documents",
    "file_metadata",
    "find_files",
    "finish_unchanged",
    "hash_id",
    "indexed_elsewhere",
    "is_unchanged",
    "join_pages",
    "prune_missing",
    "read_document",
    "read_file",
    "readable_files",
    "row_document",
    "shared_metadata",
    "store_document",
    "store_documents",
    "store_outcome",
    "stored_form",
    "text_documents",
    "unique_files",
    "write_documents",
]
