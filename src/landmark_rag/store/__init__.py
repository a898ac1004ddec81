"""Storing sentence vectors (step 3 of the pipeline), one module per job.

- ``client.py``: Chroma clients and collections (``make_client``, ``is_server_url``,
  re-opening a folder another process wrote, ``StoreError``);
- ``manifest.py``: the write protocol and the rule for what readers see;
- ``identity.py``: which model the vectors come from (check, record, stamps, ``store_model``);
- ``schema.py``: every stored key and value (sentence ids, flat metadata, manifest fields);
- ``reads.py``: the store's few reads (nearest neighbours, records by id, sentences by
  document), each showing only what the manifest makes visible;
- ``chroma.py``: ``ChromaSentenceStore``, the facade over them (opening, writing, reading);
- ``records.py``: a document's sentence records as a write lays them out (one document, a group);
- ``bm25.py``: the package's one BM25 (scores of sentences given as terms);
- ``analyzer.py``: text -> lexical terms, per language;
- ``lexical.py`` / ``lexical_cache.py``: the sentence-level BM25 index derived from a store,
  kept in sync with its manifest, and its cache on disk; ``lexical_filter.py``: metadata
  filters evaluated inside it, as masks over its rows;
- ``doc_metadata.py`` / ``doc_metadata_cache.py``: the metadata each document's sentences
  share, which turns a metadata filter on a vector search into the documents it selects, and
  its file beside a local store.
"""

from landmark_rag.store.chroma import ChromaSentenceStore
from landmark_rag.store.client import (
    DEFAULT_COLLECTION,
    DEFAULT_DB,
    MEMORY,
    CollectionNotFoundError,
    StoreError,
    is_server_url,
    make_client,
    sentence_collections,
)
from landmark_rag.store.identity import (
    ModelNotRecordedError,
    StoreMismatchError,
    model_source,
    record_model,
    recorded_dim,
    recorded_model,
    store_model,
)
from landmark_rag.store.schema import (
    MANIFEST_KEYS,
    content_hash,
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
    "CollectionNotFoundError",
    "ModelNotRecordedError",
    "StoreError",
    "StoreMismatchError",
    "content_hash",
    "flat_metadata",
    "is_server_url",
    "make_client",
    "model_source",
    "record_model",
    "recorded_dim",
    "recorded_model",
    "sentence_collections",
    "sentence_from_metadata",
    "sentence_id",
    "sentence_metadata",
    "store_model",
    "user_metadata",
]
