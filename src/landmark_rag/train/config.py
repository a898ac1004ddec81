"""``TrainConfig``: everything a training run depends on, loadable from JSON, YAML or TOML.

A run is fully described by this file plus the seed, so the model card can state one
command that reproduces the shipped model.
"""

from __future__ import annotations

import functools
import json
import math
import sys
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, get_args, get_origin, get_type_hints

from landmark_rag.errors import LandmarkRagError
from landmark_rag.store.bm25 import check_parameters

StageKind = Literal["pairwise", "pseudo", "longdoc"]

#: What ``train_articles`` / ``val_articles`` mean when left unset, per kind of data source:
#: the project's SQuAD convention for question files; every document for training and none
#: for validation for plain-text documents (there are no questions to validate on).
DEFAULT_SELECTION = {"squad": ("0:16", "16:24"), "text": (":", ""), "longdoc": (":", "")}


class TrainingInputError(LandmarkRagError, ValueError):
    """The user's data, article selection or stage choice cannot be trained on.

    A ``ValueError`` (existing callers keep working); the CLI turns exactly these into a
    one-line message, so an internal ``ValueError`` (a bug) still shows its traceback.
    """


@dataclass
class StageConfig:
    """One training stage: a data builder and the loss mix it feeds the shared trainer.

    ``contrastive_weight=0`` turns a stage into pure self-distillation (the base model's
    per-sentence embedding as the target of each in-context vector).
    """

    kind: StageKind = "longdoc"
    steps: int = 100
    lr: float | None = None
    contrastive_weight: float = 1.0
    distill_weight: float = 1.0
    examples_per_batch: int = 2
    queries_per_example: int = 8
    hard_negatives: int = 3  # pairwise: paragraphs of the same article per batch
    passages_per_document: int = 4  # pseudo: paragraphs per pseudo document

    def __post_init__(self) -> None:
        if self.kind not in ("pairwise", "pseudo", "longdoc"):
            raise TrainingInputError(f"stage kind must be pairwise, pseudo or longdoc, not {self.kind!r}")
        for name in ("steps", "examples_per_batch", "queries_per_example", "hard_negatives", "passages_per_document"):
            _whole(f"stage {name}", getattr(self, name), 0 if name == "hard_negatives" else 1)
        _number("stage contrastive_weight", self.contrastive_weight, 0.0)
        _number("stage distill_weight", self.distill_weight, 0.0)
        if not (self.contrastive_weight or self.distill_weight):
            raise TrainingInputError("a stage with contrastive_weight 0 and distill_weight 0 trains nothing")
        if self.lr is not None:
            _number("stage lr", self.lr, 0.0, strict=True)


