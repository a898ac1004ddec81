"""The model identity carried by each sentence record (a *stamp*), for writers the store never sees.

A LlamaIndex application may write sentence nodes through LlamaIndex's own
``ChromaVectorStore`` (``IngestionPipeline(vector_store=...)`` without ``ReplaceDocuments``,
``VectorStoreIndex(nodes, storage_context=...)``): nothing of landmark-rag runs at write
time, so nothing can record the model on the collection or refuse another one. What does
run is :class:`~landmark_rag.llama_index.LandmarkEmbedding`, which sets every sentence
node's vector; it also puts the model identity into the node's metadata, and LlamaIndex
stores that metadata with the vector. The identity thus arrives with the first write, and
every landmark reader and writer reads it back from the records:

- ``MODEL``: ``{"identity": {...}, "source": "..."}`` as JSON (the identity compared, the
  source loaded when no ``--model`` is given);
- ``MODEL_ID``: a non-negative integer hash of the identity, so the store can find records
  of *another* identity with one filtered read (Chroma's ``$ne`` on a string also matches
  records that lack the key; ``$gte 0`` on an integer does not).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from landmark_rag.store.schema import MODEL, MODEL_ID

#: At most this many distinct stamps are read back (more than one is already a refusal).
MAX_STAMPS = 4


def model_stamp(identity: dict[str, Any], source: str | None) -> dict[str, str | int]:
    """The metadata that stamps a sentence record with the model that embedded it."""
    identity = {k: _scalar(v) for k, v in identity.items()}  # as the collection records it
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)
    payload = json.dumps({"identity": identity, "source": source}, sort_keys=True, separators=(",", ":"), default=str)
    return {MODEL: payload, MODEL_ID: int(hashlib.sha256(canonical.encode()).hexdigest()[:15], 16)}


def read_stamp(metadata: dict[str, Any]) -> tuple[dict[str, Any], str | None] | None:
    """``(identity, source)`` from a record's metadata, ``None`` when it carries no valid stamp."""
    raw = metadata.get(MODEL)
    if not isinstance(raw, str):
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    identity = data.get("identity") if isinstance(data, dict) else None
    if not isinstance(identity, dict):
        return None
    source = data.get("source")
    return identity, (str(source) if source else None)


def stamped_models(collection: Any) -> list[tuple[dict[str, Any], str | None]]:
    """The distinct stamps in ``collection`` (at most :data:`MAX_STAMPS`), one small read each.

    Read-only: a reader learns the model from the records and never records it anywhere.
    """
    seen: list[int] = []
    out: list[tuple[dict[str, Any], str | None]] = []
    while len(out) < MAX_STAMPS:
        where: dict[str, Any] = {MODEL_ID: {"$gte": 0}}
        if seen:
            where = {"$and": [where, {MODEL_ID: {"$nin": seen}}]}
        got = collection.get(where=where, limit=1, include=["metadatas"])
        if not got["ids"]:
            break
        md = dict(got["metadatas"][0] or {})
        seen.append(int(md[MODEL_ID]))
        stamp = read_stamp(md)
        if stamp is not None:
            out.append(stamp)
    return out


def _scalar(value: Any) -> str | int | float | bool:
    return value if isinstance(value, str | int | float | bool) else ("" if value is None else str(value))
