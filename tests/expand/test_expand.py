"""Boundary expansion: strategies, merging, exact slices (no model needed)."""

from __future__ import annotations

import numpy as np
import pytest

from landmark_rag.expand import Adaptive, Evidence, Front, InMemorySource, Surround, choose_strategy, expand_hits
from landmark_rag.segment import segment_sentences
from landmark_rag.types import Hit

TEXT = (
    "Alpha starts here. Beta follows it.\n\nGamma opens a paragraph. Delta is fourth. "
    "Epsilon is fifth. Zeta is sixth.\nEta is seventh. Theta ends it."
)


@pytest.fixture()
def source() -> InMemorySource:
    sents = segment_sentences(TEXT, doc_id="d")
    assert len(sents) == 8
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(len(sents), 4)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return InMemorySource({"d": sents}, {"d": vecs})


def hit(source: InMemorySource, i: int, score: float, doc: str = "d") -> Hit:
    return Hit(source.sentences[doc][i], score, {"title": "T"})


def test_front_is_hit_and_predecessors(source):
    [p] = expand_hits([hit(source, 4, 0.9)], source, Front(3))
    assert (p.first_index, p.last_index, p.hit_indices) == (2, 4, [4])
    assert p.text == TEXT[p.start : p.end]
    assert p.text.startswith("Gamma") and p.text.endswith("Epsilon is fifth.")
    assert p.metadata == {"title": "T"}


def test_front_clips_at_document_start(source):
    [p] = expand_hits([hit(source, 0, 0.9)], source, "front")
    assert (p.first_index, p.last_index) == (0, 0)


def test_surround_clips_at_document_end(source):
    [p] = expand_hits([hit(source, 7, 0.5)], source, Surround(2, 2))
    assert (p.first_index, p.last_index) == (5, 7)
    assert p.text == TEXT[p.start : p.end]


def test_overlapping_and_adjacent_spans_merge_with_best_score(source):
    hits = [hit(source, 2, 0.4), hit(source, 4, 0.8), hit(source, 7, 0.6)]
    ps = expand_hits(hits, source, Front(2))
    # 1-2 and 3-4 are adjacent -> one passage; 6-7 separate
    assert [(p.first_index, p.last_index) for p in ps] == [(1, 4), (6, 7)]
    assert ps[0].score == pytest.approx(0.8) and ps[0].hit_indices == [2, 4]
    for p in ps:
        assert p.text == TEXT[p.start : p.end]
    assert ps[0].end <= ps[1].start  # non-overlapping


def test_document_order_option(source):
    hits = [hit(source, 7, 0.9), hit(source, 1, 0.2)]
    by_score = expand_hits(hits, source, Front(1))
    by_doc = expand_hits(hits, source, Front(1), order="document")
    assert [p.first_index for p in by_score] == [7, 1]
    assert [p.first_index for p in by_doc] == [1, 7]


def test_passages_of_two_documents_never_merge(source):
    other = segment_sentences("One more. Two more. Three more.", doc_id="e")
    source.sentences["e"] = other
    ps = expand_hits([hit(source, 1, 0.3), Hit(other[1], 0.7)], source, Surround(5, 5))
    assert {p.doc_id for p in ps} == {"d", "e"}
    assert ps[0].doc_id == "e" and ps[0].text == "One more. Two more. Three more."


def test_adaptive_follows_relevance_and_budget(source):
    sents = source.sentences["d"]
    q = np.array([1.0, 0, 0, 0], dtype=np.float32)
    vecs = np.zeros((8, 4), dtype=np.float32)
    vecs[:, 1] = 1.0  # irrelevant by default
    for i, rel in {5: 0.9, 4: 0.85, 3: 0.8, 2: 0.1, 6: 0.88, 7: 0.2}.items():
        vecs[i] = [rel, np.sqrt(1 - rel * rel), 0, 0]
    src = InMemorySource({"d": sents}, {"d": vecs})
    [p] = expand_hits([Hit(sents[5], 0.9)], src, Adaptive(max_tokens=1000, margin=0.15, min_before=0), query_vector=q)
    assert (p.first_index, p.last_index) == (3, 6)  # stops at 2 (irrelevant) and 7
    [p] = expand_hits(
        [Hit(sents[5], 0.9)], src, Adaptive(max_tokens=8, margin=0.15, min_before=0),
        query_vector=q, count_tokens=lambda t: len(t.split()),
    )
    assert (p.first_index, p.last_index) == (4, 5)  # two 3-word sentences fit in 8, a third would not
    with pytest.raises(ValueError, match="query vector"):
        expand_hits([Hit(sents[5], 0.9)], src, "adaptive")


def test_choose_strategy_builds_names_and_refuses_typos():
    assert choose_strategy("surround", {"before": 2}) == Surround(2, 1)
    assert choose_strategy(Surround(2, 1)) == Surround(2, 1)  # a ready strategy is used as is
    assert choose_strategy(Surround(2, 1), {"after": 0}) == Surround(2, 0)  # ... with params applied
    with pytest.raises(ValueError, match="unknown expansion strategy"):
        choose_strategy("middle")
    with pytest.raises(ValueError, match="front strategy takes"):
        choose_strategy("front", {"before": 1})
    with pytest.raises(ValueError):
        Front(0)


def test_choose_strategy_follows_the_model_config():
    from landmark_rag.encode import LandmarkConfig
    from landmark_rag.encode.models.registry import model_config

    assert choose_strategy() == Front(3)  # the paper's default when a model names none
    config = LandmarkConfig(expansion="surround", expansion_params={"before": 2})
    assert choose_strategy(model=config) == Surround(2, 1)
    assert choose_strategy(None, {"after": 3}, config) == Surround(1, 3)  # params replace the configured ones
    assert choose_strategy("front", None, config) == Front(3)  # a name given: that strategy's defaults
    with pytest.raises(ValueError, match="expansion"):
        LandmarkConfig(expansion="sideways")  # type: ignore[arg-type]
    # the shipped model lands on the answer sentence itself (in-context mean pooling), so it
    # expands to both sides, and under a budget grows its best passage into the evidence;
    # docs/model_card.md has the measurements behind this choice
    shipped = choose_strategy(model=model_config("landmark-minilm"))
    assert shipped == Evidence(before=1, after=1, bridge=0, max_tokens=384, lead=0.35)


def test_old_names_of_the_strategy_rule_still_work_but_warn():
    from landmark_rag import expand
    from landmark_rag.encode import LandmarkConfig

    config = LandmarkConfig(expansion="surround", expansion_params={"before": 2})
    with pytest.warns(DeprecationWarning, match="choose_strategy"):
        assert expand.make_strategy("surround", before=2) == Surround(2, 1)
    with pytest.warns(DeprecationWarning, match="choose_strategy"):
        from landmark_rag.expand import model_strategy
    assert model_strategy(config) == Surround(2, 1) and model_strategy(None) == Front(3)
    assert "make_strategy" not in expand.__all__ and "model_strategy" not in expand.__all__
    with pytest.raises(AttributeError):
        expand.choose_a_strategy  # noqa: B018
