"""The driver's count when a worker's store fails (a Chroma server, which the workers write).

The worker's ``StoreFailedError`` travels pickled inside Ray's task error; the driver counts
what its batch had done (committed documents among them) before stopping, as the single-process
path counts them. No Ray needed: the failure is built as Ray hands it over (pickled, wrapped).
"""

from __future__ import annotations

import pickle

from landmark_rag.distributed.pipeline import _done_before, _store_failure
from landmark_rag.ingest import FileOutcome, IndexReport, StoreFailedError
from landmark_rag.store import StoreError


def test_a_workers_partial_report_reaches_the_drivers_count() -> None:
    report = IndexReport(outcomes=[FileOutcome("a", "a.txt", "indexed", sentences=3, tokens=30),
                                   FileOutcome("b", "b.txt", "unchanged")])
    failure = pickle.loads(pickle.dumps(StoreFailedError("store failed: injected", report)))
    try:
        try:
            raise failure
        except StoreError as inner:
            raise RuntimeError("ray task error") from inner  # what Ray wraps it in
    except RuntimeError as wrapped:
        cause = _store_failure(wrapped)
    assert cause is failure
    assert [(o.doc_id, o.status) for o in _done_before(cause)] == [("a", "indexed"), ("b", "unchanged")]
    assert _done_before(StoreError("a bare store error")) == []
