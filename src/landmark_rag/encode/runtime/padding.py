"""The padding of a batch as a broadcast key mask, for bidirectional encoders.

Why: given the usual 2-D padding mask, a transformers encoder expands it into a
``[batch, 1, width, width]`` mask before every forward pass, and PyTorch's CPU attention
kernel then reads that full mask. A bidirectional model's padding only ever hides keys, so
the same mask can be handed over as ``[batch, 1, 1, width]``: transformers passes a 4-D mask
through as it is, attention broadcasts it over queries, and the hidden states are the same
numbers. It is additive (0 to attend, the dtype's lowest value to hide, as transformers' own
additive masks), which SDPA uses as it is where it would convert a boolean mask in every
layer. Measured on this project's 2-core CPU, a 1-layer 32-wide model with MiniLM's
tokenizer, 12 padded batches of 16 windows of up to 256 tokens, bf16 autocast, one thread:
2-D mask 102.5 ms, broadcast boolean 77.6 ms, broadcast additive 70.9 ms, all three the
same hidden states; a real model spends the same time per batch on the mask, a smaller
share of its forward pass.

That holds only where a model hands a 4-D mask to its attention unchanged. So it is not
assumed: the first padded batch a model sees runs a probe (:func:`broadcast_padding_dtype`),
two padded rows through both masks, and the broadcast mask is used only if the hidden states
agree; a model that rejects a 4-D mask or reads it otherwise keeps the 2-D mask, and so does
any attention implementation but SDPA and eager (flash attention takes the 2-D mask).
Causal layouts (whose mask must also be causal) and isolated landmarks (which have a 4-D
mask of their own, ``encode.attention``) never use it. A batch without padding goes to the
model with no mask at all (``pooling.last_hidden``'s ``unpadded``): what transformers makes of an
all-ones mask, without reading the mask on the device to find that out.
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Any

import torch

logger = logging.getLogger(__name__)

_VERDICTS: weakref.WeakKeyDictionary[Any, tuple[tuple[str, ...], bool]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()
#: Words whose token ids fill the probe's rows (any ids of the model's vocabulary would do;
#: real words keep the probe inside what the model was trained on).
_PROBE_TEXT = "a probe of the padding mask, whose rows differ in length by several tokens"


def key_padding(mask: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """``[B, 1, 1, W]`` additive mask in ``dtype`` (0: attend; the lowest value: padding) from
    the ``[B, W]`` 0/1 padding mask."""
    keys = mask[:, None, None, :]
    return torch.zeros(keys.shape, dtype=dtype, device=mask.device).masked_fill_(keys == 0, torch.finfo(dtype).min)


def mask_optional(model: Any, layout: Any) -> bool:
    """Whether a batch without padding may go to ``model`` with no mask at all: a bidirectional
    layout without isolated landmarks, and a transformers model (its config names an attention
    implementation), which reads a missing mask as "attend to every token", as an all-ones one.
    Causal layouts keep the mask: there transformers reads the positions on the device instead
    (a packed-sequence check), so leaving the mask out saves nothing."""
    if layout.causal or layout.isolated_landmarks is not None:
        return False
    return getattr(getattr(model, "config", None), "_attn_implementation", None) is not None


def broadcast_padding_dtype(model: Any, layout: Any) -> torch.dtype | None:
    """The dtype of the broadcast mask ``model`` takes (its own floating dtype), or ``None``
    when it keeps the 2-D mask: whether padded batches get the same hidden states with
    :func:`key_padding`'s broadcast mask as with the 2-D mask is probed once per model, and
    again when its attention implementation, dtype or device changes (see the module)."""
    if layout.causal or layout.landmark_attention != "full":
        return None
    config = getattr(model, "config", None)
    impl = getattr(config, "_attn_implementation", None)
    if impl not in ("sdpa", "eager"):
        return None
    try:
        param = next(model.parameters())
    except (AttributeError, StopIteration, TypeError):
        return None
    dtype = param.dtype if param.dtype.is_floating_point else torch.float32
    key = (str(impl), str(param.dtype), str(param.device))
    with _LOCK:
        known = _VERDICTS.get(model)
        if known is None or known[0] != key:
            known = (key, _probe(model, layout, dtype, param.device))
            try:
                _VERDICTS[model] = known
            except TypeError:  # not weakly referenceable: probed again next time, still correct
                pass
        return dtype if known[1] else None


@torch.inference_mode()
def _probe(model: Any, layout: Any, dtype: torch.dtype, device: torch.device) -> bool:
    from landmark_rag.encode.pooling import last_hidden
    from landmark_rag.segment.tokens import text_tokenizer

    try:
        words = [int(x) for x in text_tokenizer(layout.tokenizer).ids([_PROBE_TEXT])[0][:12]]
        prefix, suffix = list(layout.prefix_ids), list(layout.suffix_ids)
        long_row = prefix + words + [layout.lmk_id] + suffix
        short_row = prefix + words[:3] + [layout.lmk_id] + suffix
        width = len(long_row)
        ids = torch.full((2, width), layout.pad_id, dtype=torch.long)
        mask = torch.zeros((2, width), dtype=torch.long)
        for r, row in enumerate((long_row, short_row)):
            ids[r, : len(row)] = torch.tensor(row)
            mask[r, : len(row)] = 1
        ids, mask = ids.to(device), mask.to(device)
        plain = last_hidden(model, ids, mask, layout).float()
        broadcast = last_hidden(model, ids, mask, layout, key_padding=dtype).float()
    except Exception as exc:  # noqa: BLE001 - any failure: the 2-D mask, as always
        logger.debug("broadcast padding mask not usable (%s: %s); using the 2-D mask", type(exc).__name__, exc)
        return False
    keep = mask.bool()
    if plain.shape != broadcast.shape or plain.shape[:2] != keep.shape:
        return False
    a, b = plain[keep], broadcast[keep]
    if not bool(torch.isfinite(a).all()):
        return False
    # fp32 kernels give the same numbers; half precision may pick another kernel for another
    # mask shape, so it gets rounding room (a mask the model misreads moves rows far more)
    tol = 1e-5 if dtype in (torch.float32, torch.float64) else 2e-2
    scale = float(a.abs().max().clamp_min(1e-6))
    ok = float((a - b).abs().max()) <= tol * scale
    if not ok:
        logger.debug("broadcast padding mask changes %s's hidden states; using the 2-D mask", type(model).__name__)
    return ok
