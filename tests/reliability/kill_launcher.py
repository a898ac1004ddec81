"""``landmark-rag`` as a subprocess, optionally SIGKILLed by itself at an exact point of a write.

``LANDMARK_RAG_TEST_KILL_AT=POINT:N`` sends SIGKILL to this process (no handler, no flush, no
``finally``: exactly what ``kill -9`` does) at the N-th time POINT is reached:

- ``encode``: before the N-th group of documents is encoded (nothing of it written yet);
- ``announce``: after the N-th write's documents were announced in the manifest (``dirty`` /
  ``writing``);
- ``upsert``: after the N-th batch of new sentences was written (``LANDMARK_RAG_TEST_BATCH``
  sets the batch size so one write takes several batches);
- ``commit``: just before the N-th commit (all new sentences written, not yet visible);
- ``committed``: just after the N-th commit (new versions visible, old sentences not yet deleted);
- ``cleaned``: after the N-th deletion of stale sentences (``dirty`` not yet cleared).

A *write* is one run of the manifest's protocol: a group of documents for ``landmark-rag
index`` (``write_documents`` stores each encoded group at once), one document for
``write_document`` (LlamaIndex's ``ReplaceDocuments``). ``LANDMARK_RAG_TEST_GROUP_DOCS=K``
makes the index's groups at most K documents, so a run makes several writes.

With ``LANDMARK_RAG_TEST_KILL_PID=PID`` the SIGKILL goes to that process instead (a Chroma
server dying at an exact point of the run) and this process carries on.

Without the variables this is simply ``landmark-rag``. Test-only: the package has no hook.
"""

from __future__ import annotations

import os
import signal
import sys


def _install(spec: str) -> None:
    from landmark_rag.encode import LandmarkEncoder
    from landmark_rag.store.client import Collections
    from landmark_rag.store.manifest import Manifest

    point, _, nth = spec.partition(":")
    target = int(nth or 1)
    seen = {"n": 0}

    def tick(name: str) -> None:
        if name == point:
            seen["n"] += 1
            if seen["n"] == target:
                victim = int(os.environ.get("LANDMARK_RAG_TEST_KILL_PID") or os.getpid())
                os.kill(victim, signal.SIGKILL)
                if victim != os.getpid():
                    _wait_gone(victim)

    def after(cls, method: str, name: str, when=lambda *a, **k: True) -> None:
        original = getattr(cls, method)

        def wrapped(self, *args, **kwargs):
            out = original(self, *args, **kwargs)
            if when(*args, **kwargs):
                tick(name)
            return out

        setattr(cls, method, wrapped)

    def before(cls, method: str, name: str) -> None:
        original = getattr(cls, method)

        def wrapped(self, *args, **kwargs):
            tick(name)
            return original(self, *args, **kwargs)

        setattr(cls, method, wrapped)

    before(LandmarkEncoder, "encode_documents", "encode")
    after(Manifest, "_announce", "announce")
    before(Manifest, "_commit", "commit")
    after(Manifest, "_commit", "committed")
    after(Collections, "delete_sentences", "cleaned", when=lambda ids, *a, **k: len(ids) > 0)

    # sentence batches: count the upserts a document's sentence write makes
    original_upsert = Collections.upsert_sentences

    def upsert_sentences(self, *args, **kwargs):
        collection = self.collection

        class Counting:
            def __getattr__(self, name):
                return getattr(collection, name)

            def upsert(self, *a, **k):
                out = collection.upsert(*a, **k)
                tick("upsert")
                return out

        self.collection = Counting()
        try:
            return original_upsert(self, *args, **kwargs)
        finally:
            self.collection = collection

    Collections.upsert_sentences = upsert_sentences
    batch = os.environ.get("LANDMARK_RAG_TEST_BATCH")
    if batch:
        Collections.batch_size = lambda self: int(batch)
    _small_groups()


def _small_groups() -> None:
    """Groups of at most ``LANDMARK_RAG_TEST_GROUP_DOCS`` documents, where it is set."""
    docs = os.environ.get("LANDMARK_RAG_TEST_GROUP_DOCS")
    if docs:
        from landmark_rag.ingest import write

        write.GROUP_DOCS = int(docs)


def _wait_gone(pid: int) -> None:
    """Wait until ``pid`` no longer exists (its port is closed before we go on)."""
    import time

    for _ in range(200):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        try:  # a zombie (not yet reaped by its parent) still answers kill 0
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().split(") ", 1)[1].startswith("Z"):
                    return
        except OSError:
            return
        time.sleep(0.05)


if __name__ == "__main__":
    spec = os.environ.get("LANDMARK_RAG_TEST_KILL_AT")
    if spec or os.environ.get("LANDMARK_RAG_TEST_BATCH"):
        _install(spec or "none:0")
    else:
        _small_groups()
    from landmark_rag.cli import main

    sys.argv[0] = "landmark-rag"
    main()
