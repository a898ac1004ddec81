"""The core index object: an encoder, a store and the model's expansion, wired once.

Every entry point (CLI, LangChain, LlamaIndex, the evaluation harness) searches through
:class:`LandmarkIndex` instead of re-assembling encoder + store + strategy itself.
"""

from landmark_rag.index.landmark_index import LandmarkIndex

__all__ = ["LandmarkIndex"]
