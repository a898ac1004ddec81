"""The landmark encoder (step 2 of the pipeline)."""

from landmark_rag.encode.config import CONFIG_NAME, LandmarkConfig
from landmark_rag.encode.encoder import LandmarkEncoder
from landmark_rag.encode.loading import ModelNotFoundError, cache_dir

__all__ = ["CONFIG_NAME", "LandmarkConfig", "LandmarkEncoder", "ModelNotFoundError", "cache_dir"]
