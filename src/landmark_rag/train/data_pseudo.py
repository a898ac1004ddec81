"""Stage 2 data: pseudo long documents - passages concatenated, the positive at a random place.

Each training document is a run of random paragraphs (each a unit followed by a landmark)
with one positive paragraph inserted at a random position; the queries are that paragraph's
questions and every other landmark of the document is a negative. It teaches the landmark
to summarise its own passage while it can see unrelated neighbours, before stage 3 adds
topically coherent neighbours.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

from landmark_rag.train.documents import SegmentedArticle, questions_by_paragraph
from landmark_rag.train.examples import Batch, TrainExample


class PseudoDocBuilder:
    def __init__(
        self,
        articles: Sequence[SegmentedArticle],
        *,
        passages_per_document: int = 4,
        examples_per_batch: int = 2,
        queries_per_example: int = 4,
    ) -> None:
        self.paras: list[tuple[str, list[str]]] = []
        for d in articles:
            a = d.article
            by_paragraph = questions_by_paragraph(a)
            for p, (s, e) in enumerate(a.paragraphs):
                self.paras.append((a.text[s:e], by_paragraph.get(p, [])))
        self.positives = [i for i, (_, qs) in enumerate(self.paras) if qs]
        self.passages_per_document = passages_per_document
        self.examples_per_batch = examples_per_batch
        self.queries_per_example = queries_per_example

    def example(self, rng: random.Random) -> TrainExample:
        pos = rng.choice(self.positives)
        others = [p for p in rng.sample(range(len(self.paras)), self.passages_per_document) if p != pos]
        others = others[: self.passages_per_document - 1]
        at = rng.randrange(len(others) + 1)
        order = others[:at] + [pos] + others[at:]
        qs = self.paras[pos][1]
        chosen = rng.sample(qs, min(len(qs), self.queries_per_example))
        return TrainExample([self.paras[p][0] for p in order], chosen, [[at]] * len(chosen), doc_id=f"pseudo{pos}")

    def batches(self, rng: random.Random) -> Iterator[Batch]:
        while True:
            yield [self.example(rng) for _ in range(self.examples_per_batch)]
