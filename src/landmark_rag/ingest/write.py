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
"""

from __future__ import annotations

import functools
import threading
import time
import warnings
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeGuard

from tqdm.auto import tqdm

from landmark_rag.encode.runtime.prefetch import Prefetch
from landmark_rag.extract import BadFileError
from landmark_rag.ingest.discover import FileSet, SkippedPath
from landmark_rag.ingest.report import FileOutcome, IndexReport, Status, StoreFailedError
from landmark_rag.ingest.sources import FILE_ROOT, FILE_SOURCE, SourceDocument
from landmark_rag.progress import bar_options
from landmark_rag.store import StoreError, flat_metadata
from landmark_rag.store.manifest import is_complete, record_metadata, written_before
from landmark_rag.store.protocols import GroupWriter
from landmark_rag.store.schema import DIRTY, DOC_HASH, reserved_keys
from landmark_rag.types import EncodedDocument

if TYPE_CHECKING:  # types only: writing never imports the model stack
    from landmark_rag.encode.protocols import SentenceEncoder
    from landmark_rag.store.protocols import SentenceStore

#: Tokens encoded together at most: enough to fill encoder batches with short documents,
#: small enough that memory stays bounded and progress and interruption stay fine-grained.
GROUP_TOKENS = 16_384
#: Documents encoded together at most.
GROUP_DOCS = 32
#: Characters per token assumed when a group's budget is checked before tokenizing.
CHARS_PER_TOKEN = 4

#: ``report``: a document's own failure is a ``skipped`` outcome, Ctrl-C ends the run with
#: a report, a store failure raises :class:`StoreFailedError` (folders, Ray); ``raise``:
#: every failure propagates as raised (the Python API, which validated its input first).
Errors = Literal["report", "raise"]


# ---------------------------------------------------------------------------- encoding
def encoder_batch_size(encoder: SentenceEncoder, batch_size: int | None = None) -> int:
    """Encoder inputs per forward pass for documents: ``batch_size``, else 64 for ``sentence``
    pooling (its inputs are single sentences, far shorter than windows), else 16 windows."""
    if batch_size is not None:
        return batch_size
    return 64 if encoder.config.pooling == "sentence" else 16


def count_tokens(encoder: SentenceEncoder, text: str) -> int:
    """Tokens of a whole document (for tokens/s), without the tokenizer's too-long warning."""
    tokenizer = getattr(encoder, "tokenizer", None)
    if tokenizer is None:
        return int(encoder.count_tokens(text))
    return len(tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])


def encoded_tokens(encoded: EncodedDocument, text: str, encoder: DocumentEncoder) -> int:
    """A document's tokens for tokens/s: what the encoder counted while encoding it
    (``EncodedDocument.tokens``), else ``encoder.count_tokens`` of its text, else 0. Taking
    the encoder's count spares tokenising every document a second time."""
    if encoded.tokens is not None:
        return int(encoded.tokens)
    return encoder.count_tokens(text) if encoder.count_tokens is not None else 0


@dataclass(frozen=True)
class DocumentEncoder:
    """How a run encodes: ``encode(texts, doc_ids)`` in context, and ``count_tokens`` for its
    tokens/s (``None``: not counted).

    ``prepare`` and ``run`` (both or neither) split ``encode`` into its host half
    (segmentation, tokenisation, padding) and its device half: with them, a run prepares the
    next group of documents on a producer thread while the current one is encoded, so the
    device does not wait for the tokenizer between groups. ``run(prepare(t, i))`` must equal
    ``encode(t, i)``. ``overlap_store``: encode on a thread of its own while the run stores
    the group before (for an encoder on an accelerator, whose host cores are free).
    """

    encode: Callable[[list[str], list[str]], Sequence[EncodedDocument]]
    count_tokens: Callable[[str], int] | None = None
    prepare: Callable[[list[str], list[str]], object] | None = None
    run: Callable[[Any], Sequence[EncodedDocument]] | None = None
    overlap_store: bool = False

    def __post_init__(self) -> None:
        if (self.prepare is None) != (self.run is None):
            raise ValueError("DocumentEncoder: give both prepare and run, or neither")

    @classmethod
    def of(cls, encoder: SentenceEncoder, batch_size: int | None = None) -> DocumentEncoder:
        """A ``LandmarkEncoder``'s ``encode_documents`` with :func:`encoder_batch_size` (and its
        ``prepare_documents`` / ``encode_prepared`` halves where it has them)."""
        from landmark_rag.encode.protocols import PreparingEncoder  # no model stack: protocols only

        size = encoder_batch_size(encoder, batch_size)

        def encode(texts: list[str], doc_ids: list[str]) -> Sequence[EncodedDocument]:
            return encoder.encode_documents(texts, doc_ids=doc_ids, batch_size=size)

        counter = functools.partial(count_tokens, encoder)
        device = getattr(getattr(encoder, "device", None), "type", "cpu")
        if not isinstance(encoder, PreparingEncoder):
            return cls(encode, counter, overlap_store=device != "cpu")
        preparing = encoder
        # sized once, before any forward: measured on the producer thread during the previous
        # group's forward, free memory would be that forward's low point (smaller, varying batches)
        auto = getattr(encoder, "auto_batch_tokens", None)
        batch_tokens = auto() if device == "cuda" and callable(auto) else None

        def prepare(texts: list[str], doc_ids: list[str]) -> object:
            return preparing.prepare_documents(texts, doc_ids=doc_ids, batch_size=size, batch_tokens=batch_tokens)

        return cls(encode, counter, prepare, preparing.encode_prepared, overlap_store=device != "cpu")


