"""Merge a plain LoRA adapter into a model without peft.

Why: the packaged default model is a LoRA adapter on top of all-MiniLM-L6-v2, and loading
the default must not require the ``train`` extra. A linear LoRA layer is just
``W += (lora_alpha / r) * B @ A``, so merging it needs nothing beyond torch and safetensors.
Trained rows of the input embeddings (peft's ``trainable_token_indices``, how a new
``[LMK]`` token is saved) are copied in. Adapters using anything fancier (DoRA, rsLoRA, rank
patterns, extra saved modules) are refused with a message pointing at peft.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

_PREFIX = "base_model.model."


def merge_lora(model: Any, adapter_dir: str | Path) -> Any:
    """Add the LoRA deltas of ``adapter_dir`` (peft's save format) to ``model`` in place."""
    from safetensors.torch import load_file

    adapter_dir = Path(adapter_dir)
    cfg = json.loads((adapter_dir / "adapter_config.json").read_text())
    unsupported = [
        k
        for k in (
            "use_dora", "use_rslora", "modules_to_save", "rank_pattern", "alpha_pattern",
            "lora_bias", "layer_replication", "use_qalora", "use_bdlora", "target_parameters",
            "alora_invocation_tokens",
        )
        if cfg.get(k)
    ]
    tokens = cfg.get("trainable_token_indices")
    if tokens and not isinstance(tokens, list):  # a dict targets named layers: leave that to peft
        unsupported.append("trainable_token_indices")
    if cfg.get("bias", "none") != "none":
        unsupported.append(f"bias={cfg['bias']}")
    if cfg.get("peft_type", "LORA") != "LORA" or unsupported or cfg.get("fan_in_fan_out"):
        what = unsupported or cfg.get("peft_type")
        raise ImportError(f"adapter in {adapter_dir} uses {what}; install peft to load it")
    scale = float(cfg["lora_alpha"]) / float(cfg["r"])
    weights = load_file(str(adapter_dir / "adapter_model.safetensors"))
    known = (".lora_A.weight", ".lora_B.weight") + (("token_adapter.trainable_tokens_delta",) if tokens else ())
    other = [k for k in weights if not k.endswith(known)]
    if other:  # e.g. saved biases or whole modules: peft knows how to apply them
        raise ImportError(f"adapter in {adapter_dir} also saves {other[:3]}; install peft to load it")
    modules = dict(model.named_modules())
    merged = 0
    for key, a in weights.items():
        if not key.endswith(".lora_A.weight"):
            continue
        name = key[: -len(".lora_A.weight")]
        name = name.removeprefix(_PREFIX)
        b = weights[key.replace(".lora_A.", ".lora_B.")]
        module = modules.get(name)
        if module is None or not hasattr(module, "weight"):
            raise ValueError(f"adapter targets {name!r}, which the model does not have")
        with torch.no_grad():
            delta = (b.float() @ a.float()) * scale
            module.weight += delta.to(device=module.weight.device, dtype=module.weight.dtype)
        merged += 1
    if tokens:
        # trained rows of the input embeddings (a new [LMK] token): peft stores their values
        delta_key = next((k for k in weights if k.endswith("token_adapter.trainable_tokens_delta")), None)
        if delta_key is None or weights[delta_key].shape[0] != len(tokens):
            raise ValueError(f"adapter in {adapter_dir} names trainable tokens {tokens} but holds no rows for them")
        emb = model.get_input_embeddings().weight
        if max(tokens) >= emb.shape[0]:
            raise ValueError(f"adapter trains token {max(tokens)}, beyond the model's {emb.shape[0]} embeddings")
        with torch.no_grad():
            emb[torch.as_tensor(tokens)] = weights[delta_key].to(device=emb.device, dtype=emb.dtype)
    if not merged:
        raise ValueError(f"no LoRA weights found in {adapter_dir}")
    return model
