"""The query half of a :class:`LandmarkEncoder`, exported to ONNX for a fast cold start.

Why this exists: a cold ``landmark-rag query`` spends almost all its time importing torch
and transformers (whose model classes pull in ``torch._dynamo``, ``torch.distributed.tensor``
and sympy) and loading weights, not encoding the question. ONNX Runtime with the
``tokenizers`` library imports in a fraction of that and runs the same network: the query
vectors agree with the torch encoder's to float rounding (tests/encode/test_onnx_query.py;
the timings are in docs/benchmarks.md).

How it is used: whenever the CLI has the torch encoder loaded anyway (``index``, or a query
that found no export), it writes the query network of the store's model once into the cache
(``cache_dir()/onnx-query/KEY``: ``model.onnx``, the tokenizer's ``tokenizer.json`` and
``query.json`` with the config and input layout). ``KEY`` hashes the model identity the
store records (name, pooling, landmark set-up, weights fingerprint), so a later ``query`` on
that store finds it without loading anything, and re-checks the fingerprint against the
weight files it was exported from before trusting it. Settings that change searches but not
query vectors (``fusion``, ``expansion``) are read from the model's current
``landmark_config.json`` when the export is loaded, as the torch path reads them, so a release
that changes only them reaches a cold query too. The export needs torch's ONNX exporter
(``onnx``); the fast path needs only ``onnxruntime`` (both in the ``onnx`` extra). Without
them, or with ``LANDMARK_RAG_ONNX=0``, everything runs on torch as before.

Only bidirectional encoders with full attention are exported (MiniLM, mpnet and their
landmark fine-tunes); causal models and isolated landmarks keep the torch path.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import shutil
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from landmark_rag.encode.config import LandmarkConfig, Pooling
from landmark_rag.encode.layout import Layout
from landmark_rag.encode.models.fingerprint import weights_fingerprint
from landmark_rag.encode.models.loading import cache_dir
from landmark_rag.staging import remove_leftovers, set_aside, staging_dir

logger = logging.getLogger(__name__)

#: Bumped when the export's files or layout change: old exports are then ignored.
EXPORT_VERSION = 1
#: Environment variable that switches the ONNX query path off (``0``, ``false``, ``no``).
ENV_SWITCH = "LANDMARK_RAG_ONNX"
_FILES = ("model.onnx", "tokenizer.json", "query.json")
#: Config fields that change how a model searches, not its query vectors: never frozen in an export.
SEARCH_SETTINGS = ("fusion", "expansion", "expansion_params")


def enabled() -> bool:
    """Whether the ONNX query path may be used (``LANDMARK_RAG_ONNX`` is not 0/false/no)."""
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "false", "no", "off")


def export_key(identity: dict[str, Any]) -> str | None:
    """The cache folder name for a model identity; ``None`` without a weights fingerprint
    (weights that match no files on disk cannot be recognised later)."""
    if not identity.get("weights_fingerprint"):
        return None
    blob = json.dumps({"v": EXPORT_VERSION, "identity": identity}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def export_path(identity: dict[str, Any], root: Path | None = None) -> Path | None:
    key = export_key(identity)
    return None if key is None else (root or cache_dir()) / "onnx-query" / key


def exportable(encoder: Any) -> bool:
    """Whether ``encoder``'s query network can go through the ONNX path."""
    device = getattr(encoder, "device", None)
    return (
        getattr(encoder, "model", None) is not None  # a torch encoder (not already an export)
        and not encoder.causal
        and getattr(device, "type", None) == "cpu"
        and encoder.config.landmark_attention == "full"
        and bool(getattr(encoder, "weight_locations", None))
        and encoder.config.weights_fingerprint is not None
        and hasattr(encoder.tokenizer, "backend_tokenizer")
    )


