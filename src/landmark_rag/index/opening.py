"""Opening an index: which store, which model, and when the model is loaded.

Why its own module: ``LandmarkIndex.open`` decides several things before an index exists
(the client for ``db``, whether the collection is there, the store's model by the one rule
``store.identity.store_model``, whether loading it can wait until first use, and recording
the model on a new collection). Those decisions need the store's identity helpers and the
encoder cache, not the search and write wiring, so they live here and ``open`` only builds
the index from what :func:`open_store` found.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from landmark_rag.encode.protocols import QueryEncoder
from landmark_rag.store import ChromaSentenceStore, make_client, record_model, recorded_model, store_model
from landmark_rag.store.client import CollectionNotFoundError, missing_store_folder
from landmark_rag.store.identity import recorded_identity


@dataclass(frozen=True)
class Opened:
    """What :func:`open_store` found: the store, its encoder (``None`` when loading waits for
    first use, then ``loader`` loads it) and the model source to record on a first write."""

    store: ChromaSentenceStore
    encoder: QueryEncoder | None
    loader: Callable[[], QueryEncoder] | None
    source: str


def open_store(
    db: str | os.PathLike[str],
    *,
    collection: str,
    model: str | os.PathLike[str] | None,
    device: str | None,
    overrides: dict[str, Any] | None,
    create: bool,
    client: Any,
    lazy: bool,
    compile_encoder: bool,
) -> Opened:
    """The store in ``db`` and its model, as ``LandmarkIndex.open`` documents them.

    A new collection is created with its model's identity and source recorded; an existing
    one is left as it is (the first write records the model). Loading is deferred only when
    ``lazy`` and the store records its model and nothing asks for another, since only then is
    there a recorded identity to check the model against when it loads.
    """
    if client is None and not create and missing_store_folder(db):
        # a PersistentClient would create the folder (and its database) just to find nothing
        raise CollectionNotFoundError(collection, [])
    client = client if client is not None else make_client(db)
    try:
        existing = ChromaSentenceStore.open(collection_name=collection, client=client, create=False)
    except LookupError:
        if not create:
            raise
        existing = None
    source, settings = store_model(existing, model, overrides)

    def load() -> QueryEncoder:
        from landmark_rag.encode.models.cache import load_encoder

        encoder = load_encoder(source, device=device, **settings)
        return encoder.compile() if compile_encoder else encoder

    deferred = lazy and existing is not None and model is None and not overrides and records_model(existing)
    encoder = None if deferred else load()
    store = existing
    if store is None:  # a new collection: created with its model recorded
        assert encoder is not None  # only a store that records its model defers loading
        store = ChromaSentenceStore.open(
            collection_name=collection, client=client, identity=encoder.config.identity(), create=True
        )
        record_model(store, source, encoder.dim)
    return Opened(store, encoder, load if deferred else None, source)


def store_identity(store: object) -> dict[str, Any]:
    """The model identity ``store`` records (empty for a source that records none, such as a
    framework's docstore)."""
    identity = getattr(store, "identity", None)
    return identity() if callable(identity) else {}


def records_model(store: object) -> bool:
    """Whether the collection records both its model identity and where the model came from
    (so a writer has nothing to record, and the model can be loaded when first needed)."""
    collection = getattr(store, "collection", None)  # a plain sentence source records nothing
    return collection is not None and bool(recorded_identity(collection)) and bool(recorded_model(store)[0])
