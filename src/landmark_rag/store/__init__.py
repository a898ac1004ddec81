"""Storing sentence vectors (step 3 of the pipeline): Chroma I/O and the shared schema."""

from landmark_rag.store.chroma import (
    DEFAULT_COLLECTION,
    DEFAULT_DB,
    MEMORY,
    ChromaSentenceStore,
    StoreError,
    StoreMismatchError,
    content_hash,
    make_client,
)
from landmark_rag.store.schema import (
    MANIFEST_KEYS,
    flat_metadata,
    sentence_from_metadata,
    sentence_id,
    sentence_metadata,
    user_metadata,
)

__all__ = [
    "DEFAULT_COLLECTION",
    "DEFAULT_DB",
    "MANIFEST_KEYS",
    "MEMORY",
    "ChromaSentenceStore",
    "StoreError",
    "StoreMismatchError",
    "content_hash",
    "flat_metadata",
    "make_client",
    "sentence_from_metadata",
    "sentence_id",
    "sentence_metadata",
    "user_metadata",
]
