"""``search(..., max_tokens=N)``: passages that fill a token budget (real model, real Chroma)."""

from __future__ import annotations

import itertools

import pytest

from landmark_rag import LandmarkIndex
from landmark_rag.expand import Evidence, Surround


@pytest.fixture(scope="module")
def built(tmp_path_factory, squad_articles):
    """Two whole validation articles (nothing is tuned on them here) in a fresh store."""
    arts = squad_articles[13:15]
    index = LandmarkIndex.open(tmp_path_factory.mktemp("budget") / "db")
    index.add_texts([a.text for a in arts], ids=["a", "b"])
    return index, {"a": arts[0].text, "b": arts[1].text}, arts


def tokens(index: LandmarkIndex, passages) -> int:
    return sum(index.count_tokens(p.text) for p in passages)


@pytest.mark.parametrize("budget", [1, 40, 128, 512])
def test_passages_fit_the_budget_exactly_sliced(built, budget):
    index, texts, arts = built
    for q in arts[0].questions[:5]:
        ps = index.search(q.text, max_tokens=budget)
        assert ps, "a budget always gets at least one passage"
        for p in ps:
            assert p.text == texts[p.doc_id][p.start : p.end]
            assert p.hit_indices and all(p.first_index <= i <= p.last_index for i in p.hit_indices)
        if len(ps) > 1 or index.count_tokens(ps[0].text) <= budget:
            assert tokens(index, ps) <= budget
        else:  # a single sentence longer than the whole budget comes alone
            assert ps[0].first_index == ps[0].last_index
        spans = sorted((p.doc_id, p.start, p.end) for p in ps)
        assert all(a[0] != b[0] or a[2] <= b[1] for a, b in itertools.pairwise(spans))  # never overlapping
    # passages start and end on sentences: the budget cuts between sentences, never inside one
    sents = {s.start for d in ("a", "b") for s in index.encoder.segment(texts[d], d)}
    assert all(p.start in sents for p in ps)


def test_the_budget_is_used(built):
    index, _, arts = built
    q = arts[0].questions[0].text
    small, large = index.search(q, max_tokens=100), index.search(q, max_tokens=800)
    assert tokens(index, large) > 600  # the store has far more: reading goes on until it is full
    assert tokens(index, small) <= 100


def test_k_caps_the_passages(built):
    index, _, arts = built
    q = arts[0].questions[1].text
    assert len(index.search(q, max_tokens=2000, k=2)) <= 2
    assert len(index.search(q, max_tokens=2000)) > 2
    assert len(index.search(q)) == 4  # no budget: the default k


def test_the_default_expansion_grows_the_best_passage(built):
    index, _, arts = built
    assert isinstance(index.strategy, Evidence) and index.strategy.lead > 0
    q = arts[0].questions[2].text
    grown = index.search(q, max_tokens=1024)
    windows = index.search(q, max_tokens=1024, strategy=Surround(1, 1))
    assert index.count_tokens(grown[0].text) >= index.strategy.max_tokens * 0.9 or len(grown) == 1
    assert index.count_tokens(grown[0].text) > index.count_tokens(windows[0].text)


def test_search_many_hits_and_expand_agree(built):
    index, _, arts = built
    qs = [q.text for q in arts[1].questions[:3]]
    many = index.search_many(qs, max_tokens=256)
    for q, ps in zip(qs, many, strict=True):
        assert [p.id for p in ps] == [p.id for p in index.search(q, max_tokens=256)]
        # a framework's two steps: the hits a budgeted search reads, then their expansion
        hits = index.hits(q, max_tokens=256)
        assert [p.id for p in index.expand(hits, max_tokens=256)] == [p.id for p in ps]


def test_within_one_document_and_in_reading_order(built):
    index, _, arts = built
    q = arts[1].questions[0].text
    ps = index.search(q, max_tokens=300, where={"doc_id": "b"}, order="document")
    assert {p.doc_id for p in ps} == {"b"}
    assert [p.start for p in ps] == sorted(p.start for p in ps)


def test_lexical_mode_fills_too(built):
    index, _, arts = built
    ps = index.search(arts[0].questions[0].text, max_tokens=200, mode="lexical")
    assert ps and tokens(index, ps) <= 200


@pytest.mark.parametrize("bad", [0, -1, 1.5, "100", True])
def test_bad_budgets_are_refused(built, bad):
    index, _, _ = built
    with pytest.raises(ValueError, match="max_tokens"):
        index.search("When was it founded?", max_tokens=bad)
    with pytest.raises(ValueError, match="max_tokens"):
        index.search_many(["When was it founded?"], max_tokens=bad)
    with pytest.raises(ValueError, match="max_tokens"):
        index.expand([], max_tokens=bad)
