"""Sentence segmentation with exact character offsets (step 1 of the pipeline)."""

from landmark_rag.segment.segment import Segmenter, segment_sentences, split_long_sentences
from landmark_rag.segment.sentencex import sentencex_spans
from landmark_rag.segment.spans import spans_to_sentences

__all__ = [
    "Segmenter",
    "segment_sentences",
    "sentencex_spans",
    "spans_to_sentences",
    "split_long_sentences",
]
