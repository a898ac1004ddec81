"""Which model a store's vectors come from: checked, recorded, stamped, and chosen for reading it.

Vectors of two models (or of one model with two landmark set-ups) are not comparable, so a
store knows its model and refuses another:

- the *identity* (``encoder.config.identity()``: model name, pooling, landmark set-up, a
  fingerprint of the weights) is recorded on the sentence collection's metadata under
  ``landmark_rag:KEY`` by the first landmark-rag writer and compared by every reader and
  writer (:func:`check_identity`, :class:`StoreMismatchError`);
- the model *source* (an alias, a hub name, or an absolute directory / .gguf path) and the
  vector dimension are recorded too, under keys of their own that are informative, never
  compared: an identity names a model but not where its weights are (a fine-tuned directory
  keeps its base model's name), and moving a model directory must not make its collection
  unreadable with ``--model NEWPATH``;
- a *stamp* on each sentence record carries identity and source for writers the store never
  sees: a LlamaIndex application writing through LlamaIndex's own ``ChromaVectorStore``
  runs no landmark-rag code at write time except ``LandmarkEmbedding``, which stamps every
  node it embeds (``MODEL``: ``{"identity": {...}, "source": "..."}`` as JSON; ``MODEL_ID``:
  a non-negative integer hash of the identity, so records of *another* identity are found
  with one filtered read, since Chroma's ``$ne`` on a string also matches records that lack
  the key while ``$gte 0`` on an integer does not);
- :func:`store_model` is the one rule for "the store's model", which the CLI, the core
  index and both framework adapters load.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from landmark_rag.encode.models.registry import (
    PACKAGED_MODELS,
    PREVIOUS_VERSIONS,
    ModelNotFoundError,
    default_model,
    model_config,
    packaged_model,
)
from landmark_rag.errors import LandmarkRagError
from landmark_rag.store.client import merge_metadata
from landmark_rag.store.schema import DIM_KEY, IDENTITY_PREFIX, MODEL, MODEL_ID, SOURCE_KEY

if TYPE_CHECKING:
    from landmark_rag.encode.config import LandmarkConfig

logger = logging.getLogger(__name__)

#: Identity fields compared only when the store has them recorded (added after stores existed).
OPTIONAL_IDENTITY = ("weights_fingerprint",)
#: Identity fields written only when they differ from their default (``LandmarkConfig.identity``):
#: a side that lacks one has the default, so a recorded non-default is compared both ways.
IDENTITY_DEFAULTS = {"landmark_attention": "full", "landmark_span": 1}
#: Identity fields re-applied when loading the recorded model, so it embeds exactly as at
#: indexing time even when they were set on the command line rather than in the model dir.
OVERRIDE_FIELDS = ("pooling", "query_pooling", "lmk_token", "query_instruction")
#: At most this many distinct stamps are read back (more than one is already a refusal).
MAX_STAMPS = 4


class StoreMismatchError(LandmarkRagError, ValueError):
    """The collection was written with another model or landmark configuration."""


class ModelNotRecordedError(LandmarkRagError, ValueError):
    """A collection holds vectors but records no model: guessing one would give wrong answers."""

    def __init__(self, collection: str) -> None:
        super().__init__(
            f"collection {collection!r} records no model (it was written by a tool that does not record "
            "one, e.g. LlamaIndex embedding bare node texts: VectorStoreIndex(nodes, embed_model=...) on "
            "nodes that LandmarkEmbedding did not embed as a transformation); "
            "name the model that wrote it: --model NAME on the command line, LandmarkIndex.open(..., "
            "model=NAME), LandmarkRetriever(embeddings=LandmarkEmbeddings(model_name=NAME)) or "
            "LandmarkEmbedding(NAME). Nothing was written."
        )
        self.collection = collection


# ---------------------------------------------------------------------------- identity
def identity_metadata(identity: dict[str, Any] | None) -> dict[str, Any]:
    """Collection metadata recording ``identity``."""
    return {IDENTITY_PREFIX + k: scalar(v) for k, v in (identity or {}).items()}


def recorded_identity(collection: Any) -> dict[str, Any]:
    """The identity recorded on the collection's metadata by a landmark-rag writer."""
    md = collection.metadata or {}
    return {k[len(IDENTITY_PREFIX):]: v for k, v in md.items() if k.startswith(IDENTITY_PREFIX)}


