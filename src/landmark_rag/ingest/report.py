"""What a write run reports: one outcome per document, and how the run ended."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from landmark_rag.store import StoreError

Status = Literal["indexed", "updated", "unchanged", "skipped"]


@dataclass
class FileOutcome:
    """What happened to one document (a file, a text, a dataset row)."""

    doc_id: str
    source: str
    status: Status
    reason: str | None = None
    sentences: int = 0
    tokens: int = 0
    #: a skipped file whose own content is no document now (empty, binary, undecodable, a
    #: scanned or damaged PDF), as opposed to one this machine cannot read (a missing extra)
    no_content: bool = False


@dataclass
class IndexReport:
    """Outcome of one write run (what the CLI summarises)."""

    outcomes: list[FileOutcome] = field(default_factory=list)
    seconds: float = 0.0
    interrupted: bool = False
    not_reached: int = 0  # documents not processed because the run was interrupted or the store failed
    pruned: list[str] = field(default_factory=list)

    def with_status(self, *statuses: Status) -> list[FileOutcome]:
        return [o for o in self.outcomes if o.status in statuses]

    @property
    def tokens(self) -> int:
        return sum(o.tokens for o in self.outcomes)

    @property
    def sentences(self) -> int:
        return sum(o.sentences for o in self.outcomes)

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    def counts(self) -> dict[str, int]:
        keys: tuple[Status, ...] = ("indexed", "updated", "unchanged", "skipped")
        return {k: len(self.with_status(k)) for k in keys}


class StoreFailedError(StoreError):
    """The store failed during a run, which stopped there; ``report`` is what it did before.

    Every document the run had not finished keeps its previous version (a new one stays
    invisible), so running the same command again completes the job.
    """

    def __init__(self, message: str, report: IndexReport) -> None:
        super().__init__(message)
        self.report = report

    def __reduce__(self) -> tuple[type[StoreFailedError], tuple[str, IndexReport]]:
        # a Ray worker's failure travels to the driver pickled; the report must come along
        return type(self), (str(self), self.report)


__all__ = ["FileOutcome", "IndexReport", "Status", "StoreFailedError"]
