"""Which model ``LandmarkEncoder.from_pretrained(None)`` loads, and configs for plain models.

The package ships one trained landmark model, ``landmark-minilm`` (``models/landmark-minilm/``):
a LoRA adapter (a few MB) over all-MiniLM-L6-v2, whose base weights come from their own pip
package. It is the default because it beats embedding each sentence alone on held-out
articles (docs/model_card.md). If the adapter directory is missing (a trimmed install), the
default falls back to the plain model used per sentence, which is never worse than untrained
in-context pooling.
"""

from __future__ import annotations

from pathlib import Path

from landmark_rag.encode.config import CONFIG_NAME, LandmarkConfig
from landmark_rag.encode.loading import ModelSource

#: The plain base model; per-sentence embedding is the honest untrained baseline
#: (gold-sentence R@1 0.063 at an untrained landmark, 0.395 in-context mean, vs 0.601 alone).
BASE_MODEL = "all-MiniLM-L6-v2"

#: Trained models that ship inside the package, by name.
PACKAGED_MODELS: dict[str, Path] = {
    "landmark-minilm": Path(__file__).resolve().parent / "landmark-minilm",
    "landmark-minilm-lmk": Path(__file__).resolve().parent / "landmark-minilm-lmk",  # LMK token, Front-k
}

#: The name of the default model (a key of PACKAGED_MODELS, or a plain alias).
DEFAULT_MODEL = "landmark-minilm"


def packaged_model(name: str) -> Path | None:
    """Directory of a packaged trained model, or None when it is not installed."""
    path = PACKAGED_MODELS.get(name.lower())
    return path if path is not None and (path / CONFIG_NAME).is_file() else None


def default_model() -> str:
    """What ``from_pretrained(None)`` loads: the packaged trained model when present."""
    path = packaged_model(DEFAULT_MODEL)
    return str(path) if path is not None else BASE_MODEL


def default_model_name() -> str:
    """The default model's name (``landmark-minilm``, or the base model if it is missing)."""
    return DEFAULT_MODEL if packaged_model(DEFAULT_MODEL) is not None else BASE_MODEL


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
    # a context-free hit is the most relevant sentence itself, not the end of a span:
    # one sentence either side covers more answers than Front-3 at the same cost
    # (docs/benchmarks.md, "Boundary expansion strategies")
    return LandmarkConfig(pooling="sentence", query_pooling="mean", causal=False, expansion="surround")


def model_config(model: str | None = None) -> LandmarkConfig | None:
    """A model's ``landmark_config.json`` without loading its weights (``None`` if it has none)."""
    from landmark_rag.encode.loading import resolve

    source = resolve(model if model is not None else default_model())
    if source.gguf_file:
        return None
    return LandmarkConfig.load(source.path)
