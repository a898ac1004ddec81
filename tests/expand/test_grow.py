"""Growing the best passage of a budgeted search into the evidence around its hit."""

from __future__ import annotations

import pytest

from landmark_rag.expand import Evidence, Front, Surround
from landmark_rag.expand.grow import grow_range, lead_target, lean
from landmark_rag.segment import segment_sentences

WORDS = ["Zero", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten", "Eleven"]
TEXT = " ".join(f"{w} is sentence number {i} here." for i, w in enumerate(WORDS))
TEN = 10  # every sentence costs ten "tokens" below


def ten(_: int) -> int:
    return TEN


@pytest.fixture()
def sents():
    out = segment_sentences(TEXT, doc_id="d")
    assert len(out) == len(WORDS)
    return dict(enumerate(out))


def test_grows_evenly_about_the_hit_to_the_target(sents):
    assert grow_range(5, 5, 5, sents, 5 * TEN, ten) == (3, 7)
    assert grow_range(5, 4, 6, sents, 5 * TEN, ten) == (3, 7)


def test_front_leans_backwards(sents):
    # Front-3's window is the hit and two before it: growth takes three back for one forward
    assert grow_range(8, 8, 8, sents, 5 * TEN, ten, lean(Front(3))) == (5, 9)


def test_growth_stops_at_the_document_edge_on_one_side_and_goes_on_at_the_other(sents):
    assert grow_range(0, 0, 0, sents, 4 * TEN, ten) == (0, 3)


def test_only_sentences_read_are_added(sents):
    read = {i: s for i, s in sents.items() if 4 <= i <= 6}
    assert grow_range(5, 5, 5, read, 10 * TEN, ten) == (4, 6)


def test_nothing_to_do(sents):
    assert grow_range(5, 5, 5, sents, 0, ten) == (5, 5)
    assert grow_range(5, 4, 6, sents, 3 * TEN, ten) == (4, 6)  # already at the target


def test_no_growth_across_a_heading_line():
    text = "Intro one here. Intro two here.\n\n## Part two\n\nPart two opens. Part two goes on. It ends."
    sents = dict(enumerate(segment_sentences(text, doc_id="d")))
    heading = next(i for i, s in sents.items() if s.text.startswith("##"))
    z = heading + 1
    assert grow_range(z, z, z, sents, 10 * TEN, ten) == (z, len(sents) - 1)


def test_lean_follows_the_window():
    assert lean(Surround(1, 1)) == (2, 2)
    assert lean(Front(3)) == (3, 1)
    assert lean(Evidence(before=2, after=0)) == (3, 1)


def test_lead_target():
    assert lead_target(Surround(), 1000) == 0  # only Evidence grows its lead
    assert lead_target(Evidence(lead=0.5, max_tokens=384), 512) == 256
    assert lead_target(Evidence(lead=0.5, max_tokens=384), 1024) == 384  # capped by the passage limit
    with pytest.raises(ValueError, match="lead"):
        Evidence(lead=1.5)
