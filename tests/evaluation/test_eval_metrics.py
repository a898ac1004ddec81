"""Metric and context-assembly functions of the evaluation harness, on hand-made cases."""

from __future__ import annotations

import numpy as np
import pytest

from landmark_rag.evaluation.context import Passage, TokenIndex, assemble_context
from landmark_rag.evaluation.metrics import (
    answer_in_context,
    gold_rank,
    gold_units,
    mrr_at,
    normalize_answer,
    rank_order,
    recall_at,
)

# ----------------------------------------------------------------------------- normalisation


def test_normalize_answer_follows_squad():
    assert normalize_answer("The  Denver Broncos!") == "denver broncos"
    assert normalize_answer("an apple, a pear") == "apple pear"
    assert normalize_answer("Theory") == "theory"  # 'the' only as a word


def test_answer_in_context_uses_word_boundaries():
    assert answer_in_context(["Denver Broncos"], ["won by the denver  broncos."])
    assert not answer_in_context(["War"], ["Warsaw is a city."])
    assert not answer_in_context(["1"], ["in 10 years"])
    assert answer_in_context(["x", "Warsaw"], ["Warsaw is a city."])  # any answer counts
    assert not answer_in_context(["the"], ["the end"])  # normalises to nothing: never found


# ----------------------------------------------------------------------------- gold sentences


def test_gold_units_maps_starts_to_sentences():
    # sentences: [0,10) [11,20) [22,30)
    ends = [10, 20, 30]
    assert gold_units(ends, [0]) == [0]
    assert gold_units(ends, [9]) == [0]
    assert gold_units(ends, [10]) == [1]  # in the gap: belongs to the next sentence
    assert gold_units(ends, [21, 25]) == [2]  # duplicates collapse
    assert gold_units(ends, [12, 3]) == [1, 0]


def test_gold_rank_counts_ties_against_the_gold():
    scores = np.array([0.5, 0.9, 0.5, 0.1])
    assert gold_rank(scores, [1]) == 1
    assert gold_rank(scores, [0]) == 3  # tied with unit 2, placed after it
    assert gold_rank(scores, [2]) == 3
    assert gold_rank(np.zeros(5), [0]) == 5  # a flat scorer never wins
    assert gold_rank(scores, [3, 0]) == 3  # best gold counts; the other gold is no rival


def test_gold_rank_needs_gold():
    with pytest.raises(ValueError):
        gold_rank(np.zeros(3), [])


def test_recall_and_mrr():
    ranks = [1, 2, 5, 11]
    assert recall_at(ranks, 1) == 0.25
    assert recall_at(ranks, 5) == 0.75
    assert recall_at(ranks, 10) == 0.75
    assert mrr_at(ranks, 10) == pytest.approx((1 + 0.5 + 0.2 + 0) / 4)
    assert recall_at([], 1) == 0.0


def test_rank_order_breaks_ties_by_index_even_when_truncated():
    scores = np.array([0.2, 0.7, 0.7, 0.1, 0.7, 0.9])
    assert rank_order(scores).tolist() == [5, 1, 2, 4, 0, 3]
    for top in range(1, 7):
        assert rank_order(scores, top).tolist() == [5, 1, 2, 4, 0, 3][:top]


# ----------------------------------------------------------------------------- context assembly

DOC = "Alpha beta gamma. Delta epsilon zeta. Eta theta iota. Kappa lambda mu."
#      0     6    11   17 18    24      32  37 38  42    48  53 54    60     67 70


def _words(text: str) -> TokenIndex:
    """One token per word (punctuation glued), a transparent stand-in tokenisation."""
    import re

    return TokenIndex.from_offsets([(m.start(), m.end()) for m in re.finditer(r"\S+", text)], len(text))


SENTS = [(0, 17), (18, 37), (38, 53), (54, 70)]


