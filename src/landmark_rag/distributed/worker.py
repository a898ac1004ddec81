"""The Ray actor of the pipeline: one loaded encoder, fed batches of documents.

Each actor loads the model once (its constructor) and then handles batches of rows handed
out by Ray Data. A row is either a document (``doc_id``, ``text`` and any metadata columns)
or, without a ``text`` column, a file the driver discovered (``doc_id``, ``path``, ``root``). Everything a row goes through is the core
path of ``landmark-rag index``: :func:`~landmark_rag.ingest.prepare_file` /
:func:`~landmark_rag.ingest.prepare_text` (decode, skip rules, content-hash skip against the
manifest snapshot the driver read once), :func:`~landmark_rag.ingest.in_groups` (token
budget) and :func:`~landmark_rag.ingest.encode_and_store` (encode, then the store's
``writing -> sentences -> complete`` manifest protocol). So a retried batch is harmless: a
document is re-written under the same deterministic sentence ids, never added twice.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

#: Columns of a document row that are not stored as metadata (all others are).
ROW_KEYS = ("doc_id", "text")
#: Columns every output row has (one row per input document).
OUTCOME_KEYS = ("doc_id", "source", "status", "reason", "sentences", "tokens", "payload")


class InjectedFault(RuntimeError):
    """Raised by the fault-injection hook (tests); Ray Data retries it like a transient error."""


class DeferredStore:
    """Stands in for the store when the driver is the only writer (a local folder store).

    ``encode_and_store`` calls ``add_document`` as usual; the encoded document travels back to
    the driver, which writes it through the real store.
    """

    def __init__(self) -> None:
        self.payloads: dict[str, bytes] = {}

    def add_document(self, encoded: Any, *, metadata: dict[str, Any] | None = None, doc_hash: str | None = None) -> int:
        self.payloads[encoded.doc_id] = pickle.dumps((encoded, metadata, doc_hash), protocol=pickle.HIGHEST_PROTOCOL)
        return len(encoded.sentences)


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
        group_chars: int,
        fault: dict[str, Any] | None = None,
    ) -> None:
        import ray

        from landmark_rag.store import ChromaSentenceStore, make_client

        self.model, self.overrides, self.identity = model, dict(overrides), _scalars(dict(identity))
        self.device, self.threads = device, max(1, int(threads))
        self._loaded: Any = None
        (snapshot,) = manifest
        self.complete, self.known = ray.get(snapshot) if isinstance(snapshot, ray.ObjectRef) else snapshot
        # a server store: every actor writes (Chroma serialises per record); a local folder:
        # the driver writes (one writer), the actor hands back what it encoded
        self.store = (
            ChromaSentenceStore.open(client=make_client(db), collection_name=collection, create=False)
            if db is not None else DeferredStore()
        )
        self.batch_size = batch_size
        self.group_chars = group_chars
        self.fault = fault
        self.batches = 0

    @property
    def encoder(self) -> Any:
        """The model, loaded on first use: a worker that only meets unchanged documents (a
        re-run) never pays for loading it."""
        if self._loaded is None:
            import torch

            from landmark_rag.encode.models.cache import load_encoder

            # Ray sets OMP_NUM_THREADS from num_cpus; torch's intra-op pool is sized here so
            # that N actors on one machine share its cores instead of each taking all of them.
            torch.set_num_threads(self.threads)
            encoder = load_encoder(self.model, device=self.device, **self.overrides)
            got = _scalars(dict(encoder.config.identity()))
            diff = {k: (self.identity.get(k), v) for k, v in got.items() if self.identity.get(k) != v}
            if diff:
                raise RuntimeError(
                    f"worker on {os.uname().nodename} loaded {self.model!r} with another set-up than the store's "
                    f"({diff}); install the same landmark-rag and model on every node"
                )
            self._loaded = encoder
        return self._loaded

    def __call__(self, batch: Any) -> dict[str, list[Any]]:
        from landmark_rag.ingest import (
            BadFileError,
            FileOutcome,
            SourceFile,
            encode_and_store,
            in_groups,
            prepare_file,
            prepare_text,
        )

        rows = batch.to_pylist() if hasattr(batch, "to_pylist") else _rows(batch)
        self.batches += 1

        def prepared():
            for row in rows:
                doc_id = str(row["doc_id"])
                if "text" not in row:  # a file row made by the driver
                    yield prepare_file(SourceFile(Path(row["path"]), Path(row["root"]), doc_id), self.complete,
                                       self.known)
                else:
                    metadata = {k: v for k, v in row.items() if k not in ROW_KEYS and v is not None}
                    source = str(row.get("source") or doc_id)
                    try:
                        text = _text(row.get("text"))
                    except BadFileError as exc:
                        yield FileOutcome(doc_id, source, "skipped", exc.reason)
                        continue
                    yield prepare_text(doc_id, source, text, metadata, self.complete, self.known)

        out: dict[str, list[Any]] = {k: [] for k in OUTCOME_KEYS}
        wrote_groups = 0
        for item in in_groups(prepared(), self.group_chars):
            outcomes = [item] if isinstance(item, FileOutcome) else [
                o for _, o in encode_and_store(item, self.encoder, self.store, self.batch_size)
            ]
            for o in outcomes:
                payload = self.store.payloads.pop(o.doc_id, None) if isinstance(self.store, DeferredStore) else None
                for key, value in zip(OUTCOME_KEYS, (o.doc_id, o.source, o.status, o.reason or "", o.sentences,
                                                     o.tokens, payload), strict=True):
                    out[key].append(value)
            if not isinstance(item, FileOutcome):
                wrote_groups += 1
                if wrote_groups == 1:
                    self._maybe_fail()  # part of the batch is written, the rest is not
        return out

    def _maybe_fail(self) -> None:
        """Test hook: die (``exit``) or raise (``raise``) once, on this actor's Nth batch.

        ``fault = {"batch": N, "mode": "exit" | "raise", "marker": PATH}``; the marker file is
        created atomically when the fault fires, so exactly one fault happens per run however
        many actors (or restarted actors) see their Nth batch.
        """
        if not self.fault or self.batches != int(self.fault["batch"]):
            return
        try:
            fd = os.open(self.fault["marker"], os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return
        os.write(fd, f"{os.getpid()}\n".encode())
        os.close(fd)
        if self.fault.get("mode") == "exit":
            os._exit(1)  # as a killed worker: no cleanup, no exception
        raise InjectedFault(f"injected fault on batch {self.batches}")


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


def _text(value: Any) -> str:
    """A row's text; bytes are decoded by the core's rules, anything else is a bad document."""
    from landmark_rag.ingest import BadFileError, decode_bytes

    if isinstance(value, bytes):
        return decode_bytes(value)
    if value is None:
        raise BadFileError("empty document (no text)")
    if not isinstance(value, str):
        raise BadFileError(f"text is {type(value).__name__}, not str")
    return value


def _scalars(identity: dict[str, Any]) -> dict[str, Any]:
    from landmark_rag.store.chroma import _scalar

    return {k: _scalar(v) for k, v in identity.items()}
