"""``ReplaceDocuments``: make re-ingesting a document replace its old sentences.

LlamaIndex's ``ChromaVectorStore.add`` calls ``collection.add``, and Chroma silently ignores
ids that already exist. Sentence ids are deterministic (``doc_id:index``), so re-ingesting an
edited document through a plain ``IngestionPipeline(vector_store=...)`` would keep the old
vectors and texts, and a shrunk document would keep its old tail. Put this transformation
in the pipeline (anywhere before the vector store write, i.e. anywhere in the list) and the
incoming documents' old records are deleted first.

With a docstore and ``docstore_strategy=UPSERTS`` LlamaIndex already deletes changed
documents itself (``vector_store.delete(ref_doc_id)``); this component is for the pattern
without a docstore.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.bridge.pydantic import Field
from llama_index.core.schema import BaseNode, TransformComponent

from landmark_rag.llama_index.convert import is_sentence_node, node_doc_id


class ReplaceDocuments(TransformComponent):
    """Delete the stored records of every incoming document from ``vector_store``.

    Documents are identified as ``LandmarkNodeParser`` identifies them: a sentence node by
    its schema ``doc_id``, any other node (a ``Document`` before parsing) by its own id.
    Nodes pass through unchanged. Deleting an id that is not stored is a no-op, so the
    component is idempotent.
    """

    vector_store: Any = Field(exclude=True, description="The vector store the pipeline writes to.")

    def __init__(self, vector_store: Any, **kwargs: Any) -> None:
        super().__init__(vector_store=vector_store, **kwargs)

    @classmethod
    def class_name(cls) -> str:
        return "ReplaceDocuments"

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        for doc_id in _doc_ids(nodes):
            self.vector_store.delete(doc_id)
        return nodes

    async def acall(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        for doc_id in _doc_ids(nodes):
            await self.vector_store.adelete(doc_id)
        return nodes


def _doc_ids(nodes: Sequence[BaseNode]) -> list[str]:
    return list(dict.fromkeys(node_doc_id(n) if is_sentence_node(n) else n.node_id for n in nodes))
