"""The long-evidence format: the converter's spans are exact, splits go by document, and the
committed benchmark file reads back with every span inside its document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from landmark_rag.datasets.longevidence import (
    SPLITS,
    EvidenceDocument,
    EvidenceQuestion,
    LongEvidenceFormatError,
    LongEvidenceSet,
    assign_split,
    convert_fairytaleqa_story,
    is_long_evidence_path,
    load_long_evidence,
    locate,
    merge_spans,
    write_long_evidence,
)

COMMITTED = Path(__file__).resolve().parents[2] / "data" / "long-evidence" / "long-evidence-v1.json"

SECTIONS = [
    (1, "Once there was a farmer.\nHe had seven sons and one daughter, and the youngest son was lazy."),
    (2, ("The king's daughter was promised to a monster. Nobody in the land could fight it.\n\n"
         "So the king sent word to every farm that whoever slew it would have her hand.")),
    (3, "The lazy son took a boat and a pot of burning peat, and sailed into the monster's mouth."),
]


def _row(qid: str, cited: str, question: str = "What happened?") -> dict[str, str]:
    return {"question_id": qid, "cor_section": cited, "question": question, "answer1": "a boat", "answer4": ""}


def test_fairytaleqa_spans_read_back_exactly() -> None:
    rows = [_row("1", "2"), _row("2", "2, 3"), _row("3", "9"), _row("4", "1")]
    doc, dropped = convert_fairytaleqa_story("the-lazy-son", "val", SECTIONS, rows, min_evidence_chars=100)
    assert doc.text == "\n\n".join(t for _, t in SECTIONS)
    assert doc.title == "The Lazy Son" and doc.source_split == "val" and doc.split in SPLITS
    by_id = {q.qid.rsplit(":", 1)[1]: q for q in doc.questions}
    # section 9 does not exist; section 1 is under the minimum evidence length
    assert set(by_id) == {"1", "2"} and dropped == 2
    (s, e), = by_id["1"].evidence
    assert doc.text[s:e] == SECTIONS[1][1]
    # two cited sections: one span each, exact, in order
    assert [doc.text[a:b] for a, b in by_id["2"].evidence] == [SECTIONS[1][1], SECTIONS[2][1]]
    assert by_id["2"].answers == ("a boat",)


def test_split_is_by_document_and_deterministic() -> None:
    ids = [f"fairytaleqa:story-{i}" for i in range(300)]
    splits = [assign_split(i) for i in ids]
    assert splits == [assign_split(i) for i in ids]
    share = splits.count("validation") / len(splits)
    assert 0.25 < share < 0.42  # about a third
    doc, _ = convert_fairytaleqa_story("story-7", "test", SECTIONS, [_row("1", "2")], min_evidence_chars=10)
    assert doc.split == assign_split("fairytaleqa:story-7")


def test_merge_and_locate() -> None:
    assert merge_spans([(5, 9), (0, 3), (3, 4), (8, 12), (20, 20)]) == ((0, 4), (5, 12))
    text = "abc def abc"
    assert locate(text, "abc", near=1) == (8, 11)
    assert locate(text, "abc") == (0, 3)
    assert locate(text, "xyz") is None and locate(text, "") is None


def test_round_trip_and_bad_span(tmp_path: Path) -> None:
    q = EvidenceQuestion("d:1", "Why?", ((0, 5), (7, 12)), ("x",))
    doc = EvidenceDocument("d", "toy", "test", "D", "Hello, world. Bye.", assign_split("d"), (q,))
    path = tmp_path / "toy.json"
    write_long_evidence(path, LongEvidenceSet([doc], [{"name": "toy"}]))
    assert is_long_evidence_path(path)
    back = load_long_evidence(path)
    assert back.documents == [doc] and back.sources == [{"name": "toy"}]
    assert load_long_evidence(path, split="heldout" if doc.split == "validation" else "validation").documents == []
    raw = json.loads(path.read_text())
    raw["documents"][0]["questions"][0]["evidence"] = [[10, 99]]
    path.write_text(json.dumps(raw))
    with pytest.raises(LongEvidenceFormatError, match="outside the text"):
        load_long_evidence(path)


def test_committed_file_is_valid() -> None:
    data = load_long_evidence(COMMITTED)  # checks every span
    assert COMMITTED.stat().st_size < 6 * 2**20
    assert len(data.sources) >= 1 and all(s.get("commit") and s.get("licence") for s in data.sources)
    ids = [d.doc_id for d in data.documents]
    assert len(ids) == len(set(ids))
    for d in data.documents:
        assert d.split == assign_split(d.doc_id)
        assert d.source_split in ("val", "test", "dev", "validation")  # evaluation splits of the sources only
        for q in d.questions:
            assert q.evidence_chars >= 150
    val = load_long_evidence(COMMITTED, split="validation")
    held = load_long_evidence(COMMITTED, split="heldout")
    assert {d.doc_id for d in val.documents}.isdisjoint(d.doc_id for d in held.documents)
    assert val.n_questions + held.n_questions == data.n_questions