def collection_identity(collection: Any) -> dict[str, Any]:
    """The recorded identity, else the one stamped on the records (empty if none).

    A collection whose records carry another model's stamp (or two models' stamps) is refused
    with :class:`StoreMismatchError`: its vectors are not comparable with each other.
    """
    recorded = recorded_identity(collection)
    stamps = stamped_models(collection)
    reference = recorded or (stamps[0][0] if stamps else {})
    for other, source in stamps:
        diff = identity_diff(reference, other)
        if diff:
            lines = ", ".join(f"{k}: {a!r} vs {b!r}" for k, (a, b) in diff.items())
            raise StoreMismatchError(
                f"collection {collection.name!r} holds vectors of two model set-ups ({lines}; the other "
                f"written through LlamaIndex by {source or other.get('model_name')!r}): they cannot be "
                "searched together. Re-index into a new collection with one model."
            )
    return dict(reference)


def check_identity(collection: Any, identity: dict[str, Any], *, record: bool) -> None:
    """Refuse a model set-up other than the collection's; ``record``: also record ``identity``
    on a collection that has none recorded (a writer; readers only compare)."""
    recorded = collection_identity(collection)
    wanted = {k: scalar(v) for k, v in identity.items()}
    diff = identity_diff(recorded, wanted) if recorded else {}
    if diff:
        lines = ", ".join(f"{k}: store has {a!r}, requested {b!r}" for k, (a, b) in diff.items())
        # name the model to use: a packaged model retrained since loads its earlier release by
        # name, which is not the name `info` shows as the store's model
        source = (collection.metadata or {}).get(SOURCE_KEY) or recorded.get("model_name")
        built = _packaged_release(str(source), recorded.get("weights_fingerprint")) if source else None
        use = (
            f"It was built with {built!r}: leave the model out to use it (readers load a store's own model), "
            f"or name {built!r}"
            if built else "Use the model it was built with"
        )
        raise StoreMismatchError(
            f"collection {collection.name!r} was built with a different model set-up ({lines}). "
            f"{use}, or index into a new collection."
        )
    if record and not recorded_identity(collection):
        merge_metadata(collection, identity_metadata(wanted))


