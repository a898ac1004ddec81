"""Loading SQuAD-format files and the fixed-size chunkers of the chunk baselines."""

from __future__ import annotations

import json
import re

import pytest

from landmark_rag.evaluation.context import TokenIndex
from landmark_rag.evaluation.data import PARAGRAPH_SEPARATOR, articles_from_squad, load_squad, select_articles
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
    arts = articles_from_squad(_squad())
    first = arts[0]
    assert first.text == "Ada wrote notes. Babbage built engines." + PARAGRAPH_SEPARATOR + "The engine was never finished."
    assert [q.qid for q in first.questions] == ["q1", "q2"]  # no-answer and unlocatable ones dropped
    for q in first.questions:
        for text, start in zip(q.answers, q.answer_starts, strict=True):
            assert first.text[start : start + len(text)] == text
    assert [a.doc_id for a in arts] == ["First_one", "Second", "Second-2"]  # no ':' and unique
    assert all(q.doc_id == a.doc_id for a in arts for q in a.questions)


def test_select_by_title_and_caps(tmp_path):
    path = tmp_path / "squad.json"
    path.write_text(json.dumps(_squad()))
    assert [a.title for a in load_squad(path, titles=["second"]).articles] == ["Second", "Second"]
    assert len(load_squad(path, titles=["First: one"])) == 2
    with pytest.raises(ValueError, match="no article titled nope$"):
        load_squad(path, titles=["Second", "nope"])
    assert len(load_squad(path, max_articles=1).articles) == 1
    capped = load_squad(path, max_questions=2)
    assert len(capped) == 2
    # round-robin: one question from each article that has any, not two from the first
    assert [len(a.questions) for a in capped.articles] == [1, 1, 0]
    assert len(capped.articles) == 3  # question-less articles stay as distractors


def test_select_articles_keeps_file_order():
    arts = articles_from_squad(_squad())
    assert [a.doc_id for a in select_articles(arts, titles=["Second", "First: one"])][0] == "First_one"


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