@dataclass
class TrainConfig:
    base_model: str = "all-MiniLM-L6-v2"
    output_dir: str = "landmark-model"
    model_name: str | None = None  # written into landmark_config.json (vector-store identity)
    pooling: Literal["landmark", "mean"] = "mean"
    query_pooling: Literal["landmark", "mean"] = "mean"
    lmk_token: str | None = None  # None: the encoder's default ([SEP] / EOS)
    new_lmk_token: bool = False  # add "[LMK]" as a new token (with LoRA its embedding row is trained and saved too)
    lmk_init: str | None = None  # token whose embedding initialises a new [LMK] (None: the default landmark)
    # "isolated": text never sees landmarks, a landmark sees only its sentence (encode/attention.py;
    # bidirectional models with new_lmk_token); "full": the paper's layout
    landmark_attention: Literal["full", "isolated", "prefix", "causal"] = "full"
    # training only: cosine margin by which the `boundary_window` sentences just before an
    # answer must score below it (train/loss.py; a Front-k hit there loses the answer)
    boundary_margin: float = 0.0
    boundary_window: int = 2
    # training only: weight of -log P(the hit lands where the model's Front-k expansion keeps
    # the answer's last sentence: z .. z+k-1), train/loss.py; 0 leaves the paper's loss alone
    front_set_weight: float = 0.0
    # training only: weight of each query's BM25 over the batch's units (scaled 0-1 per query)
    # added to the contrastive logits, so vectors meant for hybrid search learn what BM25 misses
    # (train/lexical.py); lexical_prior_bm25 = [k1, b] of that BM25; 0 trains the vectors alone
    lexical_prior: float = 0.0
    lexical_prior_bm25: list[float] = field(default_factory=lambda: [1.5, 0.25])
    landmark_span: int = 1  # sentences an isolated/causal landmark reads (own + span-1 before)
    # SQuAD-format .json files, prepared long-document sets (.jsonl[.gz] files or the folder
    # `landmark-rag train --prepare` writes) and/or plain-text documents (.txt/.md files, or
    # folders of them). An entry is a path, or {"path": ..., "train": spec, "val": spec} to
    # select documents of that source alone (e.g. validation articles of an evaluation file
    # that trains nothing: {"path": "data/squad-v1.1-dev-part-a.json", "train": "", "val": "13:16"})
    data: list[str | dict[str, str]] = field(default_factory=lambda: ["data/squad-v1.1-dev-part-a.json"])
    # documents of each source by a selection spec (landmark_rag.datasets.select: slice "a:b",
    # comma list of indices and titles, @FILE of titles; "" for none); None: DEFAULT_SELECTION
    train_articles: str | None = None
    val_articles: str | None = None
    lora: bool = True
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.0
    # modules that get LoRA layers; None: every linear layer of the base model (peft's
    # "all-linear"), which names query/key/value/dense on BERT and XLM-R, q/k/v/o/dense on
    # MPNet, q_proj..down_proj on Llama/Mistral. The run's train_config.json records the
    # names it resolved to, so a saved recipe reproduces with any peft version.
    lora_targets: list[str] | None = None
    # the base model's own dropout while training (every dropout layer of it, attention
    # dropout included; LoRA's is lora_dropout): None keeps the model's (0.1 for MiniLM and
    # mpnet), 0 turns it off. Drawing dropout masks is about a sixth of an mpnet step on a CPU.
    model_dropout: float | None = None
    # start the LoRA weights from a trained adapter (a directory or a packaged model name,
    # e.g. "landmark-minilm") instead of zero; the result is still one adapter over base_model
    init_adapter: str | None = None
    # distillation target: None = the frozen base model's embedding of each unit ALONE;
    # a model (alias or directory) = that model's in-context vectors of the same window,
    # pooled its own way (e.g. landmark-minilm's in-context mean: "initialise the landmark
    # from the in-context mean")
    distill_model: str | None = None
    # the boundary expansion written into landmark_config.json (None: the base model's)
    expansion: Literal["front", "surround", "adaptive", "evidence"] | None = None
    expansion_params: dict[str, Any] = field(default_factory=dict)
    temperature: float = 0.05
    alpha: float = 0.08
    # training only: "sum" is the paper's loss (a query weighs the sum of its span's weights,
    # about the span's length); "mean" divides them by their sum, so every question weighs one
    span_weights: Literal["sum", "mean"] = "sum"
    # training only: 0 trains on the whole answer span; n on its last n sentences z-n+1..z
    # (the paper's spans are a few sentences; a cited story section can be forty)
    span_cap: int = 0
    span_context: int = 0
    lr: float = 2e-4
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    max_grad_norm: float = 1.0
    mixed_precision: Literal["no", "fp16", "bf16"] = "no"
    gradient_accumulation_steps: int = 1
    gradient_checkpointing: bool = False
    device: str | None = None  # None: accelerate picks (cuda > cpu)
    max_length: int | None = None  # encoder window (tokens incl. specials), saved in landmark_config.json
    window_tokens: int | None = None  # training windows; None: the encoder's window budget
    # None: training windows grow around an answer at random and inference keeps its default
    # quarter-window overlap; an int: training reads exactly the windows inference plans with
    # this overlap (saved in landmark_config.json), so the model learns the contexts it will see
    window_overlap: int | None = None
    seed: int = 0
    eval_every: int = 0  # 0: validate only after each stage
    eval_max_questions: int | None = None
    save_every: int = 0  # 0: no intermediate checkpoints
    threads: int | None = None
    # steps laid out ahead on a background thread while the current one trains (host work a GPU
    # would otherwise wait for); 0 lays each out on the training thread, after the step before
    # it: the same batches and losses, no overlap (to tell a device problem from a thread one)
    prefetch: int = 2
    # None: default_stages() of the data - one contrastive long-document stage when the
    # training documents have questions, one distillation-only stage when they have none
    stages: list[StageConfig] | None = None

    def __post_init__(self) -> None:
        # checked here, before any data is read or a step is trained: a typo found when the
        # run saves its first checkpoint costs the whole run
        if isinstance(self.data, str):  # one path, as a YAML or TOML config naturally writes it
            self.data = [self.data]
        for name, allowed in _choices().items():
            if getattr(self, name) not in allowed:
                raise TrainingInputError(
                    f"{name} must be one of {', '.join(repr(a) for a in allowed)}, not {getattr(self, name)!r}"
                )
        for name in ("lora", "new_lmk_token", "gradient_checkpointing"):
            if not isinstance(getattr(self, name), bool):
                raise TrainingInputError(f"{name} must be true or false, not {getattr(self, name)!r}")
        if self.expansion is not None:
            from landmark_rag.expand.strategies import choose_strategy

            try:
                choose_strategy(self.expansion, self.expansion_params)
            except ValueError as e:
                raise TrainingInputError(f"expansion: {e}") from None
        elif self.expansion_params:
            raise TrainingInputError("expansion_params need an expansion (front, surround, adaptive or evidence)")
        _number("temperature", self.temperature, 0.0, strict=True)
        _number("lr", self.lr, 0.0, strict=True)
        for name in ("alpha", "weight_decay", "max_grad_norm", "boundary_margin"):
            _number(name, getattr(self, name), 0.0)
        _number("warmup_ratio", self.warmup_ratio, 0.0)
        if self.warmup_ratio >= 1:
            raise TrainingInputError(f"warmup_ratio must lie in [0, 1), got {self.warmup_ratio}")
        _whole("gradient_accumulation_steps", self.gradient_accumulation_steps, 1)
        _whole("lora_r", self.lora_r, 1)
        for name in ("span_context", "span_cap", "eval_every", "save_every", "prefetch"):
            _whole(name, getattr(self, name), 0)
        if self.model_dropout is not None and not 0.0 <= float(self.model_dropout) < 1.0:
            raise TrainingInputError(f"model_dropout must lie in [0, 1), got {self.model_dropout}")
        if self.stages is not None:
            if not isinstance(self.stages, list) or not self.stages:
                raise TrainingInputError("stages must be a non-empty list (leave it out for the default stage)")
            for s in self.stages:
                if not isinstance(s, StageConfig | dict):
                    raise TrainingInputError(f"a stage is a table of stage options, not {s!r}")
            try:
                self.stages = [s if isinstance(s, StageConfig) else StageConfig(**s) for s in self.stages]
            except TypeError as e:  # an unknown stage option
                raise TrainingInputError(f"stage: {e}") from None
        if self.init_adapter and not self.lora:
            raise TrainingInputError("init_adapter starts LoRA weights; it needs lora=true")
        _number("front_set_weight", self.front_set_weight, 0.0)
        _number("lexical_prior", self.lexical_prior, 0.0)
        if not isinstance(self.lexical_prior_bm25, list | tuple) or len(self.lexical_prior_bm25) != 2:
            raise TrainingInputError(f"lexical_prior_bm25 is [k1, b], got {self.lexical_prior_bm25}")
        try:
            check_parameters(*self.lexical_prior_bm25)
        except ValueError as e:
            raise TrainingInputError(f"lexical_prior_bm25: {e}") from None
        if self.front_set_weight and self.front_k < 1:
            raise TrainingInputError(f"front_set_weight needs a Front-k with k >= 1, got k={self.front_k}")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise TrainingInputError(f"unknown training options: {', '.join(unknown)}")
        return cls(**data)

    @classmethod
    def load(cls, path: str | Path) -> TrainConfig:
        """A JSON, YAML (``.yaml``/``.yml``) or TOML (``.toml``) file of options; a file that does
        not parse, or is not one table of options, is a ``TrainingInputError``."""
        path = Path(path)
        text = path.read_text()
        try:
            if path.suffix in (".yaml", ".yml"):
                import yaml

                try:
                    data = yaml.safe_load(text) or {}
                except yaml.YAMLError as e:
                    raise ValueError(str(e)) from None
            elif path.suffix == ".toml":
                if sys.version_info >= (3, 11):
                    import tomllib
                else:
                    import tomli as tomllib
                data = tomllib.loads(text)
            else:
                data = json.loads(text)
        except ValueError as e:  # json's and tomllib's decode errors are ValueErrors
            raise TrainingInputError(f"{path} is not a readable training config: {e}") from None
        if not isinstance(data, dict):
            raise TrainingInputError(f"{path} must hold one table of training options, not {type(data).__name__}")
        return cls.from_dict(data)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n")

    @property
    def front_k(self) -> int:
        """The k of the Front-k expansion the front-set term trains for: the model's own
        (``expansion_params["k"]`` when ``expansion`` is front), else the paper's 3."""
        if self.expansion == "front" and "k" in self.expansion_params:
            return int(self.expansion_params["k"])
        return 3

    @property
    def total_steps(self) -> int:
        return sum(s.steps for s in (self.stages if self.stages is not None else default_stages(True)))