def identity_diff(recorded: dict[str, Any], wanted: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Fields where ``wanted`` differs from ``recorded`` (optional fields only where both have them;
    a field with a default, :data:`IDENTITY_DEFAULTS`, also where only ``recorded`` has it)."""
    out = {
        k: (recorded.get(k, IDENTITY_DEFAULTS.get(k)), v) for k, v in wanted.items()
        if recorded.get(k, IDENTITY_DEFAULTS.get(k)) != v and not (k in OPTIONAL_IDENTITY and k not in recorded)
    }
    for k, default in IDENTITY_DEFAULTS.items():
        if k in recorded and k not in wanted and recorded[k] != default:
            out[k] = (recorded[k], default)
    return out


def scalar(value: Any) -> str | int | float | bool:
    """An identity value as the collection's metadata holds it."""
    return value if isinstance(value, str | int | float | bool) else ("" if value is None else str(value))


# ---------------------------------------------------------------------------- stamps
def model_stamp(identity: dict[str, Any], source: str | None) -> dict[str, str | int]:
    """The metadata that stamps a sentence record with the model that embedded it."""
    identity = {k: scalar(v) for k, v in identity.items()}  # as the collection records it
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


# ---------------------------------------------------------------------------- the store's model
def model_source(model: str | os.PathLike[str] | None, default: str) -> str:
    """What to record for a ``--model`` argument (``None``: ``default``).

    A packaged model's name, else the absolute path of a local directory or file, else the
    name as given (alias or hub name).
    """
    chosen = default if model is None else model
    path = Path(chosen).expanduser()
    if not path.exists():
        return os.fspath(chosen)
    path = path.resolve()
    # a model shipped in the package is recorded by name: the store then outlives a reinstall
    for name, where in PACKAGED_MODELS.items():
        if Path(where).resolve() == path:
            return name
    return str(path)


def record_model(store: Any, source: str, dim: int) -> None:
    """Write the model source and dimension on the collection unless already recorded."""
    if (store.collection.metadata or {}).get(SOURCE_KEY):
        return
    merge_metadata(store.collection, {SOURCE_KEY: source, DIM_KEY: int(dim)})


def recorded_model(store: Any) -> tuple[str | None, dict[str, Any]]:
    """The model to load for ``store`` and the config overrides that reproduce its set-up.

    The recorded source is used while it exists. A recorded directory that is gone (e.g. a
    store written before packaged models were recorded by name, then the package moved) is
    replaced by the identity's model name when that names a model shipped in the package;
    otherwise the dead path is returned and the caller reports it.
    """
    md = store.collection.metadata or {}
    identity = store.identity()
    name = identity.get("model_name") or None
    source = md.get(SOURCE_KEY)
    if not source and not md.get(IDENTITY_PREFIX + "model_name"):
        # written through LlamaIndex's own vector store: the source LandmarkEmbedding stamped
        stamps = store.stamped_models() if hasattr(store, "stamped_models") else []
        source = stamps[0][1] if stamps else None
    source = source or name
    overrides = {k: identity[k] for k in OVERRIDE_FIELDS if identity.get(k) not in (None, "")}
    if source and Path(source).is_absolute() and not Path(source).exists() and name and packaged_model(str(name)):
        source = name  # packaged models load by name
    return _packaged_release(source, identity.get("weights_fingerprint")), overrides


def _packaged_release(source: str | None, fingerprint: str | None) -> str | None:
    """A packaged model retrained since the store was written loads the release whose weights
    the store's vectors came from (``PREVIOUS_VERSIONS``), so the store searches unchanged."""
    if not source or not fingerprint or source not in PREVIOUS_VERSIONS:
        return source
    from landmark_rag.encode.models.loading import packaged_version

    return packaged_version(source, str(fingerprint)) or source


def recorded_config(store: Any) -> LandmarkConfig | None:
    """The ``LandmarkConfig`` of the model ``store`` records, read from its
    ``landmark_config.json`` without loading weights; ``None`` when the store records none or
    it cannot be read (logged). What a reader without an encoder (lexical-only search) needs
    to search with the model's fusion, BM25 parameters included."""
    try:
        source, _ = recorded_model(store)
        return model_config(source) if source else None
    except (OSError, ValueError, LookupError) as exc:
        logger.warning("the store's model config could not be read (%s); searching with default fusion", exc)
        return None


def recorded_dim(store: Any) -> int | None:
    """Vector dimension: recorded, else read off one stored vector (None for an empty store)."""
    md = store.collection.metadata or {}
    if isinstance(md.get(DIM_KEY), int):
        return int(md[DIM_KEY])
    got = store.collection.get(limit=1, include=["embeddings"])
    vecs = got.get("embeddings")
    return len(vecs[0]) if vecs is not None and len(vecs) else None


def store_model(
    store: Any | None, model: str | os.PathLike[str] | None = None, overrides: dict[str, Any] | None = None
) -> tuple[str, dict[str, Any]]:
    """The one rule for "the store's model": which model to load for ``store``, with which
    config overrides.

    No ``model`` (and no ``overrides``) on a store that records one: the model it was built
    with, set up exactly as at indexing time (:data:`OVERRIDE_FIELDS` re-applied). Otherwise
    the model asked for (``None``: the package default, for an empty or new store only)
    with ``overrides``; the caller checks it against the store's identity. Raises
    ``ModelNotFoundError`` when the recorded model directory is gone, and
    :class:`ModelNotRecordedError` for a store with sentences but no recorded model.
    """
    if store is not None and model is None and not overrides:
        source, recorded = recorded_model(store)
        if source and Path(source).is_absolute() and not Path(source).exists():
            raise ModelNotFoundError(
                f"the model this store was built with is no longer at {source}; pass --model with its new location"
            )
        if source:
            return source, recorded
        if store.count_sentences() > 0:
            raise ModelNotRecordedError(store.collection.name)
    return model_source(model, default_model()), dict(overrides or {})


__all__ = [
    "IDENTITY_DEFAULTS",
    "OPTIONAL_IDENTITY",
    "OVERRIDE_FIELDS",
    "ModelNotRecordedError",
    "StoreMismatchError",
    "check_identity",
    "collection_identity",
    "identity_metadata",
    "model_source",
    "model_stamp",
    "read_stamp",
    "record_model",
    "recorded_config",
    "recorded_dim",
    "recorded_model",
    "stamped_models",
    "store_model",
]