# ---------------------------------------------------------------------------- skip and finish
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


# ---------------------------------------------------------------------------- group and encode
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


def encode_group(
    group: Sequence[Pending], encoder: DocumentEncoder, errors: Errors, prepared: object = None
) -> list[EncodedDocument | Exception]:
    """The group encoded together (from ``prepared``, the result of ``encoder.prepare`` for
    it, when given); if that fails, one by one, so that a document the encoder fails on costs
    only itself (its entry is the exception). ``raise``: a failure propagates."""
    texts, ids = [p.doc.text for p in group], [p.doc.doc_id for p in group]

    def together() -> list[EncodedDocument | Exception]:
        if isinstance(prepared, _PrepareFailed):
            raise prepared.error
        if prepared is not None and encoder.run is not None:
            return list(encoder.run(prepared))
        return list(encoder.encode(texts, ids))

    if errors == "raise":
        return together()
    try:
        return together()
    except Exception:  # noqa: BLE001, S110 - isolate the failing document below
        pass
    out: list[EncodedDocument | Exception] = []
    for text, doc_id in zip(texts, ids, strict=True):
        try:
            out.extend(encoder.encode([text], [doc_id]))
        except Exception as exc:  # noqa: BLE001 - that document's outcome
            out.append(exc)
    return out


@dataclass(frozen=True)
class _PrepareFailed:
    """``encoder.prepare`` raised for a group: :func:`encode_group` raises it (``raise``) or
    finds the failing document by encoding the group one by one."""

    error: Exception


class EncoderLoader:
    """A run's encoder, loaded once, on the calling thread.

    Why on the calling thread: loading may read the store (a lazily opened index checks the
    model against the store's identity), and every store call of a run stays on that thread.
    The producer thread, which prepares groups with the encoder, waits for that load
    (:meth:`wait`) instead of loading itself; :meth:`close` releases it when the run ends first.
    """

    def __init__(self, factory: Callable[[], DocumentEncoder]) -> None:
        self._factory = factory
        self._encoder: DocumentEncoder | None = None
        self._ready = threading.Event()
        self._closed = threading.Event()

    def __call__(self) -> DocumentEncoder:
        """The encoder, loaded now if it is not yet (the calling thread only)."""
        if self._encoder is None:
            self._encoder = self._factory()
            self._ready.set()
        return self._encoder

    def wait(self) -> DocumentEncoder | None:
        """The encoder once the calling thread has loaded it; ``None`` if the run ended first."""
        while not self._ready.wait(0.05):
            if self._closed.is_set():
                return None
        return self._encoder

    def close(self) -> None:
        self._closed.set()


def prepared_groups(
    items: Iterable[FileOutcome | list[Pending]], loader: EncoderLoader
) -> Iterator[FileOutcome | tuple[list[Pending], object]]:
    """Outcomes as they come, and each group with its prepared form (``None`` where the
    encoder has no ``prepare``, and for the first group, which the calling thread encodes
    while it loads the model; :class:`_PrepareFailed` where ``prepare`` raised): the
    producer's stage of :func:`write_documents`."""
    first = True
    for item in items:
        if isinstance(item, FileOutcome):
            yield item
            continue
        if first:
            first = False
            yield item, None
            continue
        encoder = loader.wait()
        if encoder is None:  # the run ended (the load failed, Ctrl-C, a failing store)
            return
        if encoder.prepare is None:
            yield item, None
            continue
        try:
            prepared = encoder.prepare([p.doc.text for p in item], [p.doc.doc_id for p in item])
        except Exception as exc:  # noqa: BLE001 - the consumer isolates the failing document
            prepared = _PrepareFailed(exc)
        yield item, prepared


Encoded = tuple[list[Pending], list[EncodedDocument | Exception]]


