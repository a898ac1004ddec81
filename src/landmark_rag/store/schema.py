"""How a store is laid out in Chroma: sentence ids, flat metadata, manifest and collection keys.

One schema for every writer (core store, LlamaIndex nodes, LangChain documents, CLI), so a
collection written by one can be read and expanded by another. Every key and value a store
writes is named here once; existing stores depend on them, so they never change.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from landmark_rag.types import Sentence

DOC_ID = "doc_id"
INDEX = "sentence_index"
START = "start"
END = "end"
SPACE_BEFORE = "space_before"
DOC_HASH = "doc_hash"
#: Which write of its document a sentence belongs to (see the store's replace protocol);
#: absent on sentences written by other tools or by versions before the protocol had it.
VERSION = "doc_version"
#: The model that embedded the sentence, on records written without the store (a LlamaIndex
#: ``ChromaVectorStore``): see ``landmark_rag.store.identity``.
MODEL = "landmark_model"
MODEL_ID = "landmark_model_id"
#: Where a sentence is, for people: the 1-based page it starts on, and the title of the
#: nearest heading before it. Written only for documents that have pages or headings, so
#: stores written before they existed read exactly as before (both ``None``). Named apart
#: from loaders' own ``page`` (0-based in LangChain's PDF loaders), which stays user metadata.
PAGE = "sentence_page"
HEADING = "sentence_heading"
SCHEMA_KEYS = (DOC_ID, INDEX, START, END, SPACE_BEFORE, DOC_HASH)
#: Every key the store itself may put on a sentence (``SCHEMA_KEYS`` are always there).
STORE_KEYS = (*SCHEMA_KEYS, PAGE, HEADING, VERSION, MODEL, MODEL_ID)

#: Keys of a manifest record that the store writes next to the user's metadata.
STATE = "state"
N_SENTENCES = "n_sentences"
#: Set while a write of the document may have left sentences of another version behind.
DIRTY = "dirty"
MANIFEST_KEYS = (DOC_HASH, STATE, N_SENTENCES, VERSION, DIRTY)
#: Values of ``STATE``: a document being written for the first time is hidden; a complete
#: one is visible in the version the record names.
WRITING = "writing"
COMPLETE = "complete"

#: Prefix of the keys landmark-rag puts on a sentence collection's metadata (the model
#: identity, ``landmark_rag:model_name`` ...) and on its manifest's (``GENERATION_KEY``).
IDENTITY_PREFIX = "landmark_rag:"
#: On the manifest collection: a token that moves whenever a document is completed or deleted.
GENERATION_KEY = IDENTITY_PREFIX + "generation"
#: On the sentence collection: where the model was loaded from, and its vector dimension
#: (informative, never compared: see ``store/identity.py``).
SOURCE_KEY = "landmark_rag_cli:model_source"
DIM_KEY = "landmark_rag_cli:dim"


def content_hash(text: str) -> str:
    """Hash identifying a document's content (``DOC_HASH``; used to skip unchanged documents)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def sentence_id(doc_id: str, index: int, version: str | None = None) -> str:
    """Id of a sentence: ``doc_id:index``, or ``doc_id:index@version`` for a versioned write.

    The core store writes each new version of a document under new ids next to the old
    ones (the old version stays readable until the new one is complete); frameworks that
    write nodes themselves (LlamaIndex) use the plain deterministic form.
    """
    return f"{doc_id}:{index}" if not version else f"{doc_id}:{index}@{version}"


def sentence_key(record_id: str) -> str:
    """A record id without its version: ``doc_id:index@version`` -> ``doc_id:index``.

    The key names a sentence whatever write stored it (hybrid search fuses candidates on it);
    ids of another form (records written by other tools) are returned unchanged.
    """
    head, sep, tail = record_id.rpartition(":")
    index, at, _ = tail.partition("@")
    return f"{head}:{index}" if sep and at and index.isdigit() else record_id


def parse_sentence_key(key: str) -> tuple[str, int] | None:
    """``(doc_id, index)`` from a key ``doc_id:index`` (or a versioned id); ``None`` for other ids."""
    head, sep, tail = key.rpartition(":")
    index = tail.partition("@")[0]
    return (head, int(index)) if sep and head and index.isdigit() else None


def flat_metadata(metadata: dict[str, Any] | None) -> dict[str, str | int | float | bool]:
    """Make user metadata store-safe: scalars kept, ``None`` dropped, the rest JSON text.

    Chroma (and so LlamaIndex's and LangChain's Chroma wrappers) accepts only flat
    str/int/float/bool values; silently dropping a user's value would lose data.
    """
    out: dict[str, str | int | float | bool] = {}
    for key, value in (metadata or {}).items():
        if value is None:
            continue
        if isinstance(value, str | int | float | bool):
            out[str(key)] = value
        else:
            out[str(key)] = json.dumps(value, default=str, sort_keys=True)
    return out


