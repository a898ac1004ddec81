"""``LandmarkIndex.search(mode=...)`` with the real default model on a real article."""

from __future__ import annotations

import itertools
import shutil

import numpy as np
import pytest

from landmark_rag import LandmarkIndex
from landmark_rag.store.lexical import LEXICAL_DIR

NEW_FACT = "The Brandt observatory first measured atmospheric oxygen on the summit of Mount Kessel in 1931."


@pytest.fixture(scope="module")
def article(squad_articles):
    return squad_articles[14]  # a validation article: nothing is tuned on it here


@pytest.fixture(scope="module")
def built(tmp_path_factory, article):
    db = tmp_path_factory.mktemp("hybrid") / "db"
    index = LandmarkIndex.open(db, collection="articles")
    index.add_texts([article.text], ids=["art"], metadatas=[{"title": article.title}])
    return db, index


def test_default_mode_is_the_models_hybrid_and_every_mode_gives_exact_passages(built, article):
    db, index = built
    assert index.resolve_mode() == "hybrid" and index.fusion.method == "linear"
    assert not (db / LEXICAL_DIR).exists()  # nothing lexical until a search needs it
    found = {"hybrid": 0, "dense": 0, "lexical": 0}
    questions = article.questions[:10]
    for q in questions:
        for mode in found:
            passages = index.search(q.text, k=3, mode=mode)
            assert len(passages) == 3
            for p in passages:
                assert p.text == article.text[p.start : p.end] and p.metadata == {"title": article.title}
            spans = sorted((p.first_index, p.last_index) for p in passages)
            assert all(a[1] + 1 < b[0] for a, b in itertools.pairwise(spans))  # merged, not touching
            found[mode] += any(p.start <= q.answer_start < p.end for p in passages)
        assert [p.id for p in index.search(q.text, k=3)] == [p.id for p in index.search(q.text, k=3, mode="hybrid")]
    assert found["hybrid"] >= len(questions) // 2, found
    assert (db / LEXICAL_DIR / "articles" / "state.json").is_file()
    hits = index.hits(questions[0].text, 5, mode="hybrid")
    assert len(hits) == 5 and [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    with pytest.raises(ValueError, match="search mode"):
        index.search("x", mode="sparse")  # type: ignore[arg-type]


def test_existing_store_gets_hybrid_without_reindexing_and_follows_writes(built, tmp_path):
    db, _index = built
    copy = tmp_path / "db"
    shutil.copytree(db, copy)
    shutil.rmtree(copy / LEXICAL_DIR, ignore_errors=True)  # a store from before hybrid search
    other = LandmarkIndex.open(copy, collection="articles", create=False)
    ids = [f"art:{i}" for i in range(5)]
    before = other.store.collection.get(ids=ids, include=["embeddings"])["embeddings"]
    n = other.store.count_sentences()
    assert other.search("Who designed it?", k=2, mode="hybrid")
    after = other.store.collection.get(ids=ids, include=["embeddings"])["embeddings"]
    np.testing.assert_array_equal(np.asarray(before), np.asarray(after))  # vectors untouched
    assert other.store.count_sentences() == n and (copy / LEXICAL_DIR / "articles").is_dir()
    # a document added later (by this index, or by any writer of the store) is searchable at once
    assert other.search("Brandt observatory Kessel", k=1, mode="lexical") == []
    LandmarkIndex.open(copy, collection="articles").add_texts([NEW_FACT], ids=["fact"])
    top = other.search("When was oxygen measured on Mount Kessel?", k=1, mode="lexical")
    assert top[0].doc_id == "fact" and top[0].text == NEW_FACT
    assert other.search("When was oxygen first measured on Mount Kessel?", k=1)[0].doc_id == "fact"
    other.delete(["fact"])
    assert all(p.doc_id != "fact" for p in other.search("Brandt observatory Kessel", k=2, mode="lexical"))


def _whole_ranking(index: LandmarkIndex, query: str, vector: np.ndarray, mode: str) -> list:
    """Every visible hit of ``mode`` best first, read at once: the reference the search's
    ask-for-more loop must agree with (it reads growing prefixes of this ranking)."""
    from landmark_rag.retrieve import fuse

    store, everything = index.store, index.store.count_sentences()
    if mode == "dense":
        return store.nearest(vector, everything)
    lexical = index.lexical.candidates(query, everything)
    if mode == "hybrid":
        f = index.fusion  # k stays far below the fusion depth, so the depth is the model's
        dense = store.nearest_ids(vector, f.depth)
        lexical = fuse(dense, index.lexical.candidates(query, f.depth), f.method, f.weight, rrf_k=f.rrf_k)
    return list(store.read_ids([str(u) for u, _ in lexical], [s for _, s in lexical]).values())


@pytest.mark.parametrize("mode", ["dense", "lexical", "hybrid"])
def test_search_equals_expanding_the_whole_ranking(built, article, mode):
    """The one loop gives what expanding the complete ranking gives: same passages, order, scores."""
    from landmark_rag.expand import expand_hits

    _, index = built
    for q in article.questions[10:16]:
        vector = index.encode_query(q.text)
        ranking = _whole_ranking(index, q.text, vector, mode)
        got_hits = index.hits(q.text, 7, mode=mode, query_vector=vector)
        assert [(h.sentence.doc_id, h.sentence.index, h.score) for h in got_hits] == [
            (h.sentence.doc_id, h.sentence.index, h.score) for h in ranking[:7]
        ]
        for strategy in ("front", "surround", "adaptive"):
            strat = index.resolve_strategy(strategy)
            for k in (1, 3, 6):
                expected = expand_hits(ranking, index.store, strat, query_vector=vector,
                                       count_tokens=index.count_tokens, max_passages=k)[:k]
                got = index.search(q.text, k, strategy=strategy, mode=mode)
                assert [(p.id, p.score, p.text, p.hit_indices) for p in got] == [
                    (p.id, p.score, p.text, p.hit_indices) for p in expected
                ], (q.text, strategy, k)
