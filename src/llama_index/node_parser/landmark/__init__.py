"""landmark-rag's node parser under LlamaIndex's integration import path.

``from llama_index.node_parser.landmark import LandmarkNodeParser``, the way LlamaIndex users
import node parsers (``llama_index.node_parser.<name>``); with :class:`ReplaceDocuments`, the
ingestion transformation that goes before it. A re-export of :mod:`landmark_rag.llama_index`
(namespace packages above this one, see ``llama_index.embeddings.landmark``).
"""

from landmark_rag.llama_index.node_parser import LandmarkNodeParser
from landmark_rag.llama_index.replace import ReplaceDocuments

__all__ = ["LandmarkNodeParser", "ReplaceDocuments"]
