"""Models that ship with the package (``landmark-minilm/``) and the public registry names.

The registry itself (aliases, packaged models, the default model, configs for plain
models) is :mod:`landmark_rag.encode.models.registry`; these names stay importable from here.
"""

from landmark_rag.encode.models.registry import (
    BASE_MODEL,
    DEFAULT_MODEL,
    PACKAGED_MODELS,
    default_model,
    default_model_name,
    model_config,
    packaged_model,
    plain_model_config,
)

__all__ = [
    "BASE_MODEL",
    "DEFAULT_MODEL",
    "PACKAGED_MODELS",
    "default_model",
    "default_model_name",
    "model_config",
    "packaged_model",
    "plain_model_config",
]
