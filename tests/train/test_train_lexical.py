"""The batch's BM25 prior: rows per query, columns per unit, scaled as hybrid search scales BM25."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from landmark_rag.store.analyzer import make_analyzer
from landmark_rag.store.bm25 import BM25Index
from landmark_rag.train.config import TrainConfig, TrainingInputError
from landmark_rag.train.examples import TrainExample
from landmark_rag.train.lexical import lexical_prior

ANALYZE = make_analyzer("english")

BATCH = [
    TrainExample(
        units=["The Times is a British newspaper.", "It was founded in 1785 by John Walter.", "Its offices are in London."],
        queries=["When did John Walter found the newspaper?", "Which city has the offices?"],
        spans=[[1], [2]],
    ),
    TrainExample(
        units=["Prime numbers have two divisors.", "Euclid proved that there are infinitely many."],
        queries=["Who proved there are infinitely many primes?", "What colour is the sky?"],
        spans=[[1], [0]],
    ),
]


def test_rows_are_queries_columns_are_units_scaled_to_the_weight():
    prior = lexical_prior(BATCH, ANALYZE, k1=1.5, b=0.25, weight=2.5)
    assert prior.shape == (4, 5) and prior.dtype == torch.float32
    # each query's best unit gets the weight, a unit sharing no term 0
    assert prior[0].argmax() == 1 and prior[0, 1] == pytest.approx(2.5)  # "John", "Walter", "found"
    assert prior[1].argmax() == 2 and prior[1, 2] == pytest.approx(2.5)  # "offices"
    assert prior[2].argmax() == 4 and prior[2, 4] == pytest.approx(2.5)  # "proved", "infinitely"
    assert prior[0, 0] > 0  # "newspaper" also matches the first sentence
    assert torch.all(prior[3] == 0)  # shares no term with the batch
    assert torch.all((prior >= 0) & (prior <= 2.5 + 1e-6))


def test_it_is_the_packages_bm25_over_the_batch_min_max_scaled():
    texts = [u for ex in BATCH for u in ex.units]
    index = BM25Index.from_texts([str(i) for i in range(5)], texts, ANALYZE, k1=0.9, b=0.5)
    raw = index.scores(ANALYZE(BATCH[1].queries[0]))
    want = (raw - raw.min()) / (raw.max() - raw.min())
    got = lexical_prior(BATCH, ANALYZE, k1=0.9, b=0.5, weight=1.0)[2].numpy()
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)


def test_no_queries_gives_an_empty_prior():
    plain = [TrainExample(units=["Just text."])]
    assert lexical_prior(plain, ANALYZE, k1=1.5, b=0.75, weight=1.0).shape == (0, 1)


@pytest.mark.parametrize(
    "options, message",
    [({"lexical_prior": -1.0}, "lexical_prior must"), ({"lexical_prior_bm25": [1.5]}, r"\[k1, b\]"),
     ({"lexical_prior_bm25": [1.5, 2.0]}, "lexical_prior_bm25: BM25 b")],
)
def test_bad_prior_settings_are_refused(options, message):
    with pytest.raises(TrainingInputError, match=message):
        TrainConfig(**options)
