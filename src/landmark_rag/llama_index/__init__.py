"""LlamaIndex drop-in components (``pip install landmark-rag[llama-index]``).

- :class:`LandmarkNodeParser` - one ``TextNode`` per sentence, exact offsets, core schema;
- :class:`LandmarkEmbedding` - encodes each document in one pass and sets every sentence
  node's in-context vector; queries are embedded as ``query + LMK``;
- :class:`BoundaryExpansionPostprocessor` - expands sentence hits into exact passages,
  reading neighbours from the ``ChromaVectorStore`` (or a docstore);
- :class:`LandmarkHybridRetriever` - sentence hits ranked by the landmark vectors fused with
  sentence-level BM25 over the same ``ChromaVectorStore`` (or either alone), ready for
  ``BoundaryExpansionPostprocessor`` in a ``RetrieverQueryEngine``;
- :class:`ReplaceDocuments` - re-ingesting a document replaces its old sentences;
- :class:`DocstoreSentenceSource` / :func:`sentence_source` - the neighbour sources.
"""

from landmark_rag.llama_index.embedding import LandmarkEmbedding
from landmark_rag.llama_index.node_parser import LandmarkNodeParser
from landmark_rag.llama_index.postprocessor import BoundaryExpansionPostprocessor
from landmark_rag.llama_index.replace import ReplaceDocuments
from landmark_rag.llama_index.retriever import LandmarkHybridRetriever
from landmark_rag.llama_index.sources import DocstoreSentenceSource, sentence_source

__all__ = [
    "BoundaryExpansionPostprocessor",
    "DocstoreSentenceSource",
    "LandmarkEmbedding",
    "LandmarkHybridRetriever",
    "LandmarkNodeParser",
    "ReplaceDocuments",
    "sentence_source",
]