@functools.cache
def _choices() -> dict[str, tuple[Any, ...]]:
    """The allowed values of each option that names a choice, read off its ``Literal`` type
    (``pooling``, ``query_pooling``, ``landmark_attention``, ``mixed_precision``), so a new
    value is allowed where it is declared."""
    hints = get_type_hints(TrainConfig)
    return {f.name: get_args(hints[f.name]) for f in fields(TrainConfig) if get_origin(hints[f.name]) is Literal}


def _number(name: str, value: Any, low: float, *, strict: bool = False) -> None:
    """A ``TrainingInputError`` unless ``value`` is a finite number ``>= low`` (``> low`` if ``strict``)."""
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < low or (strict and value == low):
        raise TrainingInputError(f"{name} must be a finite number {'>' if strict else '>='} {low:g}, got {value!r}")


def _whole(name: str, value: Any, low: int) -> None:
    """A ``TrainingInputError`` unless ``value`` is a whole number ``>= low``."""
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise TrainingInputError(f"{name} must be a whole number >= {low}, got {value!r}")


def default_stages(labelled: bool) -> list[StageConfig]:
    """The stages a run without ``stages`` gets.

    Data with questions: one position-aware contrastive long-document stage (plus the
    distillation term). Plain-text documents without questions: the same windows with
    ``contrastive_weight=0`` - self-distillation only, each in-context vector pulled towards
    the base model's vector of its sentence alone, which needs no labels.
    """
    return [StageConfig()] if labelled else [StageConfig(kind="longdoc", contrastive_weight=0.0)]
