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
from landmark_rag.ingest.indexer import FileOutcome, IndexReport, document_metadata, index_files, prune_missing

__all__ = [
    "BadFileError",
    "FileOutcome",
    "IndexReport",
    "ModelNotRecordedError",
    "SkippedPath",
    "SourceFile",
    "UnusablePathError",
    "decode_bytes",
    "discover_files",
    "document_metadata",
    "index_files",
    "model_source",
    "prune_missing",
    "read_document",
    "record_model",
    "recorded_dim",
    "recorded_model",
]
