"""The landmark encoder (step 2 of the pipeline).

The package holds four kinds of thing:

* the encoder itself, at this level: ``encoder`` (``LandmarkEncoder``), ``config``
  (``LandmarkConfig``, ``Pooling``), ``layout`` (the input layout inference and training
  share), ``pooling``, ``windows``, ``attention`` (isolated landmarks), ``untrained``;
* ``models/``: finding and loading models (registry, loading policy, LoRA merge, split-zip
  weights, weight fingerprints, the process's shared encoders);
* ``runtime/``: how the encoder runs: the host side of a call (``planning``: documents into
  groups of padded batches, here or in preparation worker processes) and the device side
  (``scheduler``: launches, deferred reads, out-of-memory halving, compiled-model recovery),
  and process settings for CPU encoding (OpenMP wait policy, glibc mmap threshold,
  concurrent batches, bf16 autocast, int8);
* ``export/``: the query network exported to ONNX for a cold query without torch.

``LandmarkEncoder`` (and with it torch and transformers) is imported on first use, so that
``import landmark_rag`` and the CLI's commands that never encode (``info``, ``--help``, an
unchanged re-index) start without paying for them.
"""

from typing import TYPE_CHECKING, Any

from landmark_rag.encode.config import CONFIG_NAME, LandmarkConfig, Pooling
from landmark_rag.encode.models.loading import cache_dir
from landmark_rag.encode.models.registry import ModelNotFoundError

if TYPE_CHECKING:
    from landmark_rag.encode.encoder import LandmarkEncoder

__all__ = ["CONFIG_NAME", "LandmarkConfig", "LandmarkEncoder", "ModelNotFoundError", "Pooling", "cache_dir"]


def __getattr__(name: str) -> Any:
    if name == "LandmarkEncoder":
        from landmark_rag.encode.encoder import LandmarkEncoder

        return LandmarkEncoder
    raise AttributeError(f"module 'landmark_rag.encode' has no attribute {name!r}")
