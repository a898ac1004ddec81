"""Growing the best passage of a budgeted search into the evidence around its hit."""

from __future__ import annotations

import pytest

from landmark_rag.expand import Evidence, Front, InMemorySource, Surround, expand_hits
from landmark_rag.expand.grow import grow_lead, lead_share, lead_target, lean
from landmark_rag.segment import segment_sentences
from landmark_rag.types import Hit

WORDS = ["Zero", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten", "Eleven"]
TEXT = " ".join(f"{w} is sentence number {i} here." for i, w in enumerate(WORDS))
TEN = 10  # every sentence costs ten "tokens" below


def ten(_: str) -> int:
    return TEN


@pytest.fixture()
def sents():
    out = segment_sentences(TEXT, doc_id="d")
    assert len(out) == len(WORDS)
    return out


def passages(sents, hits):
    src = InMemorySource({"d": sents})
    return expand_hits([Hit(sents[i], s) for i, s in hits], src, Surround(0, 0), count_tokens=ten)


def test_grows_evenly_about_the_hit_to_the_target(sents):
    [grown] = grow_lead(passages(sents, [(5, 0.9)]), dict(enumerate(sents)), 5 * TEN, ten)
    assert (grown.first_index, grown.last_index) == (3, 7)
    assert grown.text == TEXT[grown.start : grown.end]
    assert grown.hit_indices == [5] and grown.score == pytest.approx(0.9)


def test_front_leans_backwards(sents):
    # Front-3's window is the hit and two before it: growth takes three back for one forward
    [grown] = grow_lead(passages(sents, [(8, 0.9)]), dict(enumerate(sents)), 5 * TEN, ten, lean(Front(3)))
    assert (grown.first_index, grown.last_index) == (5, 9)


def test_growth_stops_at_the_document_edge_on_one_side_and_goes_on_at_the_other(sents):
    [grown] = grow_lead(passages(sents, [(0, 0.9)]), dict(enumerate(sents)), 4 * TEN, ten)
    assert (grown.first_index, grown.last_index) == (0, 3)


def test_a_passage_growth_reaches_is_taken_in_and_the_rest_keep_their_order(sents):
    ps = passages(sents, [(4, 0.9), (10, 0.8), (6, 0.7)])
    assert [(p.first_index, p.last_index) for p in ps] == [(4, 4), (10, 10), (6, 6)]
    got = grow_lead(ps, dict(enumerate(sents)), 4 * TEN, ten)
    # grown evenly to 2-5, the passage at 6 then touches it and joins
    assert [(p.first_index, p.last_index) for p in got] == [(2, 6), (10, 10)]
    assert got[0].hit_indices == [4, 6] and got[0].text == TEXT[got[0].start : got[0].end]


def test_only_sentences_read_are_added(sents):
    read = {i: s for i, s in enumerate(sents) if 4 <= i <= 6}
    [grown] = grow_lead(passages(sents, [(5, 0.9)]), read, 10 * TEN, ten)
    assert (grown.first_index, grown.last_index) == (4, 6)


def test_nothing_to_do(sents):
    ps = passages(sents, [(5, 0.9)])
    assert grow_lead(ps, dict(enumerate(sents)), 0, ten) == ps
    assert grow_lead(ps, dict(enumerate(sents)), TEN, ten) == ps  # already at the target
    assert grow_lead([], {}, 100, ten) == []


def test_no_growth_across_a_heading_line():
    text = "Intro one here. Intro two here.\n\n## Part two\n\nPart two opens. Part two goes on. It ends."
    sents = segment_sentences(text, doc_id="d")
    heading = next(i for i, s in enumerate(sents) if s.text.startswith("##"))
    src = InMemorySource({"d": sents})
    ps = expand_hits([Hit(sents[heading + 1], 0.9)], src, Surround(0, 0), count_tokens=ten)
    [grown] = grow_lead(ps, dict(enumerate(sents)), 10 * TEN, ten)
    assert grown.first_index == heading + 1 and grown.last_index == len(sents) - 1


def test_lead_share_and_target():
    assert lead_share(Surround()) == 0 and lead_target(Surround(), 1000) == 0
    assert lead_share(Evidence(lead=0.5)) == 0.5
    assert lead_target(Evidence(lead=0.5, max_tokens=384), 512) == 256
    assert lead_target(Evidence(lead=0.5, max_tokens=384), 1024) == 384  # capped by the passage limit
    with pytest.raises(ValueError, match="lead"):
        Evidence(lead=1.5)
