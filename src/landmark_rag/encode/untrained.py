"""The warning for landmark pooling on a model that was never trained for it.

Why: a plain embedding model has never seen a landmark token. Pooled at one, it retrieves
far worse than the same model embedding each sentence alone (docs/experiments/models-v1.md), so asking
for it silently would look like a broken package.

A model counts as trained for landmark pooling when its own ``landmark_config.json`` (model
or adapter directory) says ``pooling: landmark`` - what ``landmark-rag train`` writes, and
the layout a released landmark checkpoint is used in (docs/paper_checkpoint.md). Everything
else that ends up with landmark pooling warns, causal LMs without such a file included:
the EOS/last-token recipe of the reference code describes how the paper's *fine-tuned*
checkpoint is read, not a property of any instruct LM.
"""

from __future__ import annotations

import threading
import warnings


class UntrainedLandmarkWarning(UserWarning):
    """Landmark pooling was requested on a model not trained for it (filter it by this class)."""


_warned: set[str] = set()
_lock = threading.Lock()


def warn_untrained_landmark(model_name: str, *, stacklevel: int = 3) -> bool:
    """Warn once per model name (per process); returns whether a warning was issued now."""
    with _lock:
        if model_name in _warned:
            return False
        _warned.add(model_name)
    warnings.warn(
        f"{model_name!r} is loaded with pooling='landmark' but was not trained for it (no "
        "landmark_config.json of its own says pooling: landmark). An untrained landmark retrieves "
        "far worse than each sentence alone: gold-sentence R@1 about 0.06 vs about 0.6 for "
        "all-MiniLM-L6-v2 (docs/experiments/models-v1.md). Train it first (`landmark-rag train --base ...`, "
        "docs/training.md), or load it without pooling='landmark' to embed each sentence alone.",
        UntrainedLandmarkWarning,
        stacklevel=stacklevel,
    )
    return True
