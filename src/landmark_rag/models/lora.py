"""Kept importable from here; the LoRA merge lives in :mod:`landmark_rag.encode.lora`."""

from landmark_rag.encode.lora import merge_lora

__all__ = ["merge_lora"]
