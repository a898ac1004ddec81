"""Plain record types that flow through the whole pipeline.

segment -> encode -> store -> retrieve -> expand all speak in these three types, so an
adapter (LlamaIndex, LangChain, CLI) only translates them to and from its framework's
objects and never re-derives offsets or ids on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np


@dataclass(frozen=True, slots=True)
class Sentence:
    """One sentence of a document, located by character offsets.

    ``text == document[start:end]`` always holds. ``space_before`` is the (whitespace-only)
    text between the previous sentence's ``end`` and this ``start``; storing it lets any
    consumer rebuild the exact original slice of a run of sentences from the sentences alone,
    which is how passages are assembled from a vector store that keeps no full documents.

    ``page`` is the 1-based page the sentence starts on (PDF, or pages joined from a
    framework loader; ``None`` for a document without pages); ``heading`` the title of the
    nearest heading at or before it (HTML, Markdown, Word; ``None`` before the first).
    """

    index: int
    start: int
    end: int
    text: str
    doc_id: str | None = None
    space_before: str = ""
    page: int | None = None
    heading: str | None = None

    def with_doc_id(self, doc_id: str | None) -> Sentence:
        return replace(self, doc_id=doc_id)


@dataclass(slots=True)
class EncodedDocument:
    """A document's sentences and one L2-normalised float32 vector per sentence.

    ``tokens``: the text tokens the encoder read for it (its sentences as tokenised, no
    special tokens), which a caller reporting tokens/s can take instead of tokenising the
    document again; ``None`` when not known.
    """

    text: str
    sentences: list[Sentence]
    embeddings: np.ndarray  # float32 [n_sentences, dim]
    doc_id: str | None = None
    tokens: int | None = None

    def __len__(self) -> int:
        return len(self.sentences)


@dataclass(slots=True)
class Hit:
    """A sentence returned by a vector search, with its score and stored metadata."""

    sentence: Sentence
    score: float
    metadata: dict[str, Any] = field(default_factory=dict)


#: Hit metadata key for the cosine similarity of the query and the hit sentence's stored
#: (in-context) vector, set wherever it is known (dense reads, the dense half of a fused read,
#: re-scoring); the leading underscore keeps it out of user metadata and prompts.
DENSE_SCORE = "_dense_score"


@dataclass(slots=True)
class Passage:
    """A contiguous run of sentences of one document returned to the user.

    ``text`` is the exact slice ``document[start:end]``; ``score`` is the best hit's score;
    ``hit_indices`` are the sentence indices that the search actually hit (the information
    boundaries), ``first_index``/``last_index`` the sentence range after expansion.
    ``pages``: every page the passage touches, first to last (``[11, 12]`` across a page
    break; empty for a document without pages); ``heading``: the heading its first
    sentence is under (``None``: none).

    ``score`` ranks the passages of one search (a cosine in dense mode, BM25 in lexical mode,
    the fused score in hybrid mode: each half scaled per query, so a linear fusion's scores
    lie in [0, 1], its top passage scoring 1 when one sentence leads both halves). ``cosine`` is the cosine similarity of the query and the best
    hit sentence's stored vector, the same quantity in every mode, comparable across queries
    (``None`` where no hit had one, e.g. lexical mode).
    """

    doc_id: str
    start: int
    end: int
    first_index: int
    last_index: int
    hit_indices: list[int]
    score: float
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    pages: list[int] = field(default_factory=list)
    heading: str | None = None
    cosine: float | None = None

    @property
    def id(self) -> str:
        """``doc_id:first-last``: names the sentence range, so the same span retrieved twice
        is the same object in every framework (node id, ``Document.id``)."""
        return f"{self.doc_id}:{self.first_index}-{self.last_index}"

    def span_metadata(self) -> dict[str, Any]:
        """Flat, store-safe metadata describing the span (used by every adapter)."""
        return {
            "doc_id": self.doc_id,
            "start": self.start,
            "end": self.end,
            "first_sentence": self.first_index,
            "last_sentence": self.last_index,
            "hit_sentences": ",".join(str(i) for i in self.hit_indices),
            "score": float(self.score),
            **({"cosine": float(self.cosine)} if self.cosine is not None else {}),
            **self.position_metadata(),
        }

    def position_metadata(self) -> dict[str, Any]:
        """Where the passage is, for people: ``pages`` (``"11,12"``: flat, so every store and
        framework keeps it) and ``heading``, each only when the document has it."""
        md: dict[str, Any] = {}
        if self.pages:
            md["pages"] = ",".join(str(p) for p in self.pages)
        if self.heading:
            md["heading"] = self.heading
        return md


def passage_pages(sentences: list[Sentence]) -> list[int]:
    """The pages a run of sentences spans, first to last (a page with no sentence of its own
    in between, a figure, is still part of it); empty when none has a page."""
    pages = [s.page for s in sentences if s.page is not None]
    return list(range(min(pages), max(pages) + 1)) if pages else []
