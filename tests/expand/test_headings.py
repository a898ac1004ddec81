"""Headings are where a passage is, not what it says: never a hit, never a passage's edge.

The whole path on a real Markdown file with the default model (``LandmarkIndex.add_files``,
the CLI's one write path, then ``search`` in every mode), plus the rule itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from landmark_rag import LandmarkIndex
from landmark_rag.expand.headings import heading_title, is_heading_line
from landmark_rag.extract import extract
from landmark_rag.segment import segment_sentences
from landmark_rag.types import Sentence

HARBOUR = """# Harbour

The harbour freezes for two months most winters. Fishing boats are then hauled onto the slipway.

## Ice-breaking

Ice-breaking was tried in 1931 but proved too costly. The town bought a small icebreaker in 1934 and sold it again in 1935.

Ferries
-------

The ferry to the island runs twice a day in summer. In winter the ferry stops when the ice is thick. A new ferry was launched in 1988.
"""

QUESTIONS = [
    "When does the ferry stop?",
    "When was ice-breaking tried?",
    "Ferries",
    "What happens to fishing boats in winter?",
    "Harbour",
    "When did the town sell the icebreaker?",
]


def sentence(text: str, heading: str | None = None) -> Sentence:
    return Sentence(index=0, start=0, end=len(text), text=text, heading=heading)


def test_what_is_a_heading_line():
    assert heading_title(sentence("## Ferries")) == "Ferries"
    assert heading_title(sentence("### Ferries ###")) == "Ferries"
    assert heading_title(sentence("Ferries\n-------")) == "Ferries"
    assert heading_title(sentence("Harbour\n=======")) == "Harbour"
    assert heading_title(sentence("Opening hours", heading="Opening hours")) == "Opening hours"  # an <h2>, a Word heading
    assert not is_heading_line(sentence("#hashtag is not a heading."))
    assert not is_heading_line(sentence("The ferry runs daily.", heading="Ferries"))
    assert not is_heading_line(sentence("##"))


def test_a_heading_line_is_located_under_its_own_title(tmp_path: Path):
    path = tmp_path / "harbour.md"
    path.write_text(HARBOUR)
    extracted = extract(path)
    located = extracted.locate(segment_sentences(extracted.text))
    for s in located:
        title = heading_title(s)
        if title is not None:
            assert s.heading == title, s
    assert [s.heading for s in located if "ferry" in s.text] == ["Ferries"] * 3


@pytest.fixture(scope="module")
def harbour_index(tmp_path_factory) -> LandmarkIndex:
    folder = tmp_path_factory.mktemp("headings")
    (folder / "docs").mkdir()
    (folder / "docs" / "harbour.md").write_text(HARBOUR)
    index = LandmarkIndex.open(str(folder / "db"))
    index.add_files([folder / "docs"])
    return index


@pytest.mark.parametrize("mode", ["hybrid", "dense", "lexical"])
def test_no_heading_is_a_hit_or_an_edge_and_a_passage_is_under_its_start(harbour_index: LandmarkIndex, mode: str):
    text = HARBOUR
    sections = {"Harbour": (0, text.index("## Ice")), "Ice-breaking": (text.index("## Ice"), text.index("Ferries\n-")),
                "Ferries": (text.index("Ferries\n-"), len(text))}
    seen = 0
    for question in QUESTIONS:
        for strategy in ("front", "surround"):
            for p in harbour_index.search(question, k=3, mode=mode, strategy=strategy):
                seen += 1
                lo, hi = sections[p.heading]
                assert lo <= p.start < hi, (question, p.heading, p.text)  # the section it starts in
                read = harbour_index.store.read_document(p.doc_id, range(p.first_index, p.last_index + 1))
                stored = {s.index: s for s in read.sentences}
                assert not is_heading_line(stored[p.first_index]) and not is_heading_line(stored[p.last_index]), p.text
                assert not any(is_heading_line(stored[i]) for i in p.hit_indices)
                assert not p.text.rstrip().endswith(("Ice-breaking", "-------")), p.text
    assert seen
    hits = harbour_index.hits("Ferries", 20, mode=mode)
    assert hits and not any(is_heading_line(h.sentence) for h in hits)
