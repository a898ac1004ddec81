"""Encoding within a write: how a run encodes, and the stages that keep the device busy.

Why its own module: a run encodes groups of documents with whatever the caller brings
(:class:`DocumentEncoder`: a ``LandmarkEncoder``, or a framework's own encoding), loads
that encoder once and only when a document needs it (:class:`EncoderLoader`), prepares the
next group on a producer thread while the current one encodes (:func:`prepared_groups`),
and on an accelerator encodes while the previous group is stored (:func:`encoded_groups`).
A document the encoder fails on costs only itself (:func:`encode_group`). None of this
touches the store: every store call stays with the run (``ingest.write``).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from landmark_rag.encode.runtime.prefetch import Prefetch
from landmark_rag.ingest.planning import Errors, Pending
from landmark_rag.ingest.report import FileOutcome
from landmark_rag.types import EncodedDocument

if TYPE_CHECKING:  # types only: writing never imports the model stack
    from landmark_rag.encode.protocols import SentenceEncoder


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
    producer's stage of :func:`~landmark_rag.ingest.write.write_documents`."""
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
    middle stage of :func:`~landmark_rag.ingest.write.write_documents`, between preparing and storing.

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
