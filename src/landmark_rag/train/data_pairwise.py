"""Stage 1 data: pairwise - a query against one passage followed by its landmark.

Each training document is a single paragraph (one unit); a batch mixes paragraphs of the
same article (hard negatives: same topic, different answer) with paragraphs of other
articles (in-batch negatives). This is the classic dense-retrieval warm-up the paper starts
from, in the same vector layout the long-document stages use.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

from landmark_rag.train.documents import SegmentedArticle, questions_by_paragraph
from landmark_rag.train.examples import Batch, TrainExample


class PairwiseBuilder:
    def __init__(
        self,
        articles: Sequence[SegmentedArticle],
        *,
        examples_per_batch: int = 8,
        queries_per_example: int = 2,
        hard_negatives: int = 3,
    ) -> None:
        """``hard_negatives``: paragraphs per batch drawn from the first paragraph's article."""
        self.paras: list[tuple[str, list[str]]] = []  # (passage, questions)
        self.by_article: list[list[int]] = []
        for d in articles:
            a = d.article
            by_paragraph = questions_by_paragraph(a)
            ids = []
            for p, (s, e) in enumerate(a.paragraphs):
                qs = by_paragraph.get(p, [])
                if qs:
                    ids.append(len(self.paras))
                    self.paras.append((a.text[s:e], qs))
            if ids:
                self.by_article.append(ids)
        self.examples_per_batch = examples_per_batch
        self.queries_per_example = queries_per_example
        self.hard_negatives = hard_negatives

    def batches(self, rng: random.Random) -> Iterator[Batch]:
        while True:
            art = rng.choice(self.by_article)
            picked = rng.sample(art, min(len(art), 1 + self.hard_negatives))
            while len(picked) < self.examples_per_batch:
                p = rng.randrange(len(self.paras))
                if p not in picked:
                    picked.append(p)
            batch = []
            for p in picked:
                passage, qs = self.paras[p]
                chosen = rng.sample(qs, min(len(qs), self.queries_per_example))
                batch.append(TrainExample([passage], chosen, [[0]] * len(chosen), doc_id=f"p{p}"))
            yield batch
