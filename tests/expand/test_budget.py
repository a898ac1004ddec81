"""Filling a token budget from ranked hits: hit-ordered, sentence-exact, never over."""

from __future__ import annotations

import pytest

from landmark_rag.expand import Evidence, Front, Surround
from landmark_rag.expand.budget import budget_requests, check_max_tokens, fill_budget
from landmark_rag.segment import segment_sentences
from landmark_rag.types import Hit

WORDS = ["Zero", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten", "Eleven"]
TEXT = " ".join(f"{w} is sentence number {i} here." for i, w in enumerate(WORDS))
TEN = 10


def ten(_: str) -> int:
    return TEN


@pytest.fixture()
def sents():
    out = segment_sentences(TEXT, doc_id="d")
    assert len(out) == len(WORDS)
    return out


def fill(sents, ranked, strategy, budget, **kw):
    hits = [Hit(sents[i], 1.0 - 0.01 * r) for r, i in enumerate(ranked)]
    wanted = budget_requests(hits, strategy, budget)
    read = {d: {i: sents[i] for i in idx if 0 <= i < len(sents)} for d, idx in wanted.items()}
    return fill_budget(hits, read, strategy, budget, ten, **kw)


def spans(ps):
    return [(p.first_index, p.last_index) for p in ps]


def test_windows_in_hit_order_within_the_budget(sents):
    ps, full = fill(sents, [5, 1, 9], Surround(1, 1), 60)
    # 4-6 (30), then 0-2 (30): the budget is full before the third hit
    assert spans(ps) == [(4, 6), (0, 2)] and full
    assert sum(ten(p.text) for p in ps) <= 60
    for p in ps:
        assert p.text == TEXT[p.start : p.end]


def test_a_cut_window_keeps_its_hit_and_the_nearest_sentences(sents):
    ps, _ = fill(sents, [5, 9], Surround(1, 1), 50)
    # 4-6 (30), then the second window has room for its hit and one neighbour only
    assert spans(ps) == [(4, 6), (8, 9)]
    assert 9 in ps[1].hit_indices


def test_front_cut_keeps_the_hit_and_its_predecessor(sents):
    ps, _ = fill(sents, [8], Front(3), 20)
    assert spans(ps) == [(7, 8)]


def test_touching_windows_read_in_hit_order_then_joined(sents):
    # hit 5's window 4-6 and hit 7's 6-8 touch: one passage, paid sentence by sentence
    ps, _ = fill(sents, [5, 1, 7], Surround(1, 1), 80)
    assert spans(ps) == [(4, 8), (0, 2)]
    assert ps[0].hit_indices == [5, 7]


def test_a_first_sentence_longer_than_the_budget_comes_alone(sents):
    ps, full = fill(sents, [5, 1], Surround(1, 1), 5)
    assert spans(ps) == [(5, 5)] and full


def test_the_lead_grows_to_its_share_of_the_budget(sents):
    strat = Evidence(before=1, after=1, bridge=0, max_tokens=384, lead=0.5)
    ps, _ = fill(sents, [5, 10], strat, 100)
    # the best window grows to 50 tokens (3-7), then the second hit's window (9-11) fits
    assert spans(ps) == [(3, 7), (9, 11)]
    assert sum(ten(p.text) for p in ps) <= 100


def test_the_lead_is_capped_by_max_tokens(sents):
    strat = Evidence(before=0, after=0, bridge=0, max_tokens=30, lead=1.0)
    ps, _ = fill(sents, [5], strat, 100)
    assert spans(ps) == [(4, 6)]


def test_bridge_fills_a_gap_to_a_passage_read(sents):
    strat = Evidence(before=0, after=0, bridge=2, lead=0.0)
    ps, _ = fill(sents, [2, 5], strat, 100)
    assert spans(ps) == [(2, 5)] and ps[0].hit_indices == [2, 5]
    ps, _ = fill(sents, [2, 6], strat, 100)
    assert spans(ps) == [(2, 2), (6, 6)]


def test_passage_cap_skips_new_places_but_lets_hits_join(sents):
    # 0 would be a third place (skipped); 5 joins the first passage
    ps, _ = fill(sents, [3, 9, 0, 5], Surround(1, 1), 1000, max_passages=2)
    assert spans(ps) == [(2, 6), (8, 10)]


def test_document_order(sents):
    ps, _ = fill(sents, [9, 2], Surround(0, 0), 100, order="document")
    assert spans(ps) == [(2, 2), (9, 9)]


def test_room_left_is_used_by_shorter_sentences_further_down(sents):
    words = ["A long first sentence that costs a great deal here.", "Short one.", "Tiny."]
    text = " ".join(words)
    ss = segment_sentences(text, doc_id="d")
    hits = [Hit(ss[0], 0.9), Hit(ss[2], 0.5)]
    cost = {s.text: n for s, n in zip(ss, (30, 25, 5), strict=True)}
    read = {"d": dict(enumerate(ss))}
    ps, _ = fill_budget(hits, read, Surround(0, 1), 36, lambda t: cost[t.strip()])
    # 0 (30); its neighbour 1 (25) does not fit, the lower hit 2 (5) does
    assert spans(ps) == [(0, 0), (2, 2)]


@pytest.mark.parametrize("bad", [0, -3, 1.5, "512", True, None])
def test_bad_budgets_are_refused(bad):
    with pytest.raises(ValueError, match="max_tokens"):
        check_max_tokens(bad)


def test_the_whitespace_between_sentences_is_paid_for():
    # a tokenizer that gives a blank line tokens of its own (byte-level BPE does): sentences
    # counted bare would add up to less than the passage that joins them
    text = "One two three.\n\nFour five six.\n\nSeven eight nine."
    ss = segment_sentences(text, doc_id="d")
    assert len(ss) == 3

    def count(t: str) -> int:
        return len(t.split()) + t.count("\n\n")

    hits = [Hit(ss[1], 0.9)]
    ps, _ = fill_budget(hits, {"d": dict(enumerate(ss))}, Surround(1, 1), 6, count)
    assert ps and sum(count(p.text) for p in ps) <= 6
