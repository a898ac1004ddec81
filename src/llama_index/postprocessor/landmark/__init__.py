"""landmark-rag's node postprocessor under LlamaIndex's integration import path.

``from llama_index.postprocessor.landmark import BoundaryExpansionPostprocessor``, the way
LlamaIndex users import postprocessors (``llama_index.postprocessor.<name>``); with the
neighbour sources it reads from. A re-export of :mod:`landmark_rag.llama_index` (namespace
packages above this one, see ``llama_index.embeddings.landmark``).
"""

from landmark_rag.llama_index.postprocessor import BoundaryExpansionPostprocessor
from landmark_rag.llama_index.sources import DocstoreSentenceSource, sentence_source

__all__ = ["BoundaryExpansionPostprocessor", "DocstoreSentenceSource", "sentence_source"]
