"""``ReplaceDocuments``: re-ingesting a document replaces it without a moment of data loss.

LlamaIndex's ``ChromaVectorStore.add`` calls ``collection.add``, and Chroma silently ignores
ids that already exist; sentence ids are deterministic, so re-ingesting an edited document
through a plain ``IngestionPipeline(vector_store=...)`` would keep the old vectors and a
shrunk document its old tail. Deleting the old records first (what this component used to
do, placed first in the pipeline) loses the document whenever the run is killed or fails
before the new vectors are written.

So this component is placed *after* the embedding and writes each document itself through
the store's replace protocol (``landmark_rag.store.manifest``): the new sentences are added
under new ids ``doc_id:index@VERSION`` (through the vector store, so LlamaIndex can read
them back as nodes), the manifest switches to the new version in one write, and only then
are the old sentences deleted. Readers that honour the manifest (the core store, the CLI,
``BoundaryExpansionPostprocessor``) see the previous version until the new one is complete;
a kill or an exception at any point leaves the previous version, and the next run finishes
the job. The pipeline's own ``vector_store.add`` afterwards finds the records already
stored (Chroma ignores existing ids). With ``embed_model`` the collection records the model
on its first write and refuses another model afterwards, like every other writer (without
``embed_model``, the model ``LandmarkEmbedding`` stamped on the nodes is used).

::

    pipeline = IngestionPipeline(
        transformations=[LandmarkNodeParser(), embed, ReplaceDocuments(vector_store, embed_model=embed)],
        vector_store=vector_store,
    )
"""

from __future__ import annotations

import asyncio
import uuid
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from llama_index.core.bridge.pydantic import Field
from llama_index.core.schema import BaseNode, TransformComponent

from landmark_rag.llama_index.convert import duplicate_id_message, is_sentence_node, node_doc_id, node_to_sentence
from landmark_rag.llama_index.sources import chroma_collection
from landmark_rag.store import ChromaSentenceStore, sentence_id, user_metadata
from landmark_rag.store.identity import read_stamp
from landmark_rag.store.schema import DOC_HASH, MODEL_ID, VERSION

_PLACEMENT = (
    "put ReplaceDocuments after the embedding, e.g. transformations=[LandmarkNodeParser(), embed, "
    "ReplaceDocuments(vector_store, embed_model=embed)]: it writes each document once all its sentences "
    "are embedded, so the stored version stays visible until the new one is complete"
)


