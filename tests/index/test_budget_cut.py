"""Where a token budget cuts: at sentence boundaries, around the hit (real model, real Chroma).

``test_budget_search.py`` checks the budget's totals; these tests pin down the cut itself.
They search ``dense`` with ``Surround(2, 2)`` so the expected passage follows from the best
hit alone: a dense ranking's head does not depend on how deep it is read (a hybrid read of
more than ``depth`` fuses deeper lists), and Surround grows no lead passage first, so the
first passage is exactly the hit's window cut to the budget, nearest sentences first (the
window leans evenly, and ties take the sentence before the hit first).
"""

from __future__ import annotations

import numpy as np
import pytest

from landmark_rag import LandmarkIndex
from landmark_rag.expand import Surround
from landmark_rag.expand.headings import is_heading_line
from landmark_rag.types import Passage, Sentence

WIDE = Surround(2, 2)


@pytest.fixture(scope="module")
def built(tmp_path_factory, squad_articles):
    """Two whole validation articles in a fresh store, with the sentences as stored."""
    arts = squad_articles[15:17]
    index = LandmarkIndex.open(tmp_path_factory.mktemp("budget-cut") / "db")
    ids = ["c", "d"]
    index.add_texts([a.text for a in arts], ids=ids)
    texts = dict(zip(ids, (a.text for a in arts), strict=True))
    sentences = {d: index.encoder.segment(texts[d], d) for d in ids}
    return index, texts, sentences, [q.text for a in arts for q in a.questions[:4]]


def exact(p: Passage, texts: dict[str, str], sentences: dict[str, list[Sentence]]) -> None:
    """The passage is an exact slice from its first sentence's start to its last one's end,
    and names only hits inside it."""
    sents = sentences[p.doc_id]
    assert texts[p.doc_id][p.start : p.end] == p.text
    assert sents[p.first_index].start == p.start and sents[p.last_index].end == p.end
    assert p.hit_indices and all(p.first_index <= i <= p.last_index for i in p.hit_indices)


def inner_hits(index: LandmarkIndex, questions: list[str], sentences) -> list[tuple[str, int]]:
    """Questions whose best dense hit has a plain sentence on each side (so the cut can go
    either way), with that hit's sentence index."""
    out = []
    for q in questions:
        hit = index.hits(q, 1, mode="dense")[0]
        sents, z = sentences[hit.sentence.doc_id], hit.sentence.index
        if 0 < z < len(sents) - 1 and not is_heading_line(sents[z - 1]) and not is_heading_line(sents[z + 1]):
            out.append((q, z))
    assert len(out) >= 3, "the fixture needs questions whose hit sits inside a paragraph"
    return out


def test_a_cut_passage_keeps_its_hit_and_the_nearest_sentences(built):
    index, texts, sentences, questions = built
    count = index.count_tokens
    for q, z in inner_hits(index, questions, sentences)[:4]:
        sents = sentences[index.hits(q, 1, mode="dense")[0].sentence.doc_id]
        cost = [count(s.text) for s in sents]
        # budget -> the sentences the first passage keeps: the hit alone, then the one before
        # it (a tie in distance goes before), then the one after
        for budget, (lo, hi) in (
            (cost[z], (z, z)),
            (cost[z] + cost[z - 1], (z - 1, z)),
            (cost[z - 1] + cost[z] + cost[z + 1], (z - 1, z + 1)),
        ):
            ps = index.search(q, max_tokens=budget, strategy=WIDE, mode="dense")
            assert len(ps) == 1, "these budgets are used up exactly by the first passage"
            p = ps[0]
            assert (p.first_index, p.last_index) == (lo, hi) and z in p.hit_indices
            assert count(p.text) <= budget
            exact(p, texts, sentences)


def test_every_cut_is_contiguous_around_the_hit_and_within_budget(built):
    index, texts, sentences, questions = built
    count = index.count_tokens
    for q, z in inner_hits(index, questions, sentences)[:3]:
        window = index.search(q, 1, strategy=WIDE, mode="dense")[0]  # no budget: the whole window
        for budget in range(count(sentences[window.doc_id][z].text), count(window.text), 7):
            ps = index.search(q, max_tokens=budget, strategy=WIDE, mode="dense")
            assert sum(count(p.text) for p in ps) <= budget
            first = ps[0]
            assert first.first_index <= z <= first.last_index  # the hit survives every cut
            for p in ps:
                exact(p, texts, sentences)


def test_a_sentence_longer_than_the_budget_comes_alone(built):
    index, texts, sentences, questions = built
    for q in questions[:3]:
        hit = index.hits(q, 1, mode="dense")[0]
        (p,) = index.search(q, max_tokens=1, strategy=WIDE, mode="dense")
        # never less than one sentence: the best hit's own, nothing around it
        assert (p.first_index, p.last_index, p.hit_indices) == (hit.sentence.index,) * 2 + ([hit.sentence.index],)
        assert p.text == hit.sentence.text
        exact(p, texts, sentences)


def test_k_caps_a_budget_and_positional_k_still_counts(built):
    index, _, _, questions = built
    count = index.count_tokens
    q = questions[0]
    assert len(index.search(q, 3)) == 3  # positional k, no budget: exactly k
    assert len(index.search(q)) == 4  # the default without a budget
    capped = index.search(q, 2, max_tokens=3000)
    assert len(capped) == 2 and sum(count(p.text) for p in capped) <= 3000
    for ps in index.search_many(questions[:3], 2, max_tokens=3000):
        assert 1 <= len(ps) <= 2 and sum(count(p.text) for p in ps) <= 3000
    for ps in index.search_many(questions[:3], max_tokens=300):
        assert ps and sum(count(p.text) for p in ps) <= 300


def test_document_order_sorts_the_passages_a_budget_chose(built):
    index, _, _, questions = built
    for q in questions[:3]:
        by_score = index.search(q, max_tokens=400)
        by_place = index.search(q, max_tokens=400, order="document")
        assert [p.id for p in by_place] == [p.id for p in sorted(by_score, key=lambda p: (p.doc_id, p.start))]


def test_a_numpy_integer_is_a_budget_and_bad_ones_are_refused_everywhere(built):
    index, _, _, questions = built
    q = questions[0]
    assert [p.id for p in index.search(q, max_tokens=np.int64(120))] == [p.id for p in index.search(q, max_tokens=120)]
    for bad in (0, -7, 2.0, 99.5, "64", False, True):
        with pytest.raises(ValueError, match="max_tokens must be a whole number of at least 1"):
            index.hits(q, max_tokens=bad)
        with pytest.raises(ValueError, match="max_tokens"):
            index.search(q, 2, max_tokens=bad)
    with pytest.raises(ValueError, match="k must be"):  # a cap of no passages asks for nothing
        index.search(q, 0, max_tokens=100)