def encoded_groups(
    items: Iterable[FileOutcome | tuple[list[Pending], object]], loader: EncoderLoader, errors: Errors
) -> Generator[FileOutcome | Encoded, None, None]:
    """Outcomes as they come, and each prepared group encoded (:func:`encode_group`): the
    middle stage of :func:`write_documents`, between preparing and storing.

    The first group is encoded here, which loads the encoder on the calling thread. From
    then on, where the encoder says ``overlap_store`` (it runs on an accelerator), the groups
    are encoded on a thread of their own while the caller stores the group before, so that the
    device need not wait for the store's writes; on a CPU the forward already uses every core
    (on 2 cores a third busy thread gained nothing: docs/benchmarks.md), so groups are
    encoded here. Close the generator when leaving early (``contextlib.closing``): that stops
    the thread."""
    it = iter(items)
    for item in it:
        if isinstance(item, FileOutcome):
            yield item
            continue
        group, prepared = item
        encoder = loader()
        encoded = encode_group(group, encoder, errors, prepared)
        rest = _encode_each(it, encoder, errors)
        if not encoder.overlap_store:
            yield group, encoded
            yield from rest
            return
        with Prefetch(rest, depth=1, name="landmark-encode") as ahead:
            yield group, encoded  # stored while the next groups encode
            yield from ahead
        return


def _encode_each(
    items: Iterable[FileOutcome | tuple[list[Pending], object]], encoder: DocumentEncoder, errors: Errors
) -> Iterator[FileOutcome | Encoded]:
    for item in items:
        if isinstance(item, FileOutcome):
            yield item
        else:
            yield item[0], encode_group(item[0], encoder, errors, item[1])


# ---------------------------------------------------------------------------- write
@dataclass(frozen=True)
class StoredDocument:
    """What the store writes for one document: its sentences with their vectors, the
    metadata stored with each of them, and its content hash."""

    encoded: EncodedDocument
    metadata: dict[str, Any]
    doc_hash: str


def stored_form(doc: SourceDocument, encoded: EncodedDocument) -> StoredDocument:
    """What is stored for an encoded document: the one place a source document's own
    information (its metadata, and each sentence's page and heading) is attached to its
    sentences."""
    reserved = reserved_keys(doc.metadata)
    if reserved:  # the store's own value wins on these; say so rather than lose them silently
        warnings.warn(
            f"document {doc.doc_id!r}: metadata keys {reserved} are the store's own (a sentence's span, "
            "ids, versions) or hidden ('_' prefix); their values are not kept. Rename them (e.g. "
            "'published_start') to keep them searchable with where=.",
            UserWarning,
            stacklevel=2,
        )
    if doc.extracted is not None and (doc.extracted.pages or doc.extracted.headings):
        sentences = doc.extracted.locate(encoded.sentences)
        encoded = EncodedDocument(encoded.text, sentences, encoded.embeddings, encoded.doc_id, encoded.tokens)
    return StoredDocument(encoded, dict(doc.metadata), doc.doc_hash)


def store_document(store: SentenceStore, stored: StoredDocument) -> int:
    """Write one document through the store's manifest protocol; returns its sentences."""
    return store.add_document(stored.encoded, metadata=stored.metadata, doc_hash=stored.doc_hash)


def store_documents(
    store: SentenceStore, stored: Sequence[StoredDocument], on_committed: Callable[[int], None] | None = None
) -> list[int]:
    """Write documents through the store's manifest protocol, run once for the group where the
    store can (:class:`~landmark_rag.store.protocols.GroupWriter`), else once per document;
    returns each one's sentences. ``on_committed(n)``: the first ``n`` are stored."""
    if isinstance(store, GroupWriter):
        return list(store.add_documents([s.encoded for s in stored], metadatas=[s.metadata for s in stored],
                                        doc_hashes=[s.doc_hash for s in stored], on_committed=on_committed))
    out = []
    for n, s in enumerate(stored, 1):
        out.append(store_document(store, s))
        if on_committed is not None:
            on_committed(n)
    return out


def store_outcome(store: SentenceStore, stored: StoredDocument, done: FileOutcome, errors: Errors = "report") -> FileOutcome:
    """Write ``stored``: ``done`` when it was written, else (a document the store refuses) a
    ``skipped`` outcome. A failure of the store itself raises :class:`StoreError`."""
    try:
        store_document(store, stored)
    except StoreError:
        raise  # the store failed, not this document: the run stops, the previous version stays
    except Exception as exc:  # reported, the run goes on
        if errors == "raise":
            raise
        return FileOutcome(done.doc_id, done.source, "skipped", f"failed to store: {type(exc).__name__}: {exc}")
    return done


