"""Where boundary expansion reads neighbouring sentences from, in a LlamaIndex set-up.

Expansion needs the sentences around a hit (and, for the adaptive strategy, their vectors).
A LlamaIndex application keeps them either in the vector store (Chroma stores the node text
and metadata with every vector, so no docstore is needed) or in a docstore (in-memory
``VectorStoreIndex``). Both are adapted to the core ``SentenceSource`` protocol here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from landmark_rag.expand import AnySentenceSource
from landmark_rag.llama_index.convert import is_sentence_node, node_to_sentence
from landmark_rag.store import ChromaSentenceStore, sentence_id
from landmark_rag.types import Sentence


class DocstoreSentenceSource:
    """A ``SentenceSource`` over a LlamaIndex docstore holding sentence nodes.

    Sentences are looked up by their deterministic ids (``doc_id:index``). Docstores
    usually hold nodes *without* embeddings (``VectorStoreIndex`` strips them), so vectors
    come from the node when present, else from ``embeddings`` — any object with
    ``get(node_id) -> list[float]``, such as LlamaIndex's ``SimpleVectorStore``.
    """

    def __init__(self, docstore: Any, embeddings: Any = None) -> None:
        self.docstore = docstore
        self.embeddings = embeddings

    def _nodes(self, doc_id: str, indices: Iterable[int]) -> dict[int, Any]:
        out = {}
        for i in sorted({int(i) for i in indices if int(i) >= 0}):
            node = self.docstore.get_node(sentence_id(doc_id, i), raise_error=False)
            if node is not None and is_sentence_node(node):
                out[i] = node
        return out

    def get_sentences(self, doc_id: str, indices: Iterable[int]) -> dict[int, Sentence]:
        return {i: node_to_sentence(n) for i, n in self._nodes(doc_id, indices).items()}

    def get_embeddings(self, doc_id: str, indices: Iterable[int]) -> dict[int, np.ndarray]:
        out = {}
        for i, node in self._nodes(doc_id, indices).items():
            vec = node.embedding
            if vec is None and self.embeddings is not None:
                try:
                    vec = self.embeddings.get(node.node_id)
                except (KeyError, ValueError):
                    vec = None
            if vec is not None:
                out[i] = np.asarray(vec, dtype=np.float32)
        return out


def chroma_collection(vector_store: Any) -> Any | None:
    """The chromadb collection behind a LlamaIndex ``ChromaVectorStore`` (else ``None``)."""
    collection = getattr(vector_store, "client", None)
    if collection is not None and all(hasattr(collection, a) for a in ("get", "query", "upsert", "count")):
        return collection
    return None


def sentence_source(vector_store: Any = None, docstore: Any = None) -> AnySentenceSource:
    """Pick the source: a docstore when given, else the Chroma collection of ``vector_store``."""
    if docstore is not None:
        return DocstoreSentenceSource(docstore, embeddings=vector_store)
    if vector_store is None:
        raise ValueError(
            "boundary expansion needs a vector_store (ChromaVectorStore) or a docstore to read neighbours from"
        )
    collection = chroma_collection(vector_store)
    if collection is None:
        raise TypeError(
            f"cannot read sentences from {type(vector_store).__name__}: pass a ChromaVectorStore, "
            "or the docstore that holds the sentence nodes (docstore=index.docstore)"
        )
    return ChromaSentenceStore.for_collection(collection)
