"""The one write path: every document that any entry point stores goes through these steps.

``LandmarkIndex.add_texts`` / ``add_files`` (and so the CLI's ``index``, the LangChain
retriever) and the Ray workers and driver all call them; each rule below exists here only::

    files ─ find_files ─ file_documents ─┐   (ingest/discover.py, ingest/sources.py:
    texts ─ text_documents ──────────────┼─▶ SourceDocument   decode, bad files skipped)
    Ray rows ─ row_document ─────────────┘        │
                                                  ▼ plan: is_unchanged?  (StoreState, read once)
                  unchanged ─▶ finish_unchanged   │ changed or new
                  (clean a dirty record)          ▼ in_groups: a token budget per group
                                                  ▼ encode_group: the group at once, else one by one
                                                  ▼ stored_form: what is stored for the document
                                                  ▼ store_outcomes: the manifest's write protocol,
                                                  │   once for the group's encoded documents
                                                  ▼ FileOutcome ─▶ IndexReport

Guarantees: an unchanged document (same content hash and metadata as its complete stored
version) is neither encoded nor written, and the model is loaded only once a document needs
encoding; a bad document costs only itself (``errors="report"``: a ``skipped`` outcome);
a failing store stops the run with :class:`~landmark_rag.ingest.report.StoreFailedError`
carrying the report of what was done, every unfinished document keeping its previous
version (a group's documents are done together, at its commit); Ctrl-C ends the run with
``report.interrupted`` set; an interrupted write is finished by the next run (its own new
write, or :func:`finish_unchanged`).

This module is the run: it groups the planned documents (:func:`in_groups`), drives the
stages and reports each outcome (:func:`write_documents`, :func:`tracked_run`). The steps
live beside it, one concept each, and are importable from here as before:
``ingest/planning.py`` (the skip rule, :class:`StoreState`, finishing an interrupted write),
``ingest/encoding.py`` (:class:`DocumentEncoder`, the producer and encoding stages),
``ingest/storing.py`` (:func:`stored_form`, the manifest's protocol once per group, each
document's outcome) and ``ingest/stored_files.py`` (a file indexed from another folder,
files gone since: :func:`indexed_elsewhere`, :func:`prune_missing`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing, contextmanager
from typing import TYPE_CHECKING

from tqdm.auto import tqdm

from landmark_rag.encode.runtime.prefetch import Prefetch
from landmark_rag.ingest.encoding import (
    DocumentEncoder,
    Encoded,
    EncoderLoader,
    count_tokens,
    encode_group,
    encoded_groups,
    encoded_tokens,
    encoder_batch_size,
    prepared_groups,
)
from landmark_rag.ingest.planning import Errors, Pending, StoreState, finish_unchanged, is_unchanged, plan
from landmark_rag.ingest.report import FileOutcome, IndexReport, StoreFailedError
from landmark_rag.ingest.sources import SourceDocument
from landmark_rag.ingest.stored_files import indexed_elsewhere, prune_missing
from landmark_rag.ingest.storing import (
    StoredDocument,
    store_document,
    store_documents,
    store_outcome,
    store_outcomes,
    stored_form,
    write_encoded,
    write_group,
)
from landmark_rag.progress import bar_options
from landmark_rag.store import StoreError

if TYPE_CHECKING:  # types only: writing never imports the model stack
    from landmark_rag.store.protocols import SentenceStore


#: Tokens encoded together at most: enough to fill encoder batches with short documents,
#: small enough that memory stays bounded and progress and interruption stay fine-grained.
GROUP_TOKENS = 16_384
#: Documents encoded together at most.
GROUP_DOCS = 32
#: Characters per token assumed when a group's budget is checked before tokenizing.
CHARS_PER_TOKEN = 4


# ---------------------------------------------------------------------------- group
def in_groups(
    items: Iterable[Pending | FileOutcome], tokens: int = GROUP_TOKENS, max_docs: int | None = None
) -> Iterator[FileOutcome | list[Pending]]:
    """Outcomes as they come, pending documents gathered into groups (in order), each encoded
    together and then stored together.

    A group closes at about ``tokens`` tokens (``CHARS_PER_TOKEN`` characters each) or
    ``max_docs`` documents (``None``: :data:`GROUP_DOCS`, read at each call so that a test can
    make groups small).
    """
    max_docs = GROUP_DOCS if max_docs is None else max_docs
    group: list[Pending] = []
    chars = 0
    for item in items:
        if isinstance(item, FileOutcome):
            yield item
            continue
        group.append(item)
        chars += len(item.doc.text)
        if chars >= tokens * CHARS_PER_TOKEN or len(group) >= max_docs:
            yield group
            group, chars = [], 0
    if group:
        yield group



# ---------------------------------------------------------------------------- a run
class Progress:
    """The outcomes of a run as they come: its report, and a progress bar with tokens/s."""

    def __init__(self, report: IndexReport, total: int | None, desc: str, show_progress: bool | None) -> None:
        self.report, self.total, self.done = report, total, 0
        self.started = time.perf_counter()
        self.bar = tqdm(total=total, desc=desc, unit="doc", dynamic_ncols=True, **bar_options(show_progress))

    def add(self, outcome: FileOutcome) -> None:
        self.report.outcomes.append(outcome)
        self.done += 1
        self.bar.update(1)
        if outcome.tokens:
            elapsed = max(time.perf_counter() - self.started, 1e-9)
            self.bar.set_postfix_str(f"{self.report.tokens / elapsed:,.0f} tok/s", refresh=False)

    @property
    def not_reached(self) -> int:
        return self.total - self.done if self.total is not None else 0


@contextmanager
def tracked_run(
    report: IndexReport, *, total: int | None, desc: str, show_progress: bool | None, errors: Errors,
) -> Iterator[Progress]:
    """How every run ends: Ctrl-C sets ``report.interrupted``, a failing store raises
    :class:`StoreFailedError` with the report (``raise``: both propagate as they are); the
    bar is closed and ``report.seconds`` set whatever happens."""
    progress = Progress(report, total, desc, show_progress)
    try:
        yield progress
    except KeyboardInterrupt:
        if errors == "raise":
            raise
        report.interrupted, report.not_reached = True, progress.not_reached
    except StoreError as exc:
        if errors == "raise":
            raise
        report.not_reached = progress.not_reached
        raise StoreFailedError(str(exc), report) from exc
    finally:
        progress.bar.close()
        report.seconds = time.perf_counter() - progress.started


def write_documents(
    store: SentenceStore,
    documents: Iterable[SourceDocument | FileOutcome],
    encoder: Callable[[], DocumentEncoder],
    *,
    state: StoreState | None = None,
    skip_unchanged: bool = True,
    errors: Errors = "report",
    total: int | None = None,
    desc: str = "writing",
    show_progress: bool | None = False,
    group_tokens: int = GROUP_TOKENS,
) -> IndexReport:
    """Write ``documents`` into ``store`` (outcomes given instead of a document are reported as
    they are); returns the report.

    ``encoder`` is called once, when the first document needs encoding: a run over unchanged
    documents never loads a model. ``state``: the manifest snapshot to decide skips by (read
    from ``store`` when ``None``). ``total``: documents expected, for the bar and
    ``report.not_reached``. See the module docstring for what ``errors`` changes.

    Reading documents (a file's extraction included), the skip decisions and, for an
    encoder with ``prepare``, the host half of encoding run on a producer thread one group
    ahead (``Prefetch``: order kept, an exception raised here at the item where it
    happened); the encoder is loaded here (:class:`EncoderLoader`), and groups are encoded
    here, or after the first on a thread of their own for an encoder with ``overlap_store``
    (:func:`encoded_groups`); every store call stays on the calling thread. Each group is
    stored with the manifest's protocol run once for it (:func:`write_group`): for short
    documents the protocol's calls, not the sentences, are most of what storing costs.
    """
    state = state if state is not None else StoreState.read(store)
    load = EncoderLoader(encoder)
    report = IndexReport()
    with tracked_run(report, total=total, desc=desc, show_progress=show_progress, errors=errors) as progress:
        planned = (d if isinstance(d, FileOutcome) else plan(d, state, skip_unchanged=skip_unchanged)
                   for d in documents)
        # exits in reverse order: the loader releases a producer waiting for the model, then
        # the encoding stage and the producer stop
        with (
            Prefetch(prepared_groups(in_groups(planned, group_tokens), load), depth=1) as prepared,
            closing(encoded_groups(prepared, load, errors)) as items,
            closing(load),
        ):
            for item in items:
                if isinstance(item, FileOutcome):
                    if item.status == "unchanged":
                        finish_unchanged(store, state, item.doc_id)
                    progress.add(item)
                    continue
                group, encoded = item
                for outcome in write_group(store, group, encoded, load(), errors):
                    progress.add(outcome)
    return report


__all__ = [
    "GROUP_DOCS",
    "GROUP_TOKENS",
    "DocumentEncoder",
    "Encoded",
    "EncoderLoader",
    "Errors",
    "Pending",
    "StoreState",
    "StoredDocument",
    "count_tokens",
    "encode_group",
    "encoded_groups",
    "encoded_tokens",
    "encoder_batch_size",
    "finish_unchanged",
    "in_groups",
    "indexed_elsewhere",
    "is_unchanged",
    "plan",
    "prepared_groups",
    "prune_missing",
    "store_document",
    "store_documents",
    "store_outcome",
    "store_outcomes",
    "stored_form",
    "tracked_run",
    "write_documents",
    "write_encoded",
    "write_group",
]
