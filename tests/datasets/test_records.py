"""The one record type and its two loaders: SQuAD JSON and the long-document JSON lines."""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path

import pytest

from landmark_rag.datasets import (
    PARAGRAPH_SEPARATOR,
    Article,
    LongDocFormatError,
    Question,
    check_longdoc,
    iter_longdocs,
    parse_squad,
    read_longdocs,
    read_squad,
    write_longdocs,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "squad-v1.1-dev-part-a.json"


def test_records_are_frozen_and_hold_tuples():
    q = Question("q1", "Who?", ["Ada"], [0])
    art = Article("d", "T", "Ada wrote.", [[0, 10]], [q])
    assert q.answers == ("Ada",) and q.answer_starts == (0,)
    assert art.paragraphs == ((0, 10),) and art.questions == (q,)
    with pytest.raises(dataclasses.FrozenInstanceError):
        art.title = "other"  # type: ignore[misc]
    assert hash(art) == hash(Article("d", "T", "Ada wrote.", ((0, 10),), (q,)))
    assert (q.answer, q.answer_start, q.answer_end) == ("Ada", 0, 3)
    for answers, starts in [((), ()), (("a", "b"), (0,))]:
        with pytest.raises(ValueError, match="one start per answer"):
            Question("q", "?", answers, starts)


def test_paragraph_of_an_offset():
    art = Article("d", "T", "ab" + PARAGRAPH_SEPARATOR + "cd", ((0, 2), (4, 6)))
    assert [art.paragraph_of(i) for i in range(6)] == [0, 0, -1, -1, 1, 1]


def test_squad_articles_are_long_documents_with_every_answer_at_its_offset():
    arts = read_squad(DATA)
    assert len(arts) == 24 and sum(len(a.questions) for a in arts) == 4961
    assert len({a.doc_id for a in arts}) == 24
    for a in arts:
        assert a.text == PARAGRAPH_SEPARATOR.join(a.text[s:e] for s, e in a.paragraphs)
        for q in a.questions:
            for answer, start in zip(q.answers, q.answer_starts, strict=True):
                assert a.text[start : start + len(answer)] == answer
            assert a.paragraph_of(q.answer_start) >= 0  # an answer lies in its paragraph
    assert [a.title for a in read_squad(DATA, 2)] == ["Super_Bowl_50", "Warsaw"]


def test_untitled_articles_get_names_and_ids():
    arts = parse_squad([{"paragraphs": [{"context": "x", "qas": []}]}, {"title": "a:b", "paragraphs": []}])
    assert [(a.title, a.doc_id) for a in arts] == [("article0", "article0"), ("a:b", "a_b")]


def test_longdoc_round_trip_keeps_every_field(tmp_path):
    q = Question("q1", "Who wrote?", ("Ada", "Ada Lovelace"), (0, 0))
    art = Article("src:A", "A", "Ada Lovelace wrote.\n\nMore.", ((0, 19), (21, 26)), (q,), "src", "wikipedia")
    path = tmp_path / "docs.jsonl.gz"
    assert write_longdocs(path, [art]) == 1
    row = json.loads(gzip.decompress(path.read_bytes()))
    assert row == {
        "id": "src:A", "title": "A", "text": art.text, "source": "src", "domain": "wikipedia",
        "paragraphs": [[0, 19], [21, 26]],
        "questions": [{"id": "q1", "question": "Who wrote?", "answer": "Ada", "start": 0}],  # the first answer
    }
    (back,) = read_longdocs(path)
    assert back == dataclasses.replace(art, questions=(Question("q1", "Who wrote?", ("Ada",), (0,)),))
    assert list(iter_longdocs(tmp_path)) == [back]  # a folder: its files


def test_longdoc_check_refuses_what_cannot_be_stored(tmp_path):
    good = Article("d", "T", "Ada wrote.", ((0, 10),), (Question("q", "?", ("Ada",), (0,)),))
    check_longdoc(good)
    for bad, message in [
        (dataclasses.replace(good, doc_id=""), "needs an id"),
        (dataclasses.replace(good, paragraphs=((0, 11),)), "outside the text"),
        (dataclasses.replace(good, questions=(Question("q", "?", ("Ada",), (1,)),)), "is not the answer"),
    ]:
        with pytest.raises(ValueError, match=message):
            check_longdoc(bad)
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"id": "d", "text": "Ada", "questions": [{"id": "q", "question": "?",
                                                                         "answer": "Ada", "start": 1}]}) + "\n")
    with pytest.raises(LongDocFormatError, match=r"bad.jsonl:1: question 'q'"):
        read_longdocs(path)
