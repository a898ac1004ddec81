"""landmark-rag's embedding under LlamaIndex's integration import path.

LlamaIndex users look for embeddings at ``llama_index.embeddings.<name>`` (as with
``llama_index.embeddings.huggingface``), so this distribution ships that path too:
``from llama_index.embeddings.landmark import LandmarkEmbedding``. ``llama_index`` and
``llama_index.embeddings`` are PEP 420 namespace packages (no ``__init__.py``), shared with
llama-index-core and every other integration; the class itself lives in
:mod:`landmark_rag.llama_index`, which keeps working.
"""

from landmark_rag.llama_index.embedding import LandmarkEmbedding

__all__ = ["LandmarkEmbedding"]
