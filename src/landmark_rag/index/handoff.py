"""Handing in-context sentence vectors to a framework that embeds bare strings.

A framework's vector store (LangChain's ``VectorStore.add_documents``, LlamaIndex's
``VectorStoreIndex(nodes, embed_model=...)``) asks its embedding model for one vector per
*text*, without saying which document a text belongs to. A landmark vector, though, is a
sentence encoded in its document, so a splitter that sees the whole document has to compute
it and hand it to the embedding model, which returns it when the store asks for that text.

- :class:`InContextVectors`: vectors waiting for their text, first in first out per text
  (so a sentence that occurs twice, in two documents, gets each document's vector in the
  order the splitter produced them, even when a store embeds in several batches). A vector
  is handed out once and then forgotten, so memory does not grow with what was indexed.
- :class:`RecentSentences`: a bounded memory of the sentence texts a splitter produced, so
  that an embedding model can tell a sentence that is about to be embedded *without* its
  document (and warn) from an ordinary standalone text.

Both are keyed per encoder (:func:`vectors_for`): two embedding objects over the same
cached encoder see the same vectors.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict, deque
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from landmark_rag.encode.protocols import SentenceEncoder


class OutOfContextWarning(UserWarning):
    """Sentences were embedded as bare strings, each without the document around it."""


class InContextVectors:
    """Sentence vectors computed in context, waiting for the store to ask for their text.

    Vectors are queued per text in the order they were put. Putting a document again (the
    same ``doc_id``, e.g. re-split after an edit) first drops the vectors of its earlier
    split that are still waiting, so a store never receives a stale version's vector.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queues: dict[str, deque[tuple[str | None, np.ndarray]]] = {}
        self._texts_of: dict[str, set[str]] = {}

    def put(self, texts: Sequence[str], vectors: Iterable[np.ndarray], doc_ids: Sequence[str | None] | None = None) -> None:
        """Queue ``vectors[i]`` for ``texts[i]`` (of document ``doc_ids[i]``), after any
        already waiting for that text."""
        owners = list(doc_ids) if doc_ids is not None else [None] * len(texts)
        with self._lock:
            for owner in {d for d in owners if d is not None}:
                self._drop(owner)
            for text, vec, doc_id in zip(texts, vectors, owners, strict=True):
                self._queues.setdefault(text, deque()).append((doc_id, np.asarray(vec, dtype=np.float32)))
                if doc_id is not None:
                    self._texts_of.setdefault(doc_id, set()).add(text)

    def _drop(self, doc_id: str) -> None:
        for text in self._texts_of.pop(doc_id, ()):
            queue = self._queues.get(text)
            if queue is None:
                continue
            kept = deque(item for item in queue if item[0] != doc_id)
            if kept:
                self._queues[text] = kept
            else:
                del self._queues[text]

    def take(self, texts: Sequence[str]) -> list[np.ndarray | None]:
        """The waiting vector of every text (``None`` where none waits), each handed out once."""
        out: list[np.ndarray | None] = []
        with self._lock:
            for text in texts:
                queue = self._queues.get(text)
                if not queue:
                    out.append(None)
                    continue
                doc_id, vec = queue.popleft()
                out.append(vec)
                if not queue:
                    del self._queues[text]
                if doc_id is not None and not any(d == doc_id for d, _ in self._queues.get(text, ())):
                    owned = self._texts_of.get(doc_id)
                    if owned is not None:
                        owned.discard(text)
                        if not owned:
                            del self._texts_of[doc_id]
        return out

    def clear(self) -> None:
        """Forget every waiting vector."""
        with self._lock:
            self._queues.clear()
            self._texts_of.clear()

    def __len__(self) -> int:
        with self._lock:
            return sum(len(q) for q in self._queues.values())


class RecentSentences:
    """The last ``capacity`` sentence texts a splitter produced (hashes only: bounded memory)."""

    def __init__(self, capacity: int = 200_000) -> None:
        self.capacity = int(capacity)
        self._lock = threading.Lock()
        self._seen: OrderedDict[int, None] = OrderedDict()

    def add(self, texts: Iterable[str]) -> None:
        with self._lock:
            for text in texts:
                key = hash(text)
                self._seen[key] = None
                self._seen.move_to_end(key)
            while len(self._seen) > self.capacity:
                self._seen.popitem(last=False)

    def count(self, texts: Iterable[str]) -> int:
        """How many of ``texts`` are sentences a splitter produced recently."""
        with self._lock:
            return sum(hash(t) in self._seen for t in texts)


_by_encoder: weakref.WeakKeyDictionary[SentenceEncoder, InContextVectors] = weakref.WeakKeyDictionary()
_by_encoder_lock = threading.Lock()


def vectors_for(encoder: SentenceEncoder) -> InContextVectors:
    """The waiting vectors of one encoder (created on first use, dropped with the encoder)."""
    with _by_encoder_lock:
        found = _by_encoder.get(encoder)
        if found is None:
            found = _by_encoder[encoder] = InContextVectors()
        return found


#: sentences produced by the framework splitters of this process (both adapters)
recent_sentences = RecentSentences()

__all__ = ["InContextVectors", "OutOfContextWarning", "RecentSentences", "recent_sentences", "vectors_for"]
