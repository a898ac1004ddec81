"""Folder ingestion without any framework: find files, decode them, skip unchanged ones,
encode and store the rest. ``landmark-rag index`` is a thin shell around this."""

from landmark_rag.ingest.decode import BadFileError, decode_bytes, read_document
from landmark_rag.ingest.discover import SkippedPath, SourceFile, UnusablePathError, discover_files
from landmark_rag.ingest.identity import (
    ModelNotRecordedError,
    model_source,
    record_model,
    recorded_dim,
    recorded_model,
)
from landmark_rag.ingest.indexer import (
    FileOutcome,
    IndexReport,
    PendingDocument,
    document_metadata,
    duplicate_ids,
    encode_and_store,
    in_groups,
    index_files,
    manifest_state,
    prepare_file,
    prepare_text,
    prune_missing,
)

__all__ = [
    "BadFileError",
    "FileOutcome",
    "IndexReport",
    "ModelNotRecordedError",
    "PendingDocument",
    "SkippedPath",
    "SourceFile",
    "UnusablePathError",
    "decode_bytes",
    "discover_files",
    "document_metadata",
    "duplicate_ids",
    "encode_and_store",
    "in_groups",
    "index_files",
    "manifest_state",
    "model_source",
    "prepare_file",
    "prepare_text",
    "prune_missing",
    "read_document",
    "record_model",
    "recorded_dim",
    "recorded_model",
]
