"""LangChain drop-in components for landmark-rag (``pip install landmark-rag[langchain]``).

- :class:`LandmarkEmbeddings` - the encoder behind LangChain's ``Embeddings`` interface,
  plus :meth:`~LandmarkEmbeddings.embed_document_in_context` for context-aware vectors.
- :class:`LandmarkRetriever` - ingests whole documents in context into Chroma and returns
  exactly ``k`` expanded passages per query.
- :class:`LandmarkTextSplitter` - one ``Document`` per sentence with the core schema metadata.
- :class:`BoundaryExpansionCompressor` - expands sentence hits of any retriever over a
  landmark collection into passages (the ``ContextualCompressionRetriever`` pattern).

Each is a thin adapter over the core pipeline (segment -> encode -> store -> retrieve ->
expand); see docs/langchain.md.
"""

from landmark_rag.langchain.compressor import BoundaryExpansionCompressor
from landmark_rag.langchain.embeddings import LandmarkEmbeddings
from landmark_rag.langchain.ids import source_doc_id
from landmark_rag.langchain.retriever import LandmarkRetriever
from landmark_rag.langchain.splitter import LandmarkTextSplitter

__all__ = [
    "BoundaryExpansionCompressor",
    "LandmarkEmbeddings",
    "LandmarkRetriever",
    "LandmarkTextSplitter",
    "source_doc_id",
]
