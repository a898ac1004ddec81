"""The articles of an evaluation run (loading, choosing, question caps) and the fixed-size
chunkers of the chunk baselines."""

from __future__ import annotations

import json
import re
import warnings

import pytest

from landmark_rag.datasets import PARAGRAPH_SEPARATOR, Article, parse_squad, read_squad
from landmark_rag.evaluation import evaluate
from landmark_rag.evaluation.context import TokenIndex
from landmark_rag.evaluation.data import choose_articles
from landmark_rag.evaluation.systems.chunking import token_chunks, word_chunks


def _squad() -> dict:
    return {
        "version": "2.0",
        "data": [
            {
                "title": "First: one",
                "paragraphs": [
                    {"context": "Ada wrote notes. Babbage built engines.", "qas": [
                        {"id": "q1", "question": "Who wrote notes?", "answers": [{"text": "Ada", "answer_start": 0}]},
                    ]},
                    {"context": "The engine was never finished.", "qas": [
                        # offset off by two: found nearby
                        {"id": "q2", "question": "Finished?", "answers": [{"text": "never", "answer_start": 13}]},
                        {"id": "q3", "question": "Impossible?", "answers": [], "is_impossible": True},
                        {"id": "q4", "question": "Absent?", "answers": [{"text": "steam", "answer_start": 3}]},
                    ]},
                ],
            },
            {"title": "Second", "paragraphs": [
                {"context": "Zebras run.", "qas": [
                    {"id": "q5", "question": "Who runs?", "answers": [{"text": "Zebras", "answer_start": 0}]},
                ]},
            ]},
            {"title": "Second", "paragraphs": [{"context": "Duplicate title.", "qas": []}]},
        ],
    }


def test_articles_join_paragraphs_and_shift_offsets():
    arts = parse_squad(_squad())
    first = arts[0]
    assert first.text == "Ada wrote notes. Babbage built engines." + PARAGRAPH_SEPARATOR + "The engine was never finished."
    assert [q.qid for q in first.questions] == ["q1", "q2"]  # no-answer and unlocatable ones dropped
    for q in first.questions:
        for text, start in zip(q.answers, q.answer_starts, strict=True):
            assert first.text[start : start + len(text)] == text
    assert [a.doc_id for a in arts] == ["First_one", "Second", "Second-2"]  # no ':' and unique


def test_choose_by_title_and_caps(tmp_path):
    path = tmp_path / "squad.json"
    path.write_text(json.dumps(_squad()))
    arts = read_squad(path)
    assert [a.title for a in choose_articles(arts, titles=["second"])] == ["Second", "Second"]
    assert sum(len(a.questions) for a in choose_articles(arts, titles=["First: one"])) == 2
    with pytest.raises(ValueError, match="no article titled 'nope' in the data"):
        choose_articles(arts, titles=["Second", "nope"])
    assert len(choose_articles(arts, max_articles=1)) == 1
    capped = choose_articles(arts, max_questions=2)
    # round-robin: one question from each article that has any, not two from the first
    assert [len(a.questions) for a in capped] == [1, 1, 0]
    assert len(capped) == 3  # question-less articles stay as distractors
    assert [len(a.questions) for a in arts] == [2, 1, 0]  # the loaded records are left as they were


def test_choose_keeps_the_data_order_whatever_the_spec_order(tmp_path):
    arts = parse_squad(_squad())
    chosen = choose_articles(arts, titles=["Second", "First: one"])
    assert [a.doc_id for a in chosen] == ["First_one", "Second", "Second-2"]
    titles = tmp_path / "held-out.txt"
    titles.write_text("Second-2\nFirst: one\n")  # a doc id, and a title with a colon
    assert [a.doc_id for a in choose_articles(arts, select_spec=f"@{titles}")] == ["First_one", "Second-2"]
    assert [a.doc_id for a in choose_articles(arts, select_spec="2,0")] == ["First_one", "Second-2"]
    # the spec and --title together: both sets, once each
    assert [a.doc_id for a in choose_articles(arts, select_spec="1:", titles=["first: ONE"])] == [
        "First_one", "Second", "Second-2"
    ]
    assert choose_articles(arts, select_spec="") == []


def test_evaluate_refuses_a_selection_of_nothing_before_loading_a_model():
    with pytest.raises(ValueError, match="article 5 does not exist"):
        evaluate(_squad(), ["bm25"], select="5")
    with pytest.raises(ValueError, match="no articles selected"):
        evaluate(_squad(), ["bm25"], select="")


def test_the_documented_names_of_earlier_releases_still_work_with_a_warning():
    from landmark_rag import evaluation

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert evaluation.EvalArticle is Article
        eval_set = evaluation.EvalSet("mine", parse_squad(_squad()))
    assert {w.category for w in caught} == {DeprecationWarning} and len(caught) == 2
    assert len(eval_set) == 3 and len(eval_set.questions) == 3
    with pytest.raises(AttributeError):
        evaluation.EvalQuestion  # noqa: B018 - never documented: removed, not aliased


def test_word_chunks_cover_the_text_exactly():
    text = "one two  three\nfour five six seven"
    chunks = word_chunks(text, 3, "d")
    assert [c.text for c in chunks] == ["one two  three", "four five six", "seven"]
    assert all(text[c.start : c.end] == c.text and c.doc_id == "d" for c in chunks)


def test_token_chunks_overlap_and_end_at_the_last_token():
    text = " ".join(f"w{i}" for i in range(10))
    idx = TokenIndex.from_offsets([(m.start(), m.end()) for m in re.finditer(r"\S+", text)], len(text))
    chunks = token_chunks(text, idx, 4, 1)
    assert [c.text for c in chunks] == ["w0 w1 w2 w3", "w3 w4 w5 w6", "w6 w7 w8 w9"]
    assert [c.text for c in token_chunks(text, idx, 4, 0)] == ["w0 w1 w2 w3", "w4 w5 w6 w7", "w8 w9"]
    with pytest.raises(ValueError):
        token_chunks(text, idx, 4, 4)
