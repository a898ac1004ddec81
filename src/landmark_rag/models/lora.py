"""Kept importable from here; the LoRA merge lives in :mod:`landmark_rag.encode.models.lora`."""

from landmark_rag.encode.models.lora import merge_lora

__all__ = ["merge_lora"]