def export_query_model(encoder: Any, root: Path | None = None) -> Path | None:
    """Write ``encoder``'s query network to the cache once; returns its folder (``None`` when
    the encoder cannot be exported or the exporter is missing). Safe to call often: an
    existing export is returned as it is, and a new one appears atomically (a folder renamed
    into place), so concurrent processes never read half a file."""
    if not exportable(encoder):
        return None
    target = export_path(encoder.config.identity(), root)
    if target is None:
        return None
    if all((target / f).is_file() for f in _FILES) and _points_at(target, encoder):
        return target
    try:
        import onnx  # noqa: F401 - the exporter needs it; without it, say so once and stay on torch
        import torch
    except ImportError:
        logger.info("onnx is not installed: queries keep loading torch (pip install 'landmark-rag[onnx]')")
        return None
    tmp: Path | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = staging_dir(target.parent)
        model = _HiddenStates(encoder.model).eval()
        layout = encoder.layout
        ids = torch.tensor([[*layout.prefix_ids, layout.lmk_id, *layout.suffix_ids]], dtype=torch.long)
        with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
            # the TorchScript exporter is deprecated in favour of the dynamo one, which needs
            # onnxscript and a long trace; this one is quick and its graph is exact
            warnings.simplefilter("ignore")
            torch.onnx.export(
                model, (ids, torch.ones_like(ids)), str(tmp / "model.onnx"),
                input_names=["input_ids", "attention_mask"], output_names=["hidden"],
                dynamic_axes={n: {0: "batch", 1: "tokens"} for n in ("input_ids", "attention_mask", "hidden")},
                opset_version=17, dynamo=False,
            )
        encoder.tokenizer.backend_tokenizer.save(str(tmp / "tokenizer.json"))
        meta = {
            "version": EXPORT_VERSION,
            "config": {**encoder.config.to_dict(), "weights_fingerprint": encoder.config.weights_fingerprint},
            "weight_locations": [os.fspath(p) for p in encoder.weight_locations if p],
            "prefix_ids": list(layout.prefix_ids), "suffix_ids": list(layout.suffix_ids),
            "lmk_id": int(layout.lmk_id), "pad_id": int(layout.pad_id), "budget": int(layout.budget),
            "dim": int(encoder.dim),
        }
        (tmp / "query.json").write_text(json.dumps(meta, indent=1, sort_keys=True))
        _publish(tmp, target)
        remove_leftovers(target.parent, (".tmp-", ".stale-"))
        return target if all((target / f).is_file() for f in _FILES) else None
    except Exception as exc:  # noqa: BLE001 - an export is an optimisation: never fail the command
        logger.warning("could not export the query model to ONNX (%s: %s); queries keep using torch",
                       type(exc).__name__, exc)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        return None


def _publish(new: Path, target: Path) -> None:
    """Rename the finished export ``new`` to ``target``, replacing a damaged one there.

    A rename onto a folder that is not empty fails. When that folder is a complete export,
    another process got there first and theirs is as good; when files are missing from it, it
    is moved aside first, or every later command would export again and never replace it."""
    try:
        new.rename(target)
        return
    except OSError:
        if all((target / f).is_file() for f in _FILES):
            shutil.rmtree(new, ignore_errors=True)
            return
    stale = set_aside(target, f".stale-{target.name}-")
    try:
        new.rename(target)
    except OSError:
        shutil.rmtree(new, ignore_errors=True)  # a concurrent export took the place: theirs serves
    if stale is not None:
        shutil.rmtree(stale, ignore_errors=True)


def _points_at(folder: Path, encoder: Any) -> bool:
    """Whether the export in ``folder`` records ``encoder``'s weight files, made so if it can be.

    The export is keyed by the weights' content, but a cold query checks them where the export
    recorded them. When the same weights are now found elsewhere (a new virtual environment, a
    moved cache folder), the old locations are gone and every cold query would load torch
    again, for good; so the record is pointed at the new ones (one small file, replaced
    atomically). ``False`` when the record is unreadable: the export is then made again."""
    current = [os.fspath(p) for p in encoder.weight_locations if p]
    record = folder / "query.json"
    try:
        meta = json.loads(record.read_text())
        recorded = meta["weight_locations"]
    except (OSError, ValueError, KeyError, TypeError):
        stale = set_aside(folder, f".stale-{folder.name}-")  # out of the new export's way, atomically
        if stale is not None:
            shutil.rmtree(stale, ignore_errors=True)
        return False
    if recorded == current:
        return True
    tmp = record.with_name(f".query.json.{secrets.token_hex(6)}")  # unique per thread, too
    try:
        tmp.write_text(json.dumps({**meta, "weight_locations": current}, indent=1, sort_keys=True))
        os.replace(tmp, record)
    except OSError as exc:  # a read-only cache: cold queries keep loading torch, nothing fails
        logger.info("could not update the ONNX query export in %s (%s)", folder, exc)
        tmp.unlink(missing_ok=True)
    return True


def _HiddenStates(model: Any) -> Any:
    import torch

    class HiddenStates(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            out = self.inner(input_ids=input_ids, attention_mask=attention_mask)
            return out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]

    return HiddenStates(model)


class _Tokenizer:
    """The slice of a Hugging Face tokenizer that ``Layout.query_jobs`` calls."""

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer

        self.backend = Tokenizer.from_file(str(path))
        self.backend.no_truncation()
        self.backend.no_padding()

    def __call__(self, texts: Sequence[str], add_special_tokens: bool = True, **_: Any) -> dict[str, list[list[int]]]:
        enc = self.backend.encode_batch(list(texts), add_special_tokens=add_special_tokens)
        return {"input_ids": [e.ids for e in enc]}


