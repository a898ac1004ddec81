"""Training landmark encoders: position-aware contrastive learning over all sentence
vectors of a document, in three stages (pairwise, pseudo long documents, long-document QA)
fed to one accelerate-based trainer, with optional LoRA and self-distillation from the base
model's per-sentence embedding.

Needs the ``train`` extra (peft) for LoRA.
"""

from landmark_rag.train.config import StageConfig, TrainConfig, TrainingInputError
from landmark_rag.train.documents import SegmentedArticle
from landmark_rag.train.examples import Batch, TrainExample
from landmark_rag.train.loss import distillation_loss, position_aware_contrastive_loss, position_weights
from landmark_rag.train.trainer import Trainer, load_articles, train
from landmark_rag.train.validation import gold_sentence_ranks, recall_metrics, validate

__all__ = [
    "Batch",
    "SegmentedArticle",
    "StageConfig",
    "TrainConfig",
    "TrainExample",
    "Trainer",
    "TrainingInputError",
    "distillation_loss",
    "gold_sentence_ranks",
    "load_articles",
    "position_aware_contrastive_loss",
    "position_weights",
    "recall_metrics",
    "train",
    "validate",
]
