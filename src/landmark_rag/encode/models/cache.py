"""The one encoder cache of the process: every adapter, the CLI and the core load through it.

Frameworks build embedding objects freely (one per vector store, retriever, test, CLI
command), and loading weights costs seconds and memory each time, while an encoder is
stateless between calls. So an encoder is loaded once per ``(model, device, dtype)``, and
settings that do not touch the weights (pooling, query pooling, instruction, window sizes,
an existing landmark token) are served by encoders that share those weights. Only a
landmark token the vocabulary does not have yet needs its own copy of the model.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import replace
from typing import Any

from landmark_rag.encode.encoder import LandmarkEncoder
from landmark_rag.encode.models.registry import default_model

#: Base encoders (distinct weights) kept alive at once; the least recently used goes first.
MAX_MODELS = 4

_BASE: OrderedDict[tuple[Any, ...], LandmarkEncoder] = OrderedDict()
_DERIVED: dict[tuple[Any, ...], LandmarkEncoder] = {}
_LOCK = threading.RLock()


def load_encoder(
    model: str | os.PathLike[str] | None = None,
    *,
    device: str | None = None,
    dtype: str | None = None,
    **overrides: Any,
) -> LandmarkEncoder:
    """A shared encoder for ``model`` (``None``: the package default) with config ``overrides``.

    Raises what :meth:`LandmarkEncoder.from_pretrained` raises (``ModelNotFoundError`` for
    an unknown model, ``ValueError`` for an invalid setting).
    """
    name = os.fspath(model) if model is not None else default_model()
    base_key = (name, None if device is None else str(device), None if dtype is None else str(dtype))
    key = (*base_key, tuple(sorted((k, repr(v)) for k, v in overrides.items())))
    with _LOCK:
        if not overrides:
            return _base(base_key)
        if key in _DERIVED:
            return _DERIVED[key]
        base = _base(base_key)
        config = replace(base.config, **{k: v for k, v in overrides.items() if k != "extra"})
        if config == base.config:
            encoder = base
        elif config.lmk_token is not None and config.lmk_token not in base.tokenizer.get_vocab():
            # a new landmark token resizes the embedding matrix: that model is not shared
            encoder = LandmarkEncoder.from_pretrained(name, device=device, dtype=dtype, **overrides)
        else:
            encoder = base.with_config(config)
        _DERIVED[key] = encoder
        return encoder


def _base(key: tuple[Any, ...]) -> LandmarkEncoder:
    encoder = _BASE.get(key)
    if encoder is None:
        name, device, dtype = key
        encoder = LandmarkEncoder.from_pretrained(name, device=device, dtype=dtype)
        _BASE[key] = encoder
        while len(_BASE) > MAX_MODELS:
            old_key, old = _BASE.popitem(last=False)
            for k in [k for k, v in _DERIVED.items() if k[:3] == old_key or v.model is old.model]:
                del _DERIVED[k]
    _BASE.move_to_end(key)
    return encoder