class OnnxQueryEncoder:
    """Encodes queries exactly as the exported :class:`LandmarkEncoder` does, without torch.

    It has the encoder's query-side surface (``config``, ``dim``, ``model_name``,
    ``encode_query``, ``encode_queries``, ``count_tokens``), which is all a read-only
    :class:`~landmark_rag.LandmarkIndex` uses. It cannot encode documents.
    """

    def __init__(self, folder: Path, *, threads: int | None = None) -> None:
        import onnxruntime as ort

        meta = json.loads((folder / "query.json").read_text())
        data = dict(meta["config"])
        fingerprint = data.pop("weights_fingerprint", None)
        self.weight_locations = list(meta["weight_locations"])
        self.config = LandmarkConfig.from_dict({**data, **_current_search_settings(self.weight_locations)})
        self.config.weights_fingerprint = fingerprint
        self.dim = int(meta["dim"])
        self.tokenizer = _Tokenizer(folder / "tokenizer.json")
        self.layout = _query_layout(self.tokenizer, self.config, meta)
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"])
        self.folder = folder

    @property
    def model_name(self) -> str:
        return str(self.config.model_name)

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer.backend.encode(text, add_special_tokens=False).ids)

    def encode_query(self, text: str) -> np.ndarray:
        return self.encode_queries([text])[0]

    def encode_queries(self, texts: Sequence[str], *, batch_size: int = 64, show_progress: bool = False) -> np.ndarray:
        """Queries as a float32 ``[n, dim]`` array, L2-normalised (same layout and pooling as
        ``LandmarkEncoder.encode_queries``: ``Layout.query_jobs``)."""
        if isinstance(texts, str):
            raise TypeError("encode_queries takes a list of texts; use encode_query for one")
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        jobs = self.layout.query_jobs(texts)
        order = sorted(range(len(jobs)), key=lambda j: len(jobs[j].ids))
        landmark = self.layout.query_pooling is Pooling.LANDMARK
        for i in range(0, len(order), max(1, batch_size)):
            batch = [jobs[j] for j in order[i : i + batch_size]]
            width = max(len(j.ids) for j in batch)
            ids = np.full((len(batch), width), self.layout.pad_id, dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for r, job in enumerate(batch):
                ids[r, : len(job.ids)] = job.ids
                mask[r, : len(job.ids)] = 1
            hidden = self.session.run(None, {"input_ids": ids, "attention_mask": mask})[0].astype(np.float32)
            for r, job in enumerate(batch):
                s, e = int(job.starts[0]), int(job.ends[0])
                out[job.sentences[0]] = hidden[r, e - 1] if landmark else hidden[r, s:e].mean(0)
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out


def _query_layout(tokenizer: _Tokenizer, config: LandmarkConfig, meta: dict[str, Any]) -> Layout:
    """The exported encoder's layout as far as queries use it: they are never cut into
    sentences nor windows, so those two sizes take neutral values."""
    prefix, suffix = tuple(meta["prefix_ids"]), tuple(meta["suffix_ids"])
    budget = int(meta["budget"])
    return Layout(
        tokenizer=tokenizer, causal=False, max_length=budget + len(prefix) + len(suffix), budget=budget,
        overlap=0, max_sentence_tokens=budget, prefix_ids=prefix, suffix_ids=suffix,
        lmk_token=str(config.lmk_token), lmk_id=int(meta["lmk_id"]), pad_id=int(meta["pad_id"]),
        pooling=config.pooling, query_pooling=config.query_pooling, query_instruction=config.query_instruction,
        landmark_attention=config.landmark_attention, landmark_span=config.landmark_span,
    )


def _current_search_settings(locations: Sequence[str]) -> dict[str, Any]:
    """``fusion`` and ``expansion`` as the torch path would find them now: the model's
    ``landmark_config.json`` (the last weight location that has one: an adapter's folder after
    its base), or, for a plain model without one, the package's config for plain
    bidirectional models (only those are exported)."""
    from landmark_rag.encode.models.registry import plain_bidirectional_config

    current: LandmarkConfig | None = None
    for location in reversed(locations):
        folder = Path(location)
        if (folder / "landmark_config.json").is_file():
            current = LandmarkConfig.load(folder)
            break
    data = (current or plain_bidirectional_config()).to_dict()
    return {k: data[k] for k in SEARCH_SETTINGS if k in data}


def load_query_encoder(identity: dict[str, Any], root: Path | None = None) -> OnnxQueryEncoder | None:
    """The exported query encoder for a store's recorded model identity, or ``None``.

    ``None`` when the path is switched off, ``onnxruntime`` is missing, nothing was exported
    for this identity, or the weight files it was exported from are gone or changed (their
    fingerprint no longer matches): the caller then loads the torch encoder, which reports
    any real mismatch.
    """
    if not enabled():
        return None
    folder = export_path(identity, root)
    if folder is None or not all((folder / f).is_file() for f in _FILES):
        return None
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return None
    try:
        meta = json.loads((folder / "query.json").read_text())
        locations = meta["weight_locations"]
        if not all(Path(p).exists() for p in locations):
            return None
        if weights_fingerprint(locations) != identity.get("weights_fingerprint"):
            return None
        return OnnxQueryEncoder(folder)
    except Exception as exc:  # noqa: BLE001 - a damaged cache entry: fall back, never fail the query
        logger.warning("ignoring the ONNX query export in %s (%s: %s)", folder, type(exc).__name__, exc)
        return None


__all__ = [
    "ENV_SWITCH", "EXPORT_VERSION", "OnnxQueryEncoder", "enabled", "export_key", "export_path",
    "export_query_model", "exportable", "load_query_encoder",
]
