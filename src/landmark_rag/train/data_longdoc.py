"""Stage 3 data: long-document QA - windows of whole SQuAD-format articles.

A training document is a run of consecutive article sentences that fits one encoder window,
placed at a random offset around a sampled question's answer so that answers are seen at
every position of a window (inference pools each sentence from whichever window gives it
the most balanced context). With ``inference_overlap`` set, the windows are instead exactly
the ones inference plans for the article (encode.windows.plan_windows), and a question is
trained in the window its answer's last sentence is pooled from: the model learns the
contexts it will be given, window edges included. Every other sentence of the window is a
hard negative, the neighbouring sentences of the answer included.

A distillation-only stage (``contrastive_weight=0``) needs no questions: documents without
any (plain text) then give windows around a random sentence, with no queries.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

from landmark_rag.encode.windows import plan_windows
from landmark_rag.train.config import TrainingInputError
from landmark_rag.train.documents import SegmentedArticle
from landmark_rag.train.examples import Batch, TrainExample


class LongDocBuilder:
    """Batches of article windows with their questions' answer-sentence spans."""

    def __init__(
        self,
        articles: Sequence[SegmentedArticle],
        unit_tokens: Sequence[Sequence[int]],
        window_tokens: int,
        *,
        examples_per_batch: int = 2,
        queries_per_example: int = 8,
        span_context: int = 0,
        landmark_tokens: int = 1,
        contrastive_weight: float = 1.0,
        inference_overlap: int | None = None,
        causal: bool = False,
    ) -> None:
        """``unit_tokens[a][i]``: token count of sentence ``i`` of article ``a``;
        ``landmark_tokens`` is added per sentence (1 with a landmark, 0 for mean pooling);
        ``span_context``: extra sentences before the answer counted as (down-weighted)
        positives, within the answer's paragraph - the position-aware part of the objective;
        ``contrastive_weight`` 0 (distillation only) also uses documents without questions;
        ``inference_overlap``: train on the windows inference plans with this overlap
        (``causal``: plan them as for a left-context-only encoder)."""
        unlabelled = not contrastive_weight
        self.articles = [a for a in articles if a.sentences and (a.article.questions or unlabelled)]
        lengths = {id(a): t for a, t in zip(articles, unit_tokens, strict=True)}
        self.lengths = [[n + landmark_tokens for n in lengths[id(a)]] for a in self.articles]
        self.window_tokens = window_tokens
        self.inference_overlap = inference_overlap
        self.causal = causal
        self._plans: dict[int, tuple[list[tuple[int, int]], list[int]]] = {}
        self.examples_per_batch = examples_per_batch
        self.queries_per_example = queries_per_example
        self.spans = []
        for a in self.articles:
            para_of = _paragraph_of_sentences(a)
            per_q = []
            for q in a.article.questions:
                span = a.answer_span(q)
                first = span[0]
                for _ in range(span_context):
                    if first > 0 and para_of[first - 1] == para_of[span[0]]:
                        first -= 1
                per_q.append(list(range(first, span[-1] + 1)))
            self.spans.append(per_q)

    def _window(self, a: int, span: list[int], rng: random.Random) -> tuple[int, int]:
        lens = self.lengths[a]
        n = len(lens)
        # grow from the span left/right in random proportion until the window is full
        lo, hi = span[0], span[-1] + 1
        used = sum(lens[lo:hi])
        while True:
            can_left = lo > 0 and used + lens[lo - 1] <= self.window_tokens
            can_right = hi < n and used + lens[hi] <= self.window_tokens
            if not (can_left or can_right):
                break
            go_left = can_left and (not can_right or rng.random() < 0.5)
            if go_left:
                lo -= 1
                used += lens[lo]
            else:
                used += lens[hi]
                hi += 1
        return lo, hi

    def _plan(self, a: int) -> tuple[list[tuple[int, int]], list[int]]:
        """Inference's windows over article ``a`` and the window each sentence is pooled from."""
        if a not in self._plans:
            windows, assigned = plan_windows(self.lengths[a], self.window_tokens, self.inference_overlap or 0, self.causal)
            self._plans[a] = (windows, assigned.tolist())
        return self._plans[a]

    def example(self, a: int, rng: random.Random) -> TrainExample:
        art = self.articles[a]
        if not art.article.questions:  # plain text, distillation only: a window around any sentence
            i = rng.randrange(len(art.sentences))
            lo, hi = self._window(a, [i], rng)
            return self._windowed(a, lo, hi, [])
        q0 = rng.randrange(len(art.article.questions))
        if self.inference_overlap is not None:
            # the inference window q0's answer is pooled from, and the questions whose answers
            # are pooled from it too (their spans cut at the window's start)
            windows, assigned = self._plan(a)
            w = assigned[self.spans[a][q0][-1]]
            lo, hi = windows[w]
            others = [j for j, s in enumerate(self.spans[a]) if assigned[s[-1]] == w and j != q0]
        else:
            lo, hi = self._window(a, self.spans[a][q0], rng)
            others = [j for j, s in enumerate(self.spans[a]) if s[0] >= lo and s[-1] < hi and j != q0]
        rng.shuffle(others)
        return self._windowed(a, lo, hi, [q0, *others[: self.queries_per_example - 1]])

    def _windowed(self, a: int, lo: int, hi: int, chosen: list[int]) -> TrainExample:
        """Sentences ``lo:hi`` of article ``a`` with the ``chosen`` questions and their spans."""
        art = self.articles[a]
        return TrainExample(
            units=[s.text for s in art.sentences[lo:hi]],
            queries=[art.article.questions[j].question for j in chosen],
            spans=[[i - lo for i in self.spans[a][j] if i >= lo] for j in chosen],
            doc_id=f"{art.article.title}[{lo}:{hi}]",
            spaces=["", *(s.space_before for s in art.sentences[lo + 1 : hi])],
        )

    def batches(self, rng: random.Random) -> Iterator[Batch]:
        """An endless stream; each batch holds windows of distinct articles (in-batch negatives).

        Articles are drawn in proportion to their questions (a document without questions:
        to its sentences)."""
        if not self.articles:
            raise TrainingInputError("no training documents with sentences (and questions, for a contrastive stage)")
        weights = [len(a.article.questions) or len(a.sentences) for a in self.articles]
        k = min(self.examples_per_batch, len(self.articles))
        while True:
            picked: list[int] = []
            while len(picked) < k:
                a = rng.choices(range(len(self.articles)), weights)[0]
                if a not in picked:
                    picked.append(a)
            yield [self.example(a, rng) for a in picked]


def _paragraph_of_sentences(article: SegmentedArticle) -> list[int]:
    starts = [p[0] for p in article.article.paragraphs]
    out, p = [], 0
    for s in article.sentences:
        while p + 1 < len(starts) and s.start >= starts[p + 1]:
            p += 1
        out.append(p)
    return out
