"""The evidence strategy: hits of one document close together become one passage."""

from __future__ import annotations

import pytest

from landmark_rag.expand import Evidence, InMemorySource, Surround, choose_strategy, expand_hits
from landmark_rag.segment import segment_sentences
from landmark_rag.types import Hit

WORDS = ["Zero", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten", "Eleven"]
TEXT = " ".join(f"{w} is sentence number {i} here." for i, w in enumerate(WORDS))


@pytest.fixture()
def source() -> InMemorySource:
    sents = segment_sentences(TEXT, doc_id="d")
    assert len(sents) == len(WORDS)
    return InMemorySource({"d": sents})


def hit(source: InMemorySource, i: int, score: float) -> Hit:
    return Hit(source.sentences["d"][i], score)


def spans(passages) -> list[tuple[int, int]]:
    return [(p.first_index, p.last_index) for p in passages]


def test_close_hits_join_with_the_sentences_between(source):
    ps = expand_hits([hit(source, 2, 0.9), hit(source, 5, 0.5)], source, Evidence(before=0, after=0, bridge=2))
    assert spans(ps) == [(2, 5)]
    [p] = ps
    assert p.hit_indices == [2, 5] and p.score == pytest.approx(0.9)
    assert p.text == TEXT[p.start : p.end] and "Three" in p.text and "Four" in p.text


def test_hits_further_apart_than_the_bridge_stay_apart(source):
    ps = expand_hits([hit(source, 2, 0.9), hit(source, 6, 0.5)], source, Evidence(before=0, after=0, bridge=2))
    assert spans(ps) == [(2, 2), (6, 6)]
    # the window counts: one sentence either side closes the same gap
    ps = expand_hits([hit(source, 2, 0.9), hit(source, 6, 0.5)], source, Evidence(before=1, after=1, bridge=1))
    assert spans(ps) == [(1, 7)]


def test_a_join_keeps_within_the_token_limit(source):
    hits = [hit(source, 2, 0.9), hit(source, 5, 0.5)]
    per_sentence = 10  # every sentence costs 10 "tokens" below
    strat = Evidence(before=0, after=0, bridge=2, max_tokens=4 * per_sentence - 1)
    ps = expand_hits(hits, source, strat, count_tokens=lambda t: per_sentence)
    assert spans(ps) == [(2, 2), (5, 5)]
    strat = Evidence(before=0, after=0, bridge=2, max_tokens=4 * per_sentence)
    assert spans(expand_hits(hits, source, strat, count_tokens=lambda t: per_sentence)) == [(2, 5)]


def test_touching_windows_join_whatever_the_limit(source):
    # passages never overlap: windows that touch merge even past max_tokens
    strat = Evidence(before=1, after=1, bridge=0, max_tokens=1)
    assert spans(expand_hits([hit(source, 3, 0.9), hit(source, 5, 0.5)], source, strat)) == [(2, 6)]


def test_no_join_across_a_heading_line():
    text = "Intro sentence one. Intro sentence two.\n\n## Second part\n\nPart two opens. Part two goes on."
    sents = segment_sentences(text, doc_id="h")
    heading = next(i for i, s in enumerate(sents) if s.text.startswith("##"))
    src = InMemorySource({"h": sents})
    hits = [Hit(sents[heading - 1], 0.9), Hit(sents[heading + 1], 0.8)]
    ps = expand_hits(hits, src, Evidence(before=0, after=0, bridge=2))
    assert spans(ps) == [(heading - 1, heading - 1), (heading + 1, heading + 1)]


def test_k_passages_with_joins(source):
    hits = [hit(source, 2, 0.9), hit(source, 10, 0.8), hit(source, 4, 0.7), hit(source, 7, 0.6)]
    strat = Evidence(before=0, after=0, bridge=1)
    # 4 joins the best passage; 7 would be a third passage
    ps = expand_hits(hits, source, strat, max_passages=2)
    assert spans(ps) == [(2, 4), (10, 10)]
    assert ps[0].hit_indices == [2, 4]
    for p in ps:
        assert p.text == TEXT[p.start : p.end]


def test_same_as_surround_when_nothing_is_close(source):
    hits = [hit(source, 1, 0.9), hit(source, 8, 0.5)]
    got = expand_hits(hits, source, Evidence(before=1, after=1, bridge=2))
    want = expand_hits(hits, source, Surround(1, 1))
    assert spans(got) == spans(want)


def test_built_by_name_with_checked_parameters():
    assert choose_strategy("evidence", {"bridge": 3, "max_tokens": 512}) == Evidence(bridge=3, max_tokens=512)
    assert choose_strategy("Evidence") == Evidence()
    with pytest.raises(ValueError, match="takes"):
        choose_strategy("evidence", {"k": 3})
    with pytest.raises(ValueError, match="bridge"):
        Evidence(bridge=-1)
    with pytest.raises(ValueError, match="max_tokens"):
        Evidence(max_tokens=0)
