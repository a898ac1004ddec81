"""Planning a write: what the store already holds decides, per document, what a run does.

Why its own module: the skip rule (an unchanged document is neither encoded nor written),
finishing a write an interrupted run left behind, and whether a write is new or an update
all read one thing, the manifest as the run found it (:class:`StoreState`, read once and
handed to each Ray worker as a copy). Every writer decides by these rules, so they live
apart from the encoding and storing steps that follow them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from landmark_rag.ingest.report import FileOutcome, Status
from landmark_rag.ingest.sources import SourceDocument
from landmark_rag.store import flat_metadata
from landmark_rag.store.manifest import is_complete, record_metadata
from landmark_rag.store.schema import DIRTY, DOC_HASH

if TYPE_CHECKING:  # types only: writing never imports the model stack
    from landmark_rag.store.protocols import SentenceStore


#: ``report``: a document's own failure is a ``skipped`` outcome, Ctrl-C ends the run with
#: a report, a store failure raises :class:`StoreFailedError` (folders, Ray); ``raise``:
#: every failure propagates as raised (the Python API, which validated its input first).
Errors = Literal["report", "raise"]


def is_unchanged(record: Mapping[str, Any] | None, doc: SourceDocument) -> bool:
    """The skip rule: a document is unchanged when its completely stored version has the same
    content hash and the same metadata (a file's metadata, its path and root, is stable)."""
    if record is None or not is_complete(record) or record.get(DOC_HASH) != doc.doc_hash:
        return False
    return record_metadata(record) == flat_metadata(dict(doc.metadata))


@dataclass(frozen=True)
class StoreState:
    """The manifest as a run found it, read once: every skip decision of the run (and of each
    Ray worker, which receives a copy) uses this snapshot instead of asking the store."""

    records: dict[str, dict[str, Any]]

    @classmethod
    def read(cls, store: SentenceStore) -> StoreState:
        return cls(store.documents(include_incomplete=True))

    def is_unchanged(self, doc: SourceDocument) -> bool:
        return is_unchanged(self.records.get(doc.doc_id), doc)

    def knows(self, doc_id: str) -> bool:
        """Whether the store has the id already (complete or interrupted): writing it updates."""
        return doc_id in self.records

    def is_dirty(self, doc_id: str) -> bool:
        return bool(self.records.get(doc_id, {}).get(DIRTY))


def finish_unchanged(store: SentenceStore, state: StoreState, doc_id: str) -> None:
    """The rule for a document an interrupted write left ``dirty``: one that comes back
    unchanged has its leftover sentences deleted now; a changed one is finished by its own
    new write. Call it only for documents this run owns."""
    if state.is_dirty(doc_id):
        store.clean_document(doc_id)


@dataclass(frozen=True)
class Pending:
    """A document to encode and write, and the status it gets once written."""

    doc: SourceDocument
    status: Status


def plan(doc: SourceDocument, state: StoreState, *, skip_unchanged: bool = True) -> Pending | FileOutcome:
    """``unchanged`` (:func:`is_unchanged`), or pending as ``indexed`` (new) or ``updated``."""
    if skip_unchanged and state.is_unchanged(doc):
        return FileOutcome(doc.doc_id, doc.name, "unchanged")
    return Pending(doc, "updated" if state.knows(doc.doc_id) else "indexed")
