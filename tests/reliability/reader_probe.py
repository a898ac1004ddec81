"""A long-lived reader process (a web app's retriever) watching a local store while another
process writes to it. Opens the store once, then searches in a loop until ``STOP_FILE``
exists; prints one JSON line per observation and a final line.

Usage: reader_probe.py DB STOP_FILE NEW_DOC_ID [--no-refresh]

``--no-refresh`` disables the store's reopen-on-change (to measure what a reader without it
sees; docs/reliability.md).
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path

import numpy as np

from landmark_rag.retrieve import Request, Sources, find_hits
from landmark_rag.store import ChromaSentenceStore


def observe(store: ChromaSentenceStore) -> dict:
    """One reader's view: visible documents' texts, and the invariants of a search over all."""
    docs = store.documents()
    texts = {}
    for doc_id in docs:
        # an optimistic read: the manifest record, the sentences and the text are separate
        # calls, so a commit between them is retried (the record is re-read to detect it);
        # what must never happen is an inconsistent view under one unchanged record
        for _ in range(5):
            md = store.documents().get(doc_id)
            sents = store.read_document(doc_id).sentences
            text = store.document_text(doc_id) or ""
            if md is not None and store.documents().get(doc_id) == md:
                break
        assert md is not None, doc_id
        assert [s.index for s in sents] == list(range(md["n_sentences"])), doc_id
        assert all(text[s.start : s.end] == s.text for s in sents), doc_id
        texts[doc_id] = text
    vec = np.ones(store.collection.get(limit=1, include=["embeddings"])["embeddings"].shape[1], dtype=np.float32)
    hits = store.nearest(vec, 1000)
    keys = [(h.sentence.doc_id, h.sentence.index) for h in hits]
    assert len(keys) == len(set(keys)), "duplicate hits"
    first = min(docs)
    # a filtered search as a reader runs it (the store's read is plain: while ``first`` is
    # replaced its top records may all be the hidden new version; the search reads on)
    filtered = find_hits(Request("dense", None, vec, {"doc_id": first}), 5, Sources(store))  # stale readers failed here
    assert filtered and all(h.sentence.doc_id == first for h in filtered)
    return {"texts": texts, "hits": len(hits)}


def _where(exc: BaseException) -> str:
    """The innermost frames of ``exc``: a race that fails rarely must say where it failed."""
    frames = traceback.extract_tb(exc.__traceback__)[-3:]
    return " <- ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(frames))


def main() -> None:
    db, stop_file, new_doc = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    if "--no-refresh" in sys.argv[4:]:
        from landmark_rag.store.client import Collections

        Collections.fresh = lambda self: None
    store = ChromaSentenceStore.open(db, "landmark", create=False)
    n, errors = 0, []
    while not stop_file.exists():
        try:
            view = observe(store)
            print(json.dumps({"texts": view["texts"]}), flush=True)
            n += 1
        except Exception as exc:  # noqa: BLE001 - reported to the test
            errors.append(f"{type(exc).__name__}: {exc} (at {_where(exc)})")
        time.sleep(0.1)
    report: dict = {"observations": n, "errors": errors, "final": None, "new_doc_found": False}
    try:
        report["final"] = observe(store)["texts"]
        # the new document must be searchable, not only counted: its own vector finds it first
        vecs = store.read_document(new_doc, [0], embeddings=True).embeddings
        top = store.nearest(vecs[0], 1) if len(vecs) else []
        report["new_doc_found"] = bool(top) and top[0].sentence.doc_id == new_doc and top[0].sentence.index == 0
    except Exception as exc:  # noqa: BLE001 - reported to the test
        errors.append(f"final: {type(exc).__name__}: {exc}")
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
