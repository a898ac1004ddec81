"""landmark-rag: chunking-free Landmark Embedding retrieval for long documents.

The pipeline, one sub-package per step: ``segment`` -> ``encode`` -> ``store`` ->
``retrieve`` -> ``expand``; adapters for LlamaIndex (``landmark_rag.llama_index``) and
LangChain (``landmark_rag.langchain``) are thin wrappers over it.
"""

from landmark_rag.encode import LandmarkConfig, LandmarkEncoder, ModelNotFoundError
from landmark_rag.segment import segment_sentences
from landmark_rag.types import EncodedDocument, Hit, Passage, Sentence

__version__ = "0.1.0"

__all__ = [
    "EncodedDocument",
    "Hit",
    "LandmarkConfig",
    "LandmarkEncoder",
    "ModelNotFoundError",
    "Passage",
    "Sentence",
    "__version__",
    "segment_sentences",
]
