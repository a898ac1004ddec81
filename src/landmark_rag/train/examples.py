"""The one plain data type every stage's data builder produces for the trainer."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class TrainExample:
    """One document as the trainer sees it: units in order, each followed by a landmark.

    units: the texts pooled to one vector each (sentences of an article, passages of a
        pseudo long document, or a single passage in the pairwise stage).
    queries / spans: each query and its answer span as unit indices in document order
        (the last one is the sentence the query's vector should land on).
    spaces: the whitespace before each unit in the source document (``Sentence.space_before``,
        ``""`` for the first unit), so a causal model is trained on the tokens inference
        produces at paragraph breaks; ``None`` for documents assembled from separate passages
        (units joined by one space).
    Why one type: the loss only needs "which vectors are positives, with which weight",
    so all three stages feed the same trainer and differ only in how documents are built.
    """

    units: list[str]
    queries: list[str] = field(default_factory=list)
    spans: list[list[int]] = field(default_factory=list)
    doc_id: str | None = None
    spaces: list[str] | None = None

    def __post_init__(self) -> None:
        if self.spaces is not None and len(self.spaces) != len(self.units):
            raise ValueError("one space per unit")
        if len(self.queries) != len(self.spans):
            raise ValueError("one span per query")
        for span in self.spans:
            if not span or any(not 0 <= i < len(self.units) for i in span):
                raise ValueError(f"span {span} is outside the {len(self.units)} units")


#: One optimiser step's worth of documents; units of the other documents are in-batch negatives.
Batch = list[TrainExample]