class ReplaceDocuments(TransformComponent):
    """Write each incoming document's embedded sentence nodes through the replace protocol.

    Documents are identified as ``LandmarkNodeParser`` identifies them (the schema
    ``doc_id``). Nodes pass through (with their new, versioned ids). Re-running on unchanged
    documents rewrites them (LlamaIndex's docstore strategies are the way to skip them).

    It runs on every pipeline run, ingestion cache or not: ``IngestionPipeline`` caches each
    transformation's output under its input nodes and :meth:`to_dict`, and on a hit hands the
    cached nodes on without calling the transformation. For this one that would skip the
    write, so going back to a text ingested before (A, B, A) would leave B live.
    """

    vector_store: Any = Field(exclude=True, description="The ChromaVectorStore the pipeline writes to.")
    embed_model: Any = Field(default=None, exclude=True, description="The LandmarkEmbedding (identity check).")

    def __init__(self, vector_store: Any, embed_model: Any = None, **kwargs: Any) -> None:
        # pydantic's dataclass_transform gives super().__init__ the base's fields only, not these
        super().__init__(vector_store=vector_store, embed_model=embed_model, **kwargs)  # type: ignore[call-arg]

    @classmethod
    def class_name(cls) -> str:
        return "ReplaceDocuments"

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """The component's settings, plus a token new on every call: the ingestion cache keys a
        transformation on this dict, and a write must never be replayed from it."""
        data = super().to_dict(**kwargs)
        data["run_token"] = uuid.uuid4().hex
        return data

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        nodes = list(nodes)
        by_doc = _sentence_nodes_by_document(nodes)
        if not by_doc:
            return nodes
        collection = chroma_collection(self.vector_store)
        if collection is None:
            raise TypeError(f"ReplaceDocuments needs a ChromaVectorStore, not {type(self.vector_store).__name__}")
        store = ChromaSentenceStore.for_collection(collection, create_manifest=True)
        identity = _identity(self.embed_model, by_doc)
        if identity:
            store.check_identity(identity)  # records it on the first write, refuses another model
        for doc_id, doc_nodes in by_doc.items():
            self._write(store, doc_id, doc_nodes)
        return nodes

    async def acall(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        return await asyncio.to_thread(self.__call__, nodes, **kwargs)

    def delete(self, doc_ids: Sequence[str]) -> int:
        """Remove documents with all their sentences (every version) and their manifest
        records; returns how many sentences went. An unknown id removes nothing.

        Use it instead of ``index.delete_ref_doc`` on a collection this component writes:
        LlamaIndex's delete removes the records but not the manifest's, which still calls the
        document complete, so re-adding the same text elsewhere (the core, the CLI, LangChain)
        would skip it as unchanged.
        """
        from landmark_rag.index import LandmarkIndex

        collection = chroma_collection(self.vector_store)
        if collection is None:
            raise TypeError(f"ReplaceDocuments needs a ChromaVectorStore, not {type(self.vector_store).__name__}")
        # the core's delete (its checks, each id once), through the collection's manifest
        return LandmarkIndex(ChromaSentenceStore.for_collection(collection)).delete(doc_ids)

    async def adelete(self, doc_ids: Sequence[str]) -> int:
        """Async :meth:`delete` (Chroma's calls block: run off the event loop)."""
        return await asyncio.to_thread(self.delete, doc_ids)

    def _write(self, store: ChromaSentenceStore, doc_id: str, doc_nodes: list[BaseNode]) -> None:
        from landmark_rag.llama_index.embedding import rebuild_text

        sentences = [node_to_sentence(n) for n in doc_nodes]
        first = doc_nodes[0].metadata

        def write(version: str) -> None:
            renamed = {n.node_id: sentence_id(doc_id, s.index, version) for n, s in zip(doc_nodes, sentences)}
            for n in doc_nodes:
                n.id_ = renamed[n.node_id]
                n.metadata[VERSION] = version
                for keys in (n.excluded_embed_metadata_keys, n.excluded_llm_metadata_keys):
                    if VERSION not in keys:
                        keys.append(VERSION)
                # LlamaIndex's accessors: a single RelatedNodeInfo (or None), never a list
                for info in (n.prev_node, n.next_node):
                    if info is not None and info.node_id in renamed:
                        info.node_id = renamed[info.node_id]
            self.vector_store.add(doc_nodes)

        store.write_document(
            doc_id, write, n_sentences=len(doc_nodes), doc_hash=str(first.get(DOC_HASH, "")),
            metadata=user_metadata(first), text=rebuild_text(sentences, doc_id),
        )


def _identity(embed_model: Any, by_doc: dict[str, list[BaseNode]]) -> dict[str, Any] | None:
    """The model set-up of the incoming vectors: ``embed_model``'s, else the one
    ``LandmarkEmbedding`` stamped on the nodes (``landmark_rag.store.identity``)."""
    encoder = getattr(embed_model, "encoder", None) if embed_model is not None else None
    if encoder is not None:
        return dict(encoder.config.identity())
    found: dict[str, dict[str, Any]] = {}
    for doc_nodes in by_doc.values():
        for n in doc_nodes:
            stamp = read_stamp(n.metadata)
            if stamp is not None:
                found.setdefault(str(n.metadata.get(MODEL_ID)), stamp[0])
    if len(found) > 1:
        raise ValueError("ReplaceDocuments received nodes embedded by different model set-ups; "
                         "embed one store's documents with one LandmarkEmbedding (nothing was written)")
    return next(iter(found.values()), None)


def _sentence_nodes_by_document(nodes: list[BaseNode]) -> dict[str, list[BaseNode]]:
    """Embedded sentence nodes grouped by document, in sentence order; bad input is refused."""
    sentence_nodes = [n for n in nodes if is_sentence_node(n)]
    if not sentence_nodes:
        if nodes:
            raise ValueError(f"ReplaceDocuments received {type(nodes[0]).__name__} objects, not sentence nodes: "
                             + _PLACEMENT)
        return {}
    if any(n.embedding is None for n in sentence_nodes):
        raise ValueError("ReplaceDocuments received sentence nodes without embeddings: " + _PLACEMENT)
    by_doc: dict[str, list[BaseNode]] = defaultdict(list)
    for n in sentence_nodes:
        by_doc[node_doc_id(n)].append(n)
    for doc_id, doc_nodes in by_doc.items():
        doc_nodes.sort(key=lambda n: int(n.metadata["sentence_index"]))
        indices = [int(n.metadata["sentence_index"]) for n in doc_nodes]
        if len(set(indices)) != len(indices):
            raise ValueError(duplicate_id_message(doc_id))
    return by_doc
