"""Which model a collection was built with, recorded so ``query`` needs no ``--model``.

The core store records ``encoder.config.identity()`` (model name, pooling, landmark set-up)
and refuses a different one. That identity names the model but does not say where its
weights are: a fine-tuned directory keeps its base model's name. So the folder workflow also
records the model *source* it loaded (an alias, a hub name, or an absolute directory / .gguf
path) and the vector dimension, under keys of its own that are informative, never compared:
moving a model directory must not make its collection unreadable with ``--model NEWPATH``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from landmark_rag.encode.models.registry import PACKAGED_MODELS, ModelNotFoundError, default_model, packaged_model
from landmark_rag.store.chroma import IDENTITY_PREFIX

SOURCE_KEY = "landmark_rag_cli:model_source"
DIM_KEY = "landmark_rag_cli:dim"
#: Identity fields re-applied when loading the recorded model, so it embeds exactly as at
#: indexing time even when they were set on the command line rather than in the model dir.
OVERRIDE_FIELDS = ("pooling", "query_pooling", "lmk_token", "query_instruction")


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
    md = dict(store.collection.metadata or {})
    if md.get(SOURCE_KEY):
        return
    md = {k: v for k, v in md.items() if not k.startswith("hnsw:")}  # Chroma refuses to change these
    md.update({SOURCE_KEY: source, DIM_KEY: int(dim)})
    store.collection.modify(metadata=md)


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
    if source and Path(source).is_absolute() and not Path(source).exists() and _packaged(name):
        source = name  # packaged models load by name
    return source, overrides


def _packaged(name: str | None) -> str | None:
    if not name:
        return None
    path = packaged_model(str(name))
    return str(path) if path is not None else None


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


class ModelNotRecordedError(ValueError):
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


def encoder_for_store(
    store: Any | None,
    model: str | os.PathLike[str] | None = None,
    *,
    device: str | None = None,
    dtype: str | None = None,
    overrides: dict[str, Any] | None = None,
) -> tuple[Any, str]:
    """The encoder :func:`store_model` names, from the shared cache, and its source.

    The CLI, the core index and both framework adapters load through this, so one store
    opens identically (same model, same settings, same object) through each of them.
    """
    from landmark_rag.encode.models.cache import load_encoder

    source, settings = store_model(store, model, overrides)
    return load_encoder(source, device=device, dtype=dtype, **settings), source


def recorded_dim(store: Any) -> int | None:
    """Vector dimension: recorded, else read off one stored vector (None for an empty store)."""
    md = store.collection.metadata or {}
    if isinstance(md.get(DIM_KEY), int):
        return int(md[DIM_KEY])
    got = store.collection.get(limit=1, include=["embeddings"])
    vecs = got.get("embeddings")
    return len(vecs[0]) if vecs is not None and len(vecs) else None