def test_token_index_counts_and_cuts():
    idx = _words(DOC)
    assert idx.count(0, len(DOC)) == 12
    assert idx.count(*SENTS[1]) == 3
    assert idx.count(17, 18) == 0  # whitespace is free
    assert idx.cut(18, 2) == 31  # "Delta epsilon"
    assert idx.cut(60, 99) == len(DOC)


def test_overlapping_passages_pay_only_for_new_text():
    idx = [_words(DOC)]
    passages = [(0, *SENTS[1]), (0, SENTS[0][0], SENTS[2][1])]  # s1, then s0..s2
    ctx = assemble_context(iter(passages), 100, idx)
    assert ctx.tokens == 9  # 3 + (3 + 3) new, not 3 + 9
    assert ctx.spans[0][0][0] == 0 and ctx.spans[0][-1][1] == 53  # new parts fill the gaps around s1
    assert ctx.texts([DOC]) == [DOC[0:53]]  # whitespace-adjacent spans read as one piece
    assert not ctx.full


def test_budget_cuts_a_passage_at_a_token_boundary():
    idx = [_words(DOC)]
    ctx = assemble_context(iter([(0, *SENTS[2]), (0, *SENTS[0])]), 5, idx)
    assert ctx.full and ctx.tokens == 5
    assert ctx.texts([DOC]) == ["Alpha beta", "Eta theta iota."]  # second passage cut after 2 words
    assert answer_in_context(["beta"], ctx.texts([DOC]))
    assert not answer_in_context(["gamma"], ctx.texts([DOC]))


def test_lazy_passages_are_consumed_only_as_far_as_needed():
    idx = [_words(DOC)]
    seen = []

    def gen():
        for s in SENTS:
            seen.append(s)
            yield (0, *s)

    assemble_context(gen(), 3, idx)
    assert seen == [SENTS[0]]


def test_answer_straddling_two_sentences_needs_both():
    idx = [_words(DOC)]
    answer = ["zeta. Eta"]  # crosses the boundary between sentences 1 and 2
    only_first = assemble_context(iter([(0, *SENTS[1])]), 100, idx)
    assert not answer_in_context(answer, only_first.texts([DOC]))
    # sentence 2 ranked first, sentence 1 later: the pieces still join in document order
    both = assemble_context(iter([(0, *SENTS[2]), (0, *SENTS[3]), (0, *SENTS[1])]), 100, idx)
    assert answer_in_context(answer, both.texts([DOC]))
    # ... but not when the budget stops before sentence 1 arrives
    cut = assemble_context(iter([(0, *SENTS[2]), (0, *SENTS[3]), (0, *SENTS[1])]), 6, idx)
    assert not answer_in_context(answer, cut.texts([DOC]))


def test_passages_of_different_documents_never_join():
    docs = ["aa bb", "cc dd"]
    idx = [_words(d) for d in docs]
    ctx = assemble_context(iter([(1, 0, 5), (0, 0, 5)]), 100, idx)
    assert sorted(ctx.texts(docs)) == ["aa bb", "cc dd"]
    assert not answer_in_context(["bb cc"], ctx.texts(docs))


def test_a_front_passage_cut_by_the_budget_keeps_its_hit():
    """Front-3 of hit s2 is s0..s2 (9 words); with 4 words left the cut keeps the last four,
    the hit and the word before it, not "Alpha beta gamma." and a word of s1."""
    idx = [_words(DOC)]
    front = Passage(0, SENTS[0][0], SENTS[2][1], hit_end=SENTS[2][1])
    ctx = assemble_context(iter([front]), 4, idx)
    assert ctx.full and ctx.tokens == 4
    assert ctx.texts([DOC]) == [DOC[SENTS[1][1] - len("zeta.") : SENTS[2][1]]]
    assert answer_in_context(["theta iota"], ctx.texts([DOC]))
    # the same span without a hit (a chunk) keeps its first words, as before
    chunk = assemble_context(iter([(0, SENTS[0][0], SENTS[2][1])]), 4, idx)
    assert chunk.texts([DOC]) == ["Alpha beta gamma. Delta"]


