"""Files the store already holds: one indexed from another folder, and ones gone since.

Why its own module: indexing folders keeps the store in step with files on disk, which
the write path itself knows nothing of. Before a run, a file already stored under another
document id is skipped rather than stored twice (:func:`indexed_elsewhere`, decided on the
run's manifest snapshot); after it, with ``prune``, documents whose file is gone or holds no
document any more are deleted (:func:`prune_missing`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from landmark_rag.ingest.discover import FileSet, SkippedPath
from landmark_rag.ingest.planning import StoreState
from landmark_rag.ingest.report import FileOutcome
from landmark_rag.ingest.sources import FILE_ROOT, FILE_SOURCE

if TYPE_CHECKING:
    from landmark_rag.store.protocols import SentenceStore


def indexed_elsewhere(state: StoreState, found: FileSet) -> FileSet:
    """``found`` with every file the store already holds under another document id (the same
    absolute path, indexed from another root: ``index docs`` then ``index docs/sub``) moved
    to the skipped entries, saying under which id: indexed again, the file would be stored
    twice and every search would return its passages twice. Decided on the run's manifest
    snapshot, so the manifest is still read once."""
    stored: dict[str, str] = {}
    for doc_id, md in state.records.items():
        source = md.get(FILE_SOURCE)
        if isinstance(source, str):
            stored.setdefault(source, doc_id)
    if not stored:
        return found
    files, skipped = [], list(found.skipped)
    for f in found.files:
        other = stored.get(str(f.path))
        if other is not None and other != f.doc_id:
            skipped.append(SkippedPath(f.path, f"already indexed as {other!r} (from another folder); "
                                               "index it from that folder, or delete that document first"))
        else:
            files.append(f)
    return FileSet(files, skipped, found.roots)


def prune_missing(store: SentenceStore, roots: Iterable[Path], outcomes: Iterable[FileOutcome] = ()) -> list[str]:
    """Delete documents indexed from a file under one of ``roots`` that no longer exists, and
    those whose file this run's ``outcomes`` found present but no document any more (emptied,
    binary, undecodable: ``no_content``), whose stored text would otherwise outlive the file's."""
    root_names = {str(Path(r).resolve()) for r in roots}
    emptied = {o.doc_id for o in outcomes if o.status == "skipped" and o.no_content}
    gone = []
    for doc_id, md in store.documents(include_incomplete=True).items():
        source = md.get(FILE_SOURCE)
        if md.get(FILE_ROOT) not in root_names or not isinstance(source, str):
            continue
        if doc_id in emptied or not Path(source).exists():
            store.delete_document(doc_id)
            gone.append(doc_id)
    return sorted(gone)
