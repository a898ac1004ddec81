"""What the write path writes: :class:`SourceDocument`, and how files, texts and dataset rows become one.

Every entry point turns its input into ``SourceDocument``s here and hands them to
``ingest/write.py``; what cannot be a document becomes a ``skipped`` outcome with a reason
instead (a binary file, a second file claiming a document id, a row without text).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from landmark_rag.extract import BadFileError, Extracted, extract
from landmark_rag.extract.errors import MissingExtraError
from landmark_rag.extract.text import decode_bytes
from landmark_rag.ingest.discover import FileSet, SourceFile
from landmark_rag.ingest.report import FileOutcome
from landmark_rag.store import content_hash

#: Hex digits of the content hash used as the id of a text given without one (64 bits:
#: collisions are not a concern).
HASH_ID_LENGTH = 16
#: Columns of a dataset row that are not stored as metadata (all others are).
ROW_KEYS = ("doc_id", "text")
#: Metadata keys of a document read from a file: its absolute path, and the folder its id is
#: relative to (``prune_missing`` finds deleted files by them).
FILE_SOURCE = "source"
FILE_ROOT = "root"


@dataclass(frozen=True)
class SourceDocument:
    """One document to write: its id, its text, the metadata stored with every sentence.

    ``source`` names it in reports (a path, a dataset's name for it; empty: the id).
    ``extracted``: where its pages and headings are (a PDF, Word, HTML or Markdown file,
    pages joined by :func:`~landmark_rag.ingest.pages.join_pages`); its ``text`` is ``text``.
    """

    doc_id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""
    extracted: Extracted | None = None

    def __post_init__(self) -> None:
        if self.extracted is not None and self.extracted.text != self.text:
            raise ValueError(f"document {self.doc_id!r}: its pages and headings are of another text")

    @cached_property
    def doc_hash(self) -> str:
        """The content hash the manifest records (``schema.DOC_HASH``)."""
        return content_hash(self.text)

    @property
    def name(self) -> str:
        return self.source or self.doc_id


def hash_id(text: str) -> str:
    """The id of a text given without one: adding the same text twice is idempotent."""
    return content_hash(text)[:HASH_ID_LENGTH]


def file_metadata(file: SourceFile) -> dict[str, Any]:
    """Metadata stored with every sentence of a file: where it came from."""
    return {FILE_SOURCE: str(file.path), FILE_ROOT: str(file.root)}


def read_document(path: str | Path) -> str:
    """The document text of one file (:func:`landmark_rag.extract.extract`, which also gives
    its pages and headings); a file that is none is ``BadFileError``."""
    return extract(path).text


def decode_text(value: Any) -> str:
    """A document's text given as a value (a dataset column): ``str`` as is, ``bytes`` by
    :func:`~landmark_rag.extract.text.decode_bytes`; no text, or text without a word, is
    :class:`BadFileError`."""
    if isinstance(value, bytes):
        return decode_bytes(value)
    if value is None:
        raise BadFileError("empty document (no text)")
    if not isinstance(value, str):
        raise BadFileError(f"text is {type(value).__name__}, not str")
    if not value.strip():
        raise BadFileError("empty document (whitespace only)")
    return value


def read_file(file: SourceFile) -> SourceDocument | FileOutcome:
    """A file as a document, or a ``skipped`` outcome saying why it is none."""
    try:
        extracted = extract(file.path)
    except BadFileError as exc:
        no_content = not isinstance(exc, MissingExtraError)  # a missing library says nothing of the file
        return FileOutcome(file.doc_id, str(file.path), "skipped", exc.reason, no_content=no_content)
    # the same string object twice: a pickled document (Ray) carries its text once
    return SourceDocument(file.doc_id, extracted.text, file_metadata(file), str(file.path), extracted)


def file_documents(found: FileSet) -> Iterator[SourceDocument | FileOutcome]:
    """The documents of found files, each read when the run reaches it, after a ``skipped``
    outcome for every entry that is not read (:func:`readable_files`)."""
    files, skipped = readable_files(found)
    yield from skipped
    for f in files:
        yield read_file(f)


def readable_files(found: FileSet) -> tuple[list[SourceFile], list[FileOutcome]]:
    """The files to read, and a ``skipped`` outcome for every entry that is not: entries that
    are no files (a FIFO, a dangling link) and files whose id another file has."""
    files, duplicates = unique_files(found.files)
    unusable = [FileOutcome(str(s.path), str(s.path), "skipped", s.reason) for s in found.skipped]
    return files, unusable + duplicates


def unique_files(files: Sequence[SourceFile]) -> tuple[list[SourceFile], list[FileOutcome]]:
    """Files with distinct document ids, and a ``skipped`` outcome for each later file whose
    id an earlier one has: two roots can hold the same relative path, and indexing both
    under one id would make the second silently replace the first."""
    seen: dict[str, Path] = {}
    unique: list[SourceFile] = []
    duplicates: list[FileOutcome] = []
    for f in files:
        if f.doc_id in seen:
            duplicates.append(FileOutcome(
                f.doc_id, str(f.path), "skipped",
                f"document id {f.doc_id!r} is already used by {seen[f.doc_id]}; index these folders separately",
            ))
        else:
            seen[f.doc_id] = f.path
            unique.append(f)
    return unique, duplicates


def no_text_error(position: int, doc_id: str) -> ValueError:
    """The refusal of a document without a word, raised before anything is written: it would
    store no sentence, so it could never be found, and a caller should hear so at once."""
    return ValueError(
        f"document {position} (id {doc_id!r}) has no text: a document without sentences cannot be "
        "retrieved; drop empty documents before adding (nothing was written)"
    )


def text_documents(
    texts: Sequence[str],
    ids: Sequence[str | None] | None = None,
    metadatas: Sequence[Mapping[str, Any] | None] | None = None,
) -> tuple[list[SourceDocument], list[str]]:
    """Documents for ``LandmarkIndex.add_texts``, all checked before anything is written.

    Returns the distinct documents and the id of every text, in order: ``ids[i]`` when
    given, else :func:`hash_id`. A text without a word, or two different texts under one id,
    raise ``ValueError``; a text repeated under its id counts once (its first metadata).
    """
    if isinstance(texts, str):  # iterating it would store one document per character
        raise TypeError("add_texts() takes a list of texts, not one string: add_texts([text])")
    if isinstance(ids, str):
        raise TypeError("ids= takes a list of ids, one per text, not one string")
    texts = list(texts)
    if ids is not None and len(ids) != len(texts):
        raise ValueError(f"got {len(ids)} ids for {len(texts)} texts")
    if metadatas is not None and len(metadatas) != len(texts):
        raise ValueError(f"got {len(metadatas)} metadatas for {len(texts)} texts")
    # an id of 0 is an id; only None and "" fall back to the content hash
    doc_ids = [
        str(ids[i]) if ids is not None and ids[i] is not None and str(ids[i]) != "" else hash_id(t)
        for i, t in enumerate(texts)
    ]
    documents: dict[str, SourceDocument] = {}
    for i, (doc_id, text) in enumerate(zip(doc_ids, texts, strict=True)):
        if not text.strip():
            raise no_text_error(i, doc_id)
        if doc_id in documents:
            if documents[doc_id].text != text:
                raise ValueError(f"two different texts have the id {doc_id!r}; give each a distinct id")
            continue
        documents[doc_id] = SourceDocument(doc_id, text, dict((metadatas[i] if metadatas is not None else None) or {}))
    return list(documents.values()), doc_ids


def row_document(row: Mapping[str, Any]) -> SourceDocument | FileOutcome:
    """A dataset row as a document: ``doc_id`` and ``text`` (str, or bytes decoded by the file
    rules) with every other non-null column as metadata (``source`` also names it in reports);
    a row without ``text`` is a file (``path``, ``root``) that the driver discovered."""
    doc_id = str(row["doc_id"])
    if "text" not in row:
        return read_file(SourceFile(Path(row["path"]), Path(row["root"]), doc_id))
    metadata = {k: v for k, v in row.items() if k not in ROW_KEYS and v is not None}
    source = str(row.get("source") or doc_id)
    try:
        text = decode_text(row.get("text"))
    except BadFileError as exc:
        return FileOutcome(doc_id, source, "skipped", exc.reason)
    return SourceDocument(doc_id, text, metadata, source)


__all__ = [
    "FILE_ROOT",
    "FILE_SOURCE",
    "HASH_ID_LENGTH",
    "SourceDocument",
    "file_documents",
    "file_metadata",
    "hash_id",
    "read_file",
    "readable_files",
    "row_document",
    "text_documents",
    "unique_files",
]
