"""``landmark_config.json``: how a model directory is used as a landmark encoder."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from enum import Enum
from pathlib import Path
from typing import Any, Literal

CONFIG_NAME = "landmark_config.json"


class Pooling(str, Enum):
    """How one vector is pooled per sentence (documents) or per query.

    A ``str`` subclass that hashes, prints and serialises as its value, so configs, JSON files
    and store identities hold the same strings as before it was an enum.
    """

    LANDMARK = "landmark"
    MEAN = "mean"
    SENTENCE = "sentence"

    __hash__ = str.__hash__
    __str__ = str.__str__

    def __format__(self, format_spec: str) -> str:
        return str.__format__(self, format_spec)

    @property
    def reduction(self) -> Pooling:
        """What ``encode.pooling.pool`` does with a job of this pooling: ``LANDMARK`` takes
        the landmark's state; ``MEAN`` and ``SENTENCE`` (a lone sentence is its own job)
        average the span."""
        return Pooling.LANDMARK if self is Pooling.LANDMARK else Pooling.MEAN


#: What ``query_pooling`` may be: a query is one text, so it has no ``sentence`` pooling.
QUERY_POOLINGS = (Pooling.LANDMARK, Pooling.MEAN)


@dataclass
class LandmarkConfig:
    """Everything besides the weights that decides what a vector means.

    pooling:
        ``landmark`` - hidden state at the LMK placed after each sentence (the paper);
        ``mean`` - mean of the sentence's own tokens, computed in context (late chunking);
        ``sentence`` - each sentence encoded alone, mean-pooled (context-free; the honest
        baseline used as the untrained default, because untrained in-context pooling
        measures worse on data/squad-v1.1-dev-part-a.json, see docs/benchmarks.md).
    query_pooling:
        ``landmark`` - ``query + LMK``, pooled at the LMK; ``mean`` - mean over the query's
        tokens (sentence-transformers style).
    lmk_token / lmk_is_new:
        the landmark token; an existing token (``[SEP]``, EOS) or a new special token that
        was added to the vocabulary (saved with the model). ``None`` picks ``[SEP]`` for
        bidirectional and EOS for causal models.
    max_length / window_overlap:
        tokens per encoder window (``None``: the model's maximum positions, capped at 8192)
        and the overlap between consecutive windows of a long document.
    max_sentence_tokens:
        longer sentences are cut into pieces (``None``: half a window, at most 256).
    causal:
        ``None`` detects it from the model config.
    base_model:
        for an adapter-only directory: the model (alias or path) the adapter applies to.
    expansion / expansion_params:
        the boundary expansion that suits this model's vectors, used wherever the caller
        names none. ``front`` (the paper) assumes position-aware training made a hit the
        end of its span; a model whose hit lands on the answer sentence itself (e.g. trained
        with in-context mean pooling) is better served by ``surround``; ``evidence`` reads
        like either window and, under a token budget, grows the best passage into the
        evidence around its hit (the shipped default model's).
    landmark_attention:
        ``full`` (every token sees every token: the paper's layout, and the only one for causal
        models) or ``isolated`` (bidirectional models with a new landmark token: text never
        sees landmarks, a landmark sees only its own sentence's contextual tokens;
        ``encode.attention``), ``prefix`` (as isolated, but a landmark reads all text up to its
        sentence's end) or ``causal`` (as isolated, and text tokens read only their own and
        earlier sentences, so a vector carries nothing after its sentence: the causal LLM's
        property that makes a hit mark the end of its span). Part of :meth:`identity`; saved
        only when not ``full``.
    landmark_span:
        with ``isolated`` or ``causal`` landmarks, how many sentences a landmark reads: its own
        and the ``span - 1`` before it (``encode.attention``). Part of :meth:`identity` and
        saved only when not 1.
    fusion:
        the search mode this model defaults to and how it fuses its vectors with sentence-level
        BM25 (``landmark_rag.retrieve.fusion.FusionConfig``: ``mode`` hybrid/dense/lexical,
        ``method`` rrf/linear, ``weight``, ``rrf_k``, ``depth``, ``language``, ``lexical_context``,
        ``bm25_k1``, ``bm25_b``), chosen on
        validation data. Empty means dense only, so models that predate hybrid search keep
        their behaviour. Not part of :meth:`identity`: it changes queries, not vectors.
    """

    pooling: Pooling = Pooling.LANDMARK
    query_pooling: Pooling = Pooling.LANDMARK
    lmk_token: str | None = None
    lmk_is_new: bool = False
    query_instruction: str = ""
    max_length: int | None = None
    window_overlap: int | None = None
    max_sentence_tokens: int | None = None
    similarity: Literal["cosine"] = "cosine"
    causal: bool | None = None
    base_model: str | None = None
    model_name: str | None = None
    expansion: Literal["front", "surround", "adaptive", "evidence"] = "front"
    expansion_params: dict[str, Any] = field(default_factory=dict)
    landmark_attention: Literal["full", "isolated", "prefix", "causal"] = "full"
    landmark_span: int = 1
    fusion: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    #: Set when weights are loaded (``encode.models.fingerprint``); never saved with the config.
    weights_fingerprint: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.pooling not in tuple(Pooling):
            raise ValueError(f"pooling must be 'landmark', 'mean' or 'sentence', not {self.pooling!r}")
        if self.query_pooling not in QUERY_POOLINGS:
            raise ValueError(f"query_pooling must be 'landmark' or 'mean', not {self.query_pooling!r}")
        self.pooling, self.query_pooling = Pooling(self.pooling), Pooling(self.query_pooling)
        if self.expansion not in ("front", "surround", "adaptive", "evidence"):
            raise ValueError(f"expansion must be 'front', 'surround', 'adaptive' or 'evidence', not {self.expansion!r}")
        if self.landmark_attention not in ("full", "isolated", "prefix", "causal"):
            raise ValueError(
                f"landmark_attention must be 'full', 'isolated', 'prefix' or 'causal', not {self.landmark_attention!r}"
            )
        if not isinstance(self.landmark_span, int) or self.landmark_span < 1:
            raise ValueError(f"landmark_span must be a whole number >= 1, not {self.landmark_span!r}")
        if self.landmark_span != 1 and self.landmark_attention not in ("isolated", "causal"):
            raise ValueError(f"landmark_span applies to isolated or causal landmarks, not {self.landmark_attention!r}")
        if self.landmark_attention != "full" and self.causal:
            raise ValueError(f"landmark_attention={self.landmark_attention!r} is for bidirectional encoders; a causal model's "
                             "landmark already sees only the text before it")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LandmarkConfig:
        known = {f.name for f in fields(cls)}
        unknown = {k: v for k, v in data.items() if k not in known}
        cfg = cls(**{k: v for k, v in data.items() if k in known})
        cfg.extra.update(unknown)  # kept, so newer configs round-trip through older code
        return cfg

    @classmethod
    def load(cls, directory: str | Path) -> LandmarkConfig | None:
        path = Path(directory) / CONFIG_NAME
        if not path.is_file():
            return None
        return cls.from_dict(json.loads(path.read_text()))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["pooling"], data["query_pooling"] = self.pooling.value, self.query_pooling.value
        data.pop("weights_fingerprint", None)
        if data.get("landmark_attention") == "full":  # configs saved before it existed stay byte-identical
            data.pop("landmark_attention")
        if data.get("landmark_span") == 1:
            data.pop("landmark_span")
        extra = data.pop("extra")
        data.update(extra)
        return data

    def save(self, directory: str | os.PathLike[str]) -> None:
        Path(directory, CONFIG_NAME).write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n")

    def identity(self) -> dict[str, Any]:
        """The fields a vector store must match to mix vectors safely.

        ``weights_fingerprint`` is included once weights are loaded; a store compares it only
        when it has one recorded (stores written before it existed still open).
        """
        out: dict[str, Any] = {
            "model_name": self.model_name,
            "pooling": self.pooling.value,
            "query_pooling": self.query_pooling.value,
            "lmk_token": self.lmk_token,
            "query_instruction": self.query_instruction,
        }
        if self.landmark_attention != "full":
            out["landmark_attention"] = self.landmark_attention
        if self.landmark_span != 1:
            out["landmark_span"] = self.landmark_span
        if self.weights_fingerprint:
            out["weights_fingerprint"] = self.weights_fingerprint
        return out
