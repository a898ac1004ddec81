"""The Ray actor of the pipeline: one loaded encoder, fed batches of documents.

Each actor loads the model once, on first need, and then handles batches of rows handed out
by Ray Data. A row is either a document (``doc_id``, ``text`` and any metadata columns) or,
without a ``text`` column, a file the driver discovered (``doc_id``, ``path``, ``root``).
Every row goes through the core's one write path (``ingest/write.py``,
:func:`~landmark_rag.ingest.write_documents`): the skip rule against the manifest snapshot
the driver read once, the token budget per group, encoding, and the store's manifest
protocol. So a retried batch is harmless: a document is written again under a new version
that replaces the previous one, never added twice.
"""

from __future__ import annotations

import os
import pickle
from typing import Any

#: Columns every output row has (one row per input document).
OUTCOME_KEYS = ("doc_id", "source", "status", "reason", "sentences", "tokens", "payload")


class DeferredStore:
    """Stands in for the store when the driver is the only writer (a local folder store).

    The write path stores a document through ``add_document`` as usual; what it would have
    written travels back to the driver, which writes it through the real store (and finishes
    the documents an interrupted run left dirty).
    """

    def __init__(self) -> None:
        self.payloads: dict[str, bytes] = {}

    def add_document(self, encoded: Any, *, metadata: dict[str, Any] | None = None, doc_hash: str | None = None) -> int:
        from landmark_rag.ingest import StoredDocument
        from landmark_rag.store import content_hash

        stored = StoredDocument(encoded, dict(metadata or {}), doc_hash or content_hash(encoded.text))
        self.payloads[encoded.doc_id] = pickle.dumps(stored, protocol=pickle.HIGHEST_PROTOCOL)
        return len(encoded.sentences)

    def clean_document(self, doc_id: str) -> int:
        return 0  # the driver finishes it: it holds the store


class EncodeWorker:
    """Callable class for ``Dataset.map_batches``: rows in, one outcome row per document out."""

    def __init__(
        self,
        *,
        model: str,
        overrides: dict[str, Any],
        identity: dict[str, Any],
        db: str | None,
        collection: str,
        manifest: list[Any],
        device: str | None = None,
        threads: int = 1,
        batch_size: int = 16,
        group_tokens: int,
    ) -> None:
        import ray

        from landmark_rag.store import ChromaSentenceStore, make_client

        self.model, self.overrides, self.identity = model, dict(overrides), dict(identity)
        self.device, self.threads = device, max(1, int(threads))
        self._loaded: Any = None
        (snapshot,) = manifest
        self.state = ray.get(snapshot) if isinstance(snapshot, ray.ObjectRef) else snapshot
        # a server store: every actor writes (Chroma serialises per record); a local folder:
        # the driver writes (one writer), the actor hands back what it encoded
        self.deferred = DeferredStore() if db is None else None
        self.store: Any = self.deferred or ChromaSentenceStore.open(
            client=make_client(db), collection_name=collection, create=False
        )
        self.batch_size = batch_size
        self.group_tokens = group_tokens

    @property
    def encoder(self) -> Any:
        """The model, loaded on first use: a worker that only meets unchanged documents (a
        re-run) never pays for loading it."""
        if self._loaded is None:
            import torch

            from landmark_rag.encode.models.cache import load_encoder
            from landmark_rag.store.identity import identity_diff, scalar

            # Ray sets OMP_NUM_THREADS from num_cpus; torch's intra-op pool is sized here so
            # that N actors on one machine share its cores instead of each taking all of them.
            torch.set_num_threads(self.threads)
            encoder = load_encoder(self.model, device=self.device, **self.overrides)
            if encoder.prepare_workers is None:
                # preparation workers (``encode.runtime.process``) would otherwise size
                # themselves from the whole machine: an actor's share is its own CPUs
                encoder.prepare_workers = max(1, self.threads - 2)
            got = {k: scalar(v) for k, v in encoder.config.identity().items()}
            diff = identity_diff({k: scalar(v) for k, v in self.identity.items()}, got)
            if diff:
                raise RuntimeError(
                    f"worker on {os.uname().nodename} loaded {self.model!r} with another set-up than the store's "
                    f"({diff}); install the same landmark-rag and model on every node"
                )
            self._loaded = encoder
        return self._loaded

    def __call__(self, batch: Any) -> dict[str, list[Any]]:
        from landmark_rag.ingest import DocumentEncoder, row_document, write_documents

        rows = batch.to_pylist() if hasattr(batch, "to_pylist") else _rows(batch)
        report = write_documents(
            self.store, (row_document(row) for row in rows), lambda: DocumentEncoder.of(self.encoder, self.batch_size),
            state=self.state, show_progress=False, group_tokens=self.group_tokens,
        )
        out: dict[str, list[Any]] = {k: [] for k in OUTCOME_KEYS}
        for o in report.outcomes:
            payload = self.deferred.payloads.pop(o.doc_id, None) if self.deferred is not None else None
            for key, value in zip(OUTCOME_KEYS, (o.doc_id, o.source, o.status, o.reason or "", o.sentences,
                                                 o.tokens, payload), strict=True):
                out[key].append(value)
        return out


def load_identity(model: str, overrides: dict[str, Any], device: str | None) -> tuple[dict[str, Any], int, str]:
    """Model identity, dimension and name, as a worker loads it (run as a Ray task; the core's
    encoder cache keeps the model for the next run in the same worker process)."""
    from landmark_rag.encode.models.cache import load_encoder

    encoder = load_encoder(model, device=device, **overrides)
    return dict(encoder.config.identity()), int(encoder.dim), encoder.model_name


def _rows(batch: dict[str, Any]) -> list[dict[str, Any]]:
    keys = list(batch)
    n = len(batch[keys[0]]) if keys else 0
    return [{k: _plain(batch[k][i]) for k in keys} for i in range(n)]


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") and getattr(value, "ndim", 1) == 0 else value