def store_outcomes(
    store: SentenceStore, batch: Sequence[tuple[StoredDocument, FileOutcome]], errors: Errors = "report"
) -> Iterator[FileOutcome]:
    """Write a group of documents (:func:`store_documents`, the protocol once for the group) and
    yield each one's outcome, in order: ``done`` when it was written, as :func:`store_outcome`.

    The outcomes are those of writing the documents one by one: a failure of the store raises
    :class:`StoreError` after yielding the documents it had committed (none, when the group
    failed before its commit); any other failure, which is one document's (the store refused
    it before writing anything), makes the group be written one by one, so that document costs
    only itself. A store that cannot write groups is written one by one from the start.
    """
    if not batch:
        return
    if not isinstance(store, GroupWriter):
        yield from _one_by_one(store, batch, errors)
        return
    committed = 0

    def note(n: int) -> None:
        nonlocal committed
        committed = n

    try:
        store_documents(store, [stored for stored, _ in batch], on_committed=note)
    except StoreError as exc:
        # the store failed, not a document: the run stops; what was committed is reported
        yield from (done for _, done in batch[: max(committed, written_before(exc))])
        raise
    except Exception:  # a document the store refuses: found by writing one by one
        if committed:  # not a refused document: the failure came after a commit
            yield from (done for _, done in batch[:committed])
            raise
        yield from _one_by_one(store, batch, errors)
        return
    except BaseException:
        # Ctrl-C: the documents whose commit went through are written, and counted so
        yield from (done for _, done in batch[:committed])
        raise
    yield from (done for _, done in batch)


def _one_by_one(
    store: SentenceStore, batch: Sequence[tuple[StoredDocument, FileOutcome]], errors: Errors
) -> Iterator[FileOutcome]:
    """:func:`store_outcome` for each document in turn; a document whose write the store failed
    only after its commit is written, and is counted before the failure goes on."""
    for stored, done in batch:
        try:
            outcome = store_outcome(store, stored, done, errors)
        except StoreError as exc:
            if written_before(exc):
                yield done
            raise
        yield outcome


def _storable(encoded: EncodedDocument | Exception) -> TypeGuard[EncodedDocument]:
    """Whether an encoded document goes to the store (else :func:`write_encoded` skips it)."""
    return not isinstance(encoded, Exception) and len(encoded) > 0


def write_group(
    store: SentenceStore, group: Sequence[Pending], encoded: Sequence[EncodedDocument | Exception],
    encoder: DocumentEncoder, errors: Errors = "report",
) -> Iterator[FileOutcome]:
    """Store an encoded group and yield each document's outcome in order: the outcomes of
    :func:`write_encoded` for each in turn, with the store's protocol run once for the documents
    written together (:func:`store_outcomes`).

    A document that is skipped (the encoder failed on it, or found no sentence in it) closes
    the documents before it into a write of their own first, so every outcome, and with
    ``errors="raise"`` the point where the run stops, is where one-by-one writing puts it.
    """
    batch: list[tuple[StoredDocument, FileOutcome]] = []
    for pending, one in zip(group, encoded, strict=True):
        if not _storable(one):
            yield from store_outcomes(store, batch, errors)
            batch = []
            yield write_encoded(store, pending, one, encoder, errors)  # skipped (or raised): nothing stored
            continue
        batch.append(_to_store(pending, one, encoder))
    yield from store_outcomes(store, batch, errors)


def _to_store(pending: Pending, encoded: EncodedDocument, encoder: DocumentEncoder) -> tuple[StoredDocument, FileOutcome]:
    """What is stored for an encoded document, and its outcome once it is."""
    doc = pending.doc
    tokens = encoded_tokens(encoded, doc.text, encoder)
    done = FileOutcome(doc.doc_id, doc.name, pending.status, sentences=len(encoded.sentences), tokens=tokens)
    return stored_form(doc, encoded), done


def write_encoded(
    store: SentenceStore, pending: Pending, encoded: EncodedDocument | Exception, encoder: DocumentEncoder,
    errors: Errors = "report",
) -> FileOutcome:
    """Store one encoded document (:func:`stored_form`, :func:`store_outcome`); a document the
    encoder failed on, or found no sentence in, is ``skipped``."""
    doc = pending.doc
    try:
        if isinstance(encoded, Exception):
            raise encoded
        if len(encoded) == 0:
            raise BadFileError("no sentences found")
    except BadFileError as exc:
        if errors == "raise":
            raise
        return FileOutcome(doc.doc_id, doc.name, "skipped", exc.reason)
    except Exception as exc:  # the encoder's failure on this document
        if errors == "raise":
            raise
        return FileOutcome(doc.doc_id, doc.name, "skipped", f"failed to encode: {type(exc).__name__}: {exc}")
    return store_outcome(store, *_to_store(pending, encoded, encoder), errors)


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


__all__ = [
    "GROUP_DOCS",
    "GROUP_TOKENS",
    "DocumentEncoder",
    "EncoderLoader",
    "Pending",
    "StoreState",
    "StoredDocument",
    "count_tokens",
    "encode_group",
    "encoded_groups",
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