def sentence_metadata(
    sentence: Sentence,
    doc_hash: str | None = None,
    extra: dict[str, Any] | None = None,
    version: str | None = None,
) -> dict[str, str | int | float | bool]:
    """Metadata stored with one sentence (user metadata first; schema keys win)."""
    if sentence.doc_id is None:
        raise ValueError("a stored sentence needs a doc_id")
    md = flat_metadata(extra)
    md.update({
        DOC_ID: sentence.doc_id,
        INDEX: sentence.index,
        START: sentence.start,
        END: sentence.end,
        SPACE_BEFORE: sentence.space_before,
    })
    if sentence.page is not None:
        md[PAGE] = sentence.page
    if sentence.heading is not None:
        md[HEADING] = sentence.heading
    if doc_hash is not None:
        md[DOC_HASH] = doc_hash
    if version:
        md[VERSION] = version
    return md


def sentence_from_metadata(text: str, metadata: dict[str, Any]) -> Sentence:
    """Inverse of :func:`sentence_metadata`."""
    try:
        return Sentence(
            index=int(metadata[INDEX]),
            start=int(metadata[START]),
            end=int(metadata[END]),
            text=text,
            doc_id=str(metadata[DOC_ID]),
            space_before=str(metadata.get(SPACE_BEFORE, "")),
            page=int(metadata[PAGE]) if metadata.get(PAGE) is not None else None,
            heading=str(metadata[HEADING]) if metadata.get(HEADING) is not None else None,
        )
    except KeyError as exc:
        raise ValueError(
            f"stored record lacks landmark-rag sentence metadata ({exc.args[0]!r}); "
            "was this collection written by landmark-rag?"
        ) from exc


def chroma_where(where: dict[str, Any] | None) -> dict[str, Any] | None:
    """A filter of several plain keys (``{"city": "Oslo", "year": 2020}``, which Chroma refuses:
    one operator per filter) as their conjunction, ``{"$and": [{"city": "Oslo"}, {"year":
    2020}]}``, the meaning anyone writing it has in mind; any other filter as given."""
    if not where or len(where) < 2 or any(str(k).startswith("$") for k in where):
        return where
    return {"$and": [{k: v} for k, v in where.items()]}


def documents_named(where: dict[str, Any] | None) -> tuple[list[str], dict[str, Any] | None]:
    """The documents a filter limits sentences to through ``doc_id`` (``{"doc_id": "a"}``,
    ``{"doc_id": {"$eq": "a"}}``, ``{"doc_id": {"$in": [...]}}``, or such a part of an ``$and``),
    sorted, and the rest of the filter; ``([], where)`` when it names none that way."""
    if not where:
        return [], where
    parts = list(where["$and"]) if set(where) == {"$and"} and isinstance(where["$and"], list) else [where]
    named: set[str] | None = None
    rest: list[Any] = []
    for part in parts:
        docs = _doc_condition(part)
        if docs is None:
            rest.append(part)
        else:
            named = docs if named is None else named & docs
    if named is None:
        return [], where
    if not named:  # two conditions no document meets both of: Chroma's filter says so
        return [], where
    return sorted(named), None if not rest else rest[0] if len(rest) == 1 else {"$and": rest}


def _doc_condition(part: Any) -> set[str] | None:
    """The documents one filter part allows when it is a ``doc_id`` equality or ``$in`` of strings."""
    if not isinstance(part, Mapping) or set(part) != {DOC_ID}:
        return None
    cond = part[DOC_ID]
    if isinstance(cond, Mapping) and len(cond) == 1:
        ((op, arg),) = cond.items()
        values = [arg] if op == "$eq" else arg if op == "$in" and isinstance(arg, list) else None
    else:
        values = None if isinstance(cond, Mapping) else [cond]
    if not values or not all(isinstance(v, str) for v in values):
        return None
    return set(values)


#: Keys a framework's own vector store writes next to a node's metadata (LlamaIndex).
FRAMEWORK_KEYS = ("document_id", "ref_doc_id")


def reserved_keys(metadata: Mapping[str, Any] | None) -> list[str]:
    """The keys of user ``metadata`` the store cannot keep: its own (``STORE_KEYS``: the
    sentence's ``start``, ``end``, ``doc_id``, ...), a framework's, and ``_``-prefixed ones
    (kept out of prompts). :func:`sentence_metadata` writes the store's value over them and
    :func:`user_metadata` leaves them out on reading."""
    return sorted(
        str(k) for k in (metadata or {}) if k in STORE_KEYS or k in FRAMEWORK_KEYS or str(k).startswith("_")
    )


def user_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """The part of stored metadata that the user supplied (schema and framework keys removed)."""
    return {
        k: v
        for k, v in metadata.items()
        if k not in STORE_KEYS and not k.startswith("_") and k not in FRAMEWORK_KEYS
    }
