"""landmark-rag for LangChain under the ``langchain_<name>`` import path partner packages use.

``from langchain_landmark import LandmarkRetriever, LandmarkEmbeddings`` (as with
``langchain_chroma`` or ``langchain_huggingface``). A re-export of
:mod:`landmark_rag.langchain`, which keeps working; see docs/langchain.md.
"""

from landmark_rag.langchain import (
    BoundaryExpansionCompressor,
    LandmarkEmbeddings,
    LandmarkRetriever,
    LandmarkTextSplitter,
    source_doc_id,
)

__all__ = [
    "BoundaryExpansionCompressor",
    "LandmarkEmbeddings",
    "LandmarkRetriever",
    "LandmarkTextSplitter",
    "source_doc_id",
]
