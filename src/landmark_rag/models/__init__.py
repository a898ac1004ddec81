"""Which model ``LandmarkEncoder.from_pretrained(None)`` loads, and configs for plain models."""

from __future__ import annotations

from landmark_rag.encode.config import LandmarkConfig
from landmark_rag.encode.loading import ModelSource

#: The default until a trained landmark model ships: all-MiniLM-L6-v2 from its pip package,
#: each sentence embedded alone. Untrained in-context pooling retrieves worse than this
#: (gold-sentence R@1 0.063 at an untrained landmark, 0.395 in-context mean, vs 0.601 alone
#: on ../shared/data), and the default must never be worse than the plain model.
DEFAULT_MODEL = "all-MiniLM-L6-v2"


def default_model() -> str:
    return DEFAULT_MODEL


def plain_model_config(source: ModelSource) -> LandmarkConfig:
    """Config for a model directory without ``landmark_config.json``.

    Causal LMs follow the released reference code (EOS landmark, last-token pooling);
    other models are used as the sentence embedders they were trained to be.
    """
    from transformers import AutoConfig

    from landmark_rag.encode.loading import is_causal

    if source.gguf_file:
        causal = True
    else:
        try:
            causal = is_causal(AutoConfig.from_pretrained(source.path))
        except (OSError, ValueError):
            causal = False
    if causal:
        return LandmarkConfig(pooling="landmark", query_pooling="landmark", causal=True)
    return LandmarkConfig(pooling="sentence", query_pooling="mean", causal=False)