def test_a_window_cut_by_the_budget_keeps_the_hit_and_what_precedes_it():
    idx = [_words(DOC)]
    window = Passage(0, SENTS[0][0], SENTS[2][1], hit_end=SENTS[1][1])  # s0..s2 around hit s1
    ctx = assemble_context(iter([window]), 5, idx)
    assert ctx.texts([DOC]) == ["beta gamma. Delta epsilon zeta."]
    # room for more than the text up to the hit: the rest comes from after it
    wide = assemble_context(iter([window]), 7, idx)
    assert wide.texts([DOC]) == ["Alpha beta gamma. Delta epsilon zeta. Eta"]


def test_keep_takes_the_tokens_nearest_the_hit():
    idx = _words(DOC)
    s0, s3 = SENTS[0][0], SENTS[3][1]
    assert idx.keep(s0, s3, 2, toward=SENTS[1][1]) == (24, 37)  # "epsilon zeta."
    assert idx.keep(s0, s3, 2, toward=None) == (0, 10)  # no hit: the first tokens
    assert idx.keep(s0, s3, 2, toward=0) == (0, 10)  # a hit at the start: the same
    assert idx.keep(s0, s3, 20, toward=SENTS[1][1]) == (0, s3)  # more than the span holds
    assert idx.keep(s0, s3, 0, toward=SENTS[1][1]) == (s0, s0)


def test_a_hit_longer_than_the_budget_keeps_its_end():
    idx = [_words(DOC)]
    ctx = assemble_context(iter([Passage(0, *SENTS[1], hit_end=SENTS[1][1])]), 2, idx)
    assert ctx.texts([DOC]) == ["epsilon zeta."]


def test_the_budget_cut_applies_to_the_new_part_of_an_overlapping_passage():
    """s1 is shown; Front-3 of hit s3 (s1..s3) adds only s2..s3, and that part, crossing the
    budget, keeps the words that end at the hit."""
    idx = [_words(DOC)]
    shown = Passage(0, *SENTS[1], hit_end=SENTS[1][1])
    front = Passage(0, SENTS[1][0], SENTS[3][1], hit_end=SENTS[3][1])
    ctx = assemble_context(iter([shown, front]), 3 + 4, idx)
    assert ctx.tokens == 7
    assert ctx.texts([DOC]) == [DOC[slice(*SENTS[1])], "iota. Kappa lambda mu."]


def test_sentence_unit_passages_carry_their_hit_and_chunks_do_not():
    from types import SimpleNamespace

    from landmark_rag.evaluation.runner import _passages

    corpus = SimpleNamespace(sent_end=np.asarray([end for _, end in SENTS]))

    class FrontSystem:  # Front-3 over the sentences, as the landmark system expands
        sentence_units = True

        def passage(self, u: int) -> tuple[int, int, int]:
            return 0, SENTS[max(0, u - 2)][0], SENTS[u][1]

    class ChunkSystem:
        sentence_units = False

        def passage(self, u: int) -> tuple[int, int, int]:
            return 0, 0, len(DOC)

    scores = np.asarray([0.1, 0.9, 0.3, 0.5], dtype=np.float32)
    order = rank_order(scores, top=2)  # the top two pre-sorted, the rest ranked after
    front = list(_passages(FrontSystem(), corpus, order, scores))  # type: ignore[arg-type]
    assert [p.hit_end for p in front] == [SENTS[1][1], SENTS[3][1], SENTS[2][1], SENTS[0][1]]
    assert front[1] == (0, SENTS[1][0], SENTS[3][1], SENTS[3][1])
    chunks = list(_passages(ChunkSystem(), corpus, order, scores))  # type: ignore[arg-type]
    assert [p.hit_end for p in chunks] == [None] * 4


def test_zero_budget_is_empty():
    ctx = assemble_context(iter([(0, 0, 17)]), 0, [_words(DOC)])
    assert ctx.tokens == 0 and ctx.texts([DOC]) == []
