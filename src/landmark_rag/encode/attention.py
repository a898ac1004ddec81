"""Isolated landmarks: an attention layout for bidirectional encoders.

Why: in a bidirectional encoder every token sees every other, so landmark tokens inserted
after each sentence change the text's own hidden states (dozens of unfamiliar tokens in
one window), and the landmark after sentence ``i`` sees the whole window with nothing
telling it which sentence is its own. The paper's causal LLM has neither problem: its
LMK after sentence ``i`` sees exactly the text up to ``i`` and later tokens learn around it.

``landmark_attention: "isolated"`` gives a bidirectional encoder the same structure:

* text tokens attend to text tokens only, at the positions they would have without any
  landmarks, so the text is encoded exactly as the base model encodes the plain window
  (every text token still carries the whole window's context);
* the landmark after sentence ``i`` attends to sentence ``i``'s tokens and itself, and
  sits at the position after its sentence's last token. What it sees are contextual
  states, so its vector still carries the context; training only has to teach it to
  summarise, not where to look.

``landmark_attention: "prefix"`` is the same with one difference: the landmark after
sentence ``i`` reads every text token of the window up to the end of sentence ``i`` (the
causal model's view, still over contextual states), which lets a hit after the answer carry
it (what Front-k expansion needs). The text itself is still bidirectional, so a landmark
BEFORE the answer also reads states that saw the answer.

``landmark_attention: "causal"`` closes that gap at sentence granularity: a text token of
sentence ``i`` attends to the text of sentences ``0..i`` (its own sentence both ways, as the
base model reads it; earlier sentences as context), and the landmark after sentence ``i``
to sentence ``i``'s tokens, as ``isolated``. A sentence's vector then carries the text up to
it and nothing after it, the causal LLM's property that makes a hit mark the END of the
useful span: the landmark before the answer cannot have seen it, so hits land on the
answer or after it, where Front-k (the hit and its predecessors) recovers it. Windows are
planned as for causal models (each sentence pooled where it has the most left context).

``landmark_span`` (``isolated`` and ``causal``, default 1) widens what a landmark reads to
its own sentence and the ``span - 1`` sentences before it (its own window only): a local
version of ``prefix`` that lets the landmark closing an answer span read the sentences that
lead up to it (the question's words often sit in the sentence before the answer) while it
still finds its own sentence without searching the whole prefix.

Queries laid out as ``query + LMK`` get the same rule (the LMK reads the query).
Windows without a landmark token come out exactly as with the plain 2-D mask.
"""

from __future__ import annotations

import torch


def isolated_landmark_inputs(
    ids: torch.Tensor,
    mask: torch.Tensor,
    lmk_id: int,
    dtype: torch.dtype = torch.float32,
    prefix: bool = False,
    causal: bool = False,
    span: int = 1,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(additive 4-D attention mask [B, 1, W, W], position_ids [B, W])`` for ``ids``.

    ``mask`` is the 2-D padding mask of :func:`encode.pooling.pad_batch`. The landmark token
    must be unique to landmarks (a new ``[LMK]``, not ``[SEP]`` which also ends the window).
    ``prefix``: a landmark reads every text token up to the end of its sentence (the causal
    model's view) instead of its own sentence only. ``causal``: text tokens read only the
    text of their own and earlier sentences (sentence-level causal text, isolated landmarks).
    ``span``: the landmark after sentence ``i`` reads the text of sentences ``i - span + 1 .. i``
    (1: its own sentence only; ignored with ``prefix``, which reads them all).
    """
    if span < 1:
        raise ValueError(f"a landmark reads at least its own sentence (span >= 1), not {span}")
    valid = mask.bool()
    is_lmk = (ids == lmk_id) & valid
    text = valid & ~is_lmk
    # segment of a token = number of landmarks strictly before it: sentence i's tokens and
    # the landmark closing it share segment i
    seg = torch.cumsum(is_lmk.long(), dim=1) - is_lmk.long()
    q_lmk = is_lmk.unsqueeze(2)
    k_valid = valid.unsqueeze(1)
    if prefix:
        same = (seg.unsqueeze(2) > seg.unsqueeze(1)) & text.unsqueeze(1)
        same = same | (seg.unsqueeze(2) == seg.unsqueeze(1))
    elif span > 1:
        back = seg.unsqueeze(2) - seg.unsqueeze(1)  # query's sentence minus key's
        same = ((back > 0) & (back < span) & text.unsqueeze(1)) | (back == 0)
    else:
        same = seg.unsqueeze(2) == seg.unsqueeze(1)
    text_keys = text.unsqueeze(1)
    if causal:
        # own sentence both ways, earlier sentences as context, nothing after
        text_keys = text_keys & (seg.unsqueeze(2) >= seg.unsqueeze(1))
    allowed = (~q_lmk & text_keys) | (q_lmk & same & k_valid)
    # padding rows: let them see themselves so no softmax row is empty
    eye = torch.eye(ids.shape[1], dtype=torch.bool, device=ids.device).unsqueeze(0)
    allowed = allowed | (eye & ~valid.unsqueeze(2))
    additive = torch.zeros(allowed.shape, dtype=dtype, device=ids.device)
    additive.masked_fill_(~allowed, torch.finfo(dtype).min)
    # text positions as if no landmark were there; a landmark takes the next position
    count = torch.cumsum(text.long(), dim=1)
    positions = torch.where(is_lmk, count, (count - 1).clamp(min=0))
    return additive.unsqueeze(1), positions
