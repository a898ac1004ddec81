"""found@B / recall@B of the long-evidence benchmark, computed by hand on a small case."""

from __future__ import annotations

import pytest

from landmark_rag.evaluation.context import Passage, TokenIndex, assemble_context
from landmark_rag.evaluation.longevidence import evidence_scores, overlap

# ten "words" of 4 characters each, separated by one space: word i is [5i, 5i + 4)
TEXT = " ".join(f"w{i:03d}" for i in range(10))
TOKENS = TokenIndex.from_offsets([(5 * i, 5 * i + 4) for i in range(10)], len(TEXT))


def test_overlap_counts_each_gold_character_once() -> None:
    gold = [(10, 20), (30, 35)]
    assert overlap([(0, 12), (11, 15)], gold) == 5  # [10, 15) read twice, counted once
    assert overlap([(0, 50)], gold) == 15
    assert overlap([(20, 30)], gold) == 0
    assert evidence_scores([], gold) == (False, 0.0)


def test_found_and_recall_with_the_budget_cut() -> None:
    # gold evidence: words 4-7, [20, 39): 19 characters
    gold = [(20, 39)]
    ranked = [(0, 30, 44), (0, 0, 9)]  # words 6-8 first, then words 0-1
    # budget 2: the first passage is cut at the token where the budget ends: words 6-7,
    # [30, 39), all gold: 9 of 19 characters
    ctx = assemble_context(ranked, 2, [TOKENS])
    assert ctx.spans == {0: [(30, 39)]}
    found, recall = evidence_scores(ctx.spans[0], gold)
    assert found and recall == pytest.approx(9 / 19)
    # budget 5: words 6-8 and words 0-1; word 8 is not gold
    ctx = assemble_context(ranked, 5, [TOKENS])
    assert evidence_scores(ctx.spans[0], gold) == (True, pytest.approx(9 / 19))
    # a passage that holds the whole evidence, read within the budget: recall 1
    ctx = assemble_context([(0, 15, 44)], 6, [TOKENS])
    assert evidence_scores(ctx.spans[0], gold) == (True, 1.0)
    # the same passage cut after its first token (word 3) reads no gold character
    ctx = assemble_context([(0, 15, 44)], 1, [TOKENS])
    assert ctx.spans == {0: [(15, 19)]}
    assert evidence_scores(ctx.spans[0], gold) == (False, 0.0)


def test_a_hit_passage_cut_keeps_the_hit() -> None:
    # a Front-k passage (words 2-5) grown from hit word 5: the budget keeps what ends at the hit
    ctx = assemble_context([Passage(0, 10, 29, hit_end=29)], 2, [TOKENS])
    assert ctx.spans == {0: [(20, 29)]}
    assert evidence_scores(ctx.spans[0], [(20, 39)]) == (True, pytest.approx(9 / 19))
