"""The landmark encoder (step 2 of the pipeline).

``LandmarkEncoder`` (and with it torch and transformers) is imported on first use, so that
``import landmark_rag`` and the CLI's commands that never encode (``info``, ``--help``, an
unchanged re-index) start without paying for them.
"""

from typing import TYPE_CHECKING, Any

from landmark_rag.encode.config import CONFIG_NAME, LandmarkConfig
from landmark_rag.encode.models.loading import cache_dir
from landmark_rag.encode.models.registry import ModelNotFoundError

if TYPE_CHECKING:
    from landmark_rag.encode.encoder import LandmarkEncoder

__all__ = ["CONFIG_NAME", "LandmarkConfig", "LandmarkEncoder", "ModelNotFoundError", "cache_dir"]


def __getattr__(name: str) -> Any:
    if name == "LandmarkEncoder":
        from landmark_rag.encode.encoder import LandmarkEncoder

        return LandmarkEncoder
    raise AttributeError(f"module 'landmark_rag.encode' has no attribute {name!r}")
