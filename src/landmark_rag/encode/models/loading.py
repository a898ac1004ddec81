"""Loading a model: what ``LandmarkEncoder.from_pretrained`` builds an encoder from.

The policy lives here: which files hold the weights (a model directory, a GGUF file
dequantised once into the cache, or an adapter directory over its ``base_model``), which
config applies (the model's own ``landmark_config.json``, else a plain model's default, then
the caller's overrides), which tokenizer, which device and dtype, how an adapter is merged,
and whether documents run under bf16 autocast.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import time
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

# torch is imported inside the functions that touch weights: resolving a model name or
# reading the cache path (``landmark-rag info``) must not pay for importing torch.
if TYPE_CHECKING:
    import torch

from landmark_rag.encode.config import LandmarkConfig, Pooling
from landmark_rag.encode.models.fingerprint import file_digest, weights_fingerprint
from landmark_rag.encode.models.registry import (
    ALIASES,
    PREVIOUS_VERSIONS,
    ModelNotFoundError,
    ModelSource,
    default_model,
    packaged_model,
    plain_model_config,
    resolve,
)
from landmark_rag.encode.runtime.precision import default_document_autocast
from landmark_rag.staging import remove_leftovers, set_aside, staging_dir

logger = logging.getLogger(__name__)


@dataclass
class LoadedModel:
    """A loaded model and what loading decided about it."""

    model: Any  # the Hugging Face model on ``device``: adapter merged, quantised if asked
    tokenizer: Any
    config: LandmarkConfig  # the model's own config (or a plain model's) with the caller's overrides
    device: torch.device
    #: the files the weights came from (empty once quantised: those weights are no longer the files')
    weight_locations: list[str]
    #: dtype documents run in under CPU autocast (``runtime.precision``), ``None``: as loaded
    document_autocast: torch.dtype | None
    #: landmark pooling on a model whose own config never asked for it (``encode.untrained``)
    untrained_landmark: bool


def load_pretrained(
    model: str | os.PathLike[str] | None,
    *,
    device: str | torch.device | None = None,
    dtype: str | torch.dtype | None = None,
    trust_remote_code: bool = False,
    attn_implementation: str | None = None,
    quantize: str | None = None,
    overrides: dict[str, Any] | None = None,
) -> LoadedModel:
    """Load ``model`` (as :meth:`LandmarkEncoder.from_pretrained` takes it; ``None``: the
    package's default) with config ``overrides``."""
    if model is None:
        model = default_model()
    source = resolve(model)
    dev = pick_device(device)
    torch_dtype = pick_dtype(dev, dtype)
    path, adapter_dir, own = _locate(source)
    # landmark pooling is trusted only where the model's own landmark_config.json asks for it
    trained_landmark = own is not None and own.pooling is Pooling.LANDMARK
    fields = {k: v for k, v in (overrides or {}).items() if k != "extra"}
    config = replace(own or plain_model_config(source), **fields)
    config.model_name = config.model_name or source.alias or os.fspath(model)
    config.weights_fingerprint = weights_fingerprint([path, adapter_dir])
    tokenizer, hf_model = _load_weights(
        path, adapter_dir, dtype=torch_dtype, trust_remote_code=trust_remote_code,
        attn_implementation=attn_implementation,
    )
    if quantize is not None:
        from landmark_rag.encode.runtime.quantize import quantize_model

        hf_model = quantize_model(hf_model, quantize, dev)
    return LoadedModel(
        model=hf_model.to(dev),
        tokenizer=tokenizer,
        config=config,
        device=dev,
        weight_locations=[p for p in (path, adapter_dir) if p] if quantize is None else [],
        document_autocast=default_document_autocast(dev, dtype, quantize),
        untrained_landmark=config.pooling is Pooling.LANDMARK and not trained_landmark,
    )


def _locate(source: ModelSource) -> tuple[str, str | None, LandmarkConfig | None]:
    """``(weights directory, adapter directory or None, the model's own config or None)``.

    An adapter-only directory (its config names a ``base_model``, it holds no full weights)
    takes its weights from the base model and its config from itself.
    """
    path = str(materialise_gguf(source)) if source.gguf_file else source.path
    config = LandmarkConfig.load(path) if Path(path).is_dir() else None
    if config is None or not config.base_model or _has_weights(path):
        return path, None, config
    base = resolve(config.base_model)
    return str(materialise_gguf(base)) if base.gguf_file else base.path, path, config


def packaged_version(name: str, fingerprint: str) -> str | None:
    """The release of packaged model ``name`` (the current one or a kept earlier one) whose
    weights have ``fingerprint``; ``None`` when none has."""
    for candidate in (name, *PREVIOUS_VERSIONS.get(name, ())):
        if packaged_model(candidate) is None:
            continue
        path, adapter_dir, _ = _locate(resolve(candidate))
        if weights_fingerprint([path, adapter_dir]) == fingerprint:
            return candidate
    return None


def _has_weights(path: str) -> bool:
    return any(Path(path).glob("*.safetensors")) and not Path(path, "adapter_config.json").is_file()


def _load_weights(
    path: str, adapter_dir: str | None, *, dtype: torch.dtype, trust_remote_code: bool, attn_implementation: str | None
) -> tuple[Any, Any]:
    """Tokenizer and model of ``path``, with ``adapter_dir``'s adapter merged (and its
    tokenizer, when it saved one: a trained new landmark token lives there)."""
    tokenizer, model = load_hf(
        path, dtype=dtype, trust_remote_code=trust_remote_code, attn_implementation=attn_implementation
    )
    if adapter_dir is None:
        return tokenizer, model
    if Path(adapter_dir, "tokenizer_config.json").is_file():
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(adapter_dir)
    return tokenizer, _apply_adapter(model, tokenizer, adapter_dir)


def _apply_adapter(model: Any, tokenizer: Any, adapter_dir: str) -> Any:
    """Apply a LoRA adapter (and resized embeddings) saved by landmark-rag training."""
    if len(tokenizer) != model.get_input_embeddings().weight.shape[0]:
        # the new rows (a trained [LMK]) come from the adapter: no random mean/covariance init
        model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    from landmark_rag.encode.models.lora import merge_lora

    # A plain LoRA adapter (the packaged default) merges with torch alone, so loading the
    # default model neither needs peft nor pays for importing it; peft is only needed for
    # adapter kinds merge_lora refuses.
    try:
        return merge_lora(model, adapter_dir)
    except ImportError:
        from peft import PeftModel  # the `train` extra

    with warnings.catch_warnings():
        # peft reads transformers' deprecated `is_gradient_checkpointing` property, which warns
        # (FutureWarning) on every load; the notice is for peft, not for users.
        warnings.filterwarnings("ignore", message=r".*is_gradient_checkpointing", category=FutureWarning)
        return PeftModel.from_pretrained(model, adapter_dir).merge_and_unload()


def cache_dir() -> Path:
    """Root of landmark-rag's own cache (``$LANDMARK_RAG_CACHE``, else ~/.cache/landmark_rag)."""
    root = os.environ.get("LANDMARK_RAG_CACHE")
    if root:
        return Path(root).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "landmark_rag"


#: Written into every cache entry: the SHA-256 of the GGUF file it was dequantised from.
_GGUF_SOURCE = "gguf.sha256"
#: An entry written under the old location key is removed only once it is this old: a process
#: of an earlier release may have just made it, or be loading from it.
_LEGACY_GRACE_S = 24 * 3600


def _gguf_file(source: ModelSource) -> Path:
    return Path(source.path) / str(source.gguf_file)


def _mark_source(entry: Path, source: ModelSource) -> None:
    """Record in a cache entry the digest of the GGUF file it holds (what makes it content-keyed)."""
    (entry / _GGUF_SOURCE).write_text(file_digest(_gguf_file(source)) + "\n")


def _gguf_cache_path(source: ModelSource) -> Path:
    # Keyed by the file's name and bytes, not its location: every virtual environment installs
    # the packaged GGUF at another path, and a location key gave each one its own 0.5 GB copy.
    f = _gguf_file(source)
    key = hashlib.sha256(f"{f.name}|{file_digest(f)}".encode()).hexdigest()[:16]
    return cache_dir() / "gguf" / f"{f.stem}-{key}"


def _location_keyed_path(source: ModelSource) -> Path:
    """Where releases before the content key cached this very file (its path and modification time)."""
    f = _gguf_file(source)
    st = f.stat()
    key = hashlib.sha256(f"{f.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:16]
    return cache_dir() / "gguf" / f"{f.stem}-{key}"


def _same_weights(a: Path, b: Path) -> bool:
    """Whether two cache entries hold byte-identical weight files (what a store fingerprints);
    ``False`` when either cannot be read through, e.g. another process just moved it."""
    try:
        fingerprint = weights_fingerprint([a])
        return fingerprint is not None and fingerprint == weights_fingerprint([b])
    except OSError:
        return False


def _adopt_location_keyed(source: ModelSource, target: Path) -> bool:
    """Give an entry an earlier release made from this very file the content key (a rename).

    Its bytes stay the ones stores written with it fingerprinted (dequantising again with
    another transformers could save different ones), and the 30 s of dequantising are saved.
    The rename itself is the claim: of two processes adopting or pruning the same entry, one
    gets it. The marker is written after it; until then the entry is only unmarked, which no
    prune acts on (a prune never removes the target, nor an entry with other bytes than its own)."""
    old = _location_keyed_path(source)
    if old == target or not (old / "config.json").is_file():
        return False
    try:
        os.rename(old, target)
    except OSError:  # a concurrent load made or adopted the target first; ``old`` is left as it was
        return (target / "config.json").is_file()
    try:
        _mark_source(target, source)
    except OSError:
        pass  # a read-only cache: the entry serves unmarked
    return True


def _own_entry(source: ModelSource, target: Path) -> Path | None:
    """This environment's entry from before the content key, where it must still be used.

    When another environment's copy took the content key first, this environment's stores were
    written with its own copy. Byte-identical copies are the normal case: the old one is
    removed. A copy with other bytes (another transformers dequantised it) keeps being loaded
    here, marked so that it is not pruned, because the target would change the weight
    fingerprint its stores recorded and they would refuse to open.
    """
    old = _location_keyed_path(source)
    if old == target or not (old / "config.json").is_file():
        return None
    if (old / _GGUF_SOURCE).is_file():
        return old  # compared before and kept
    if _same_weights(old, target):
        claimed = set_aside(old, ".claim-")
        if claimed is not None:
            shutil.rmtree(claimed, ignore_errors=True)
        return None
    try:
        if weights_fingerprint([old]) is None or not (old / "config.json").is_file():
            return None  # adopted or pruned meanwhile: both only take copies of the target's bytes
        _mark_source(old, source)
    except OSError:
        if not (old / "config.json").is_file():
            return None
        # else a read-only cache: compared again next time
    logger.info("%s holds other bytes than %s: this environment keeps loading it", old, target)
    return old


def _prune_location_keyed(target: Path, grace_s: float = _LEGACY_GRACE_S) -> list[Path]:
    """Remove entries of the same GGUF file name written under the old location key that hold
    exactly the target's weights (each was a copy made for one environment's path).

    Those carry no ``gguf.sha256``. Entries with other bytes stay: another GGUF content of the
    same name, or another transformers' dequantisation, which some environment's stores may
    have fingerprinted. Entries that carry the marker stay, and so do unmarked ones younger
    than ``grace_s`` (an earlier release may be loading from them). An entry without
    ``config.json`` is one an interrupted release left incomplete; it goes once old.
    """
    stem = target.name.rsplit("-", 1)[0]
    removed = []
    now = time.time()
    for entry in target.parent.iterdir():
        key = entry.name[len(stem) + 1 :]
        if not entry.name.startswith(f"{stem}-") or len(key) != 16 or not set(key) <= set("0123456789abcdef"):
            continue  # another model's entry, or not a cache entry at all
        if entry == target or not entry.is_dir() or (entry / _GGUF_SOURCE).is_file():
            continue
        try:
            made, complete = (entry / "config.json").stat().st_mtime, True
        except OSError:
            try:
                made, complete = entry.stat().st_mtime, False
            except OSError:
                continue  # removed by another process meanwhile
        if now - made < grace_s or (complete and not _same_weights(entry, target)):
            continue
        claimed = set_aside(entry, ".claim-")  # the pruner that gets it removes it
        if claimed is None:
            continue  # adopted or removed by another process meanwhile
        shutil.rmtree(claimed, ignore_errors=True)
        removed.append(entry)
    return removed


def materialise_gguf(source: ModelSource) -> Path:
    """Dequantise a GGUF model once into a safetensors directory and return that directory.

    transformers dequantises GGUF on every load, which is slow on a CPU; from the cache a
    later load is a plain directory load. The entry is found by the file's content, so
    environments that install the same GGUF share it. Delete the folder
    (``landmark-rag info`` prints it) to clear it.
    """
    import torch
    from transformers import AutoModel, AutoTokenizer

    target = _gguf_cache_path(source)
    if not (target / "config.json").is_file():
        if _adopt_location_keyed(source, target):
            logger.info("cache entry of %s moved to %s (keyed by the file's content)", source.gguf_file, target)
        else:
            logger.info("dequantising %s once into %s", source.gguf_file, target)
            tokenizer = AutoTokenizer.from_pretrained(source.path, gguf_file=source.gguf_file)
            model = AutoModel.from_pretrained(
                source.path, gguf_file=source.gguf_file, dtype=torch.float32, **_dequantise_kwargs()
            )
            _drop_gguf_quantizer(model)
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = staging_dir(target.parent)
            try:
                model.save_pretrained(tmp, safe_serialization=True)
                tokenizer.save_pretrained(tmp)
                _mark_source(tmp, source)
                os.replace(tmp, target)  # atomic: a concurrent or interrupted load never sees half a cache
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                if not (target / "config.json").is_file():  # else a concurrent load finished first
                    raise
        for entry in _prune_location_keyed(target):
            logger.info("removed %s: an older copy of the same weights", entry)
        remove_leftovers(target.parent, (".tmp-", ".claim-"))
    own = _own_entry(source, target)
    return target if own is None else own


def _dequantise_kwargs() -> dict[str, Any]:
    # Newer transformers (5.x) can keep GGUF weights packed; ask for plain dense weights,
    # which is what the safetensors cache must hold. Older versions always dequantise.
    try:
        from transformers import GgufConfig
    except ImportError:
        return {}
    return {"quantization_config": GgufConfig(dequantize=True)}


def _drop_gguf_quantizer(model: Any) -> None:
    """Mark a fully dequantised GGUF model as a plain model so it can be saved.

    transformers 5.x keeps the GGUF quantizer attached even when every weight was unpacked
    to a dense tensor, and then refuses ``save_pretrained``. The weights are ordinary float
    tensors (checked here), so the marker is all that needs removing.
    """
    if getattr(model, "hf_quantizer", None) is None:
        return
    packed = [n for n, p in model.named_parameters() if not p.dtype.is_floating_point]
    if packed:
        raise RuntimeError(f"GGUF weights are still packed after dequantising (e.g. {packed[0]}); cannot cache them")
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config


def pick_device(device: str | torch.device | None) -> torch.device:
    """cuda > mps > cpu unless the caller chose."""
    import torch

    if device is not None:
        return torch.device(device)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def pick_dtype(device: torch.device, dtype: str | torch.dtype | None) -> torch.dtype:
    """bf16 (else fp16) on accelerators, fp32 on CPU, unless the caller chose."""
    import torch

    if dtype is not None:
        return getattr(torch, dtype) if isinstance(dtype, str) else dtype
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device.type == "mps":
        return torch.float16
    return torch.float32


def load_hf(
    path: str, *, dtype: torch.dtype, trust_remote_code: bool, attn_implementation: str | None
) -> tuple[Any, Any]:
    """Load tokenizer and base model (no LM head) from a directory or hub name."""
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    if Path(path).is_dir() and not Path(path, "config.json").is_file():
        # checked here: transformers raises a bare ValueError about tokenizers for this case
        raise ModelNotFoundError(f"could not load a model from directory {path!r}: it has no config.json")
    kwargs: dict[str, Any] = {"trust_remote_code": trust_remote_code}
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # a per-load "Loading weights" bar is noise in a library
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
        try:
            model = AutoModel.from_pretrained(
                path, dtype=dtype, attn_implementation=attn_implementation or "sdpa", use_safetensors=True, **kwargs
            )
        except (ValueError, ImportError) as exc:
            # e.g. MPNet: "does not support an attention implementation through
            # torch.nn.functional.scaled_dot_product_attention yet" -> its default (eager)
            message = str(exc).lower()
            if attn_implementation or not ("sdpa" in message or "scaled_dot_product_attention" in message):
                raise
            model = AutoModel.from_pretrained(path, dtype=dtype, use_safetensors=True, **kwargs)
    except OSError as exc:
        if Path(path).is_dir():
            raise ModelNotFoundError(f"could not load a model from directory {path!r}: {exc}") from exc
        raise ModelNotFoundError(
            f"{path!r} is not a local model directory, a .gguf file, or a known alias "
            f"({', '.join(sorted(ALIASES))}), and loading it from the Hugging Face hub failed "
            f"(offline, or no such repository): {exc}"
        ) from exc
    finally:
        if bars:
            hf_logging.enable_progress_bar()
    return tokenizer, model
