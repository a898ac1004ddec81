"""landmark-rag: chunking-free Landmark Embedding retrieval for long documents.

The pipeline, one sub-package per step: ``segment`` -> ``encode`` -> ``store`` ->
``retrieve`` -> ``expand``; adapters for LlamaIndex (``landmark_rag.llama_index``) and
LangChain (``landmark_rag.langchain``) are thin wrappers over it.
"""

from typing import TYPE_CHECKING, Any

from landmark_rag.encode.runtime.omp import prefer_passive_wait

prefer_passive_wait()  # before anything imports torch: see encode/runtime/omp.py

from landmark_rag.encode import LandmarkConfig, ModelNotFoundError
from landmark_rag.errors import LandmarkRagError
from landmark_rag.segment import segment_sentences
from landmark_rag.types import EncodedDocument, Hit, Passage, Sentence

if TYPE_CHECKING:
    from landmark_rag.encode import LandmarkEncoder
    from landmark_rag.index import LandmarkIndex

__version__ = "0.1.0"

__all__ = [
    "EncodedDocument",
    "Hit",
    "LandmarkConfig",
    "LandmarkEncoder",
    "LandmarkIndex",
    "LandmarkRagError",
    "ModelNotFoundError",
    "Passage",
    "Sentence",
    "__version__",
    "segment_sentences",
]


def __getattr__(name: str) -> Any:
    # imported on first use: the encoder pulls in torch and transformers, the index
    # chromadb, which ``import landmark_rag`` (and so every CLI command that does not
    # encode, e.g. ``info``) should not pay for (tests/test_imports.py)
    if name == "LandmarkEncoder":
        from landmark_rag.encode.encoder import LandmarkEncoder

        return LandmarkEncoder
    if name == "LandmarkIndex":
        from landmark_rag.index import LandmarkIndex

        return LandmarkIndex
    raise AttributeError(f"module 'landmark_rag' has no attribute {name!r}")
