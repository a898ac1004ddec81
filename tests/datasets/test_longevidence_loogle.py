"""The LooGLE source of the long-evidence benchmark: the annotators' evidence sentences are
placed exactly in the article (or the question is dropped), and the committed file
data/long-evidence/loogle-v1.json reads back with the counts its README records."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from landmark_rag.datasets.longevidence import MIN_EVIDENCE_CHARS, assign_split, load_long_evidence

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "data" / "long-evidence" / "loogle-v1.json"


@pytest.fixture(scope="module")
def build() -> ModuleType:
    """scripts/build_long_evidence.py, imported by path (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location("build_long_evidence", ROOT / "scripts" / "build_long_evidence.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ARTICLE = (
    "Early life. Picardo was born in Jerez de la Frontera, in the Province of Cádiz, on 18 June 1919.[1] "
    "His father died in 1929 when Picardo was ten years old. With his mother and his brothers he moved "
    "to Madrid, Spain. Career. He restored the castle of Montjuïc with Erdoğan's blessing, \"a modest inn\". "
    "On qualifying in 1951, Picardo pursued his interest in historical architecture by collaborating on "
    "building preservation projects."
)


def test_find_ignores_whitespace_case_punctuation_and_citations(build: ModuleType) -> None:
    doc = build.FoldedText(ARTICLE)
    # the annotators' copy: a line break, no citation mark, a lost comma, other case
    s, e = doc.find("Picardo was born in Jerez de la Frontera, in the\nprovince of Cádiz on 18 June 1919.")
    assert ARTICLE[s:e] == "Picardo was born in Jerez de la Frontera, in the Province of Cádiz, on 18 June 1919."
    # letters the sample's encoding turned into "?" match any one letter; the span takes the
    # text's own closing quote and period
    s, e = doc.find("He restored the castle of Montju?c with Erdo?an's blessing, \"a modest inn\".")
    assert ARTICLE[s:e] == "He restored the castle of Montjuïc with Erdoğan's blessing, \"a modest inn\"."
    assert doc.find("He restored the castle of Montju?c with Erdo?an's help") is None  # other words
    assert doc.find("Career.") is None  # too short to place


def test_evidence_pieces_are_placed_or_the_question_dropped(build: ModuleType) -> None:
    doc = build.FoldedText(ARTICLE)
    # an elision and an item number split the string into two quotations, found in order
    spans = build.locate_loogle_evidence(doc, ["His father died in 1929 ...... With his mother and his brothers",
                                               "2.On qualifying in 1951, Picardo pursued his interest"])
    texts = [ARTICLE[s:e] for s, e in spans]
    assert texts == ["His father died in 1929", "With his mother and his brothers",
                     "On qualifying in 1951, Picardo pursued his interest"]
    # a string of two sentences that are apart in the text: placed sentence by sentence
    spans = build.locate_loogle_evidence(doc, "Picardo was born in Jerez de la Frontera. On qualifying in 1951, Picardo pursued")
    assert [ARTICLE[s:e] for s, e in spans] == ["Picardo was born in Jerez de la Frontera", "On qualifying in 1951, Picardo pursued"]
    # one sentence that the annotator rewrote: the whole question goes
    assert build.locate_loogle_evidence(doc, ["His father died in 1929.", "He had four brothers,one of brothers died."]) is None


def test_convert_document_counts_what_it_drops(build: ModuleType) -> None:
    pairs = [
        {"Q": "Where was he born and raised?", "A": "Jerez, then Madrid.",
         "S": ["Picardo was born in Jerez de la Frontera, in the Province of Cádiz, on 18 June 1919.",
               "With his mother and his brothers he moved to Madrid, Spain."]},
        {"Q": "When did his father die?", "A": "1929", "S": ["His father died in 1929 when Picardo was ten years old."]},
        {"Q": "Who were his teachers?", "A": "?", "S": ["He studied under Luis Moya Blanco for nine years."]},
    ]
    doc, dropped = build.convert_loogle_document("José Luis Picardo", ARTICLE, [("longdep", pairs)], min_evidence_chars=100)
    assert doc.doc_id == "loogle:jose-luis-picardo" and doc.split == assign_split(doc.doc_id)
    assert doc.source == "loogle" and doc.source_split == "test"
    assert dropped == {"unlocated": 1, "short": 1}
    (q,) = doc.questions
    assert q.qid == "loogle:jose-luis-picardo:longdep-0" and q.answers == ("Jerez, then Madrid.",)
    assert [ARTICLE[s:e] for s, e in q.evidence] == [
        "Picardo was born in Jerez de la Frontera, in the Province of Cádiz, on 18 June 1919.",
        "With his mother and his brothers he moved to Madrid, Spain.",
    ]
    assert build.loogle_doc_id("2023 Turkey–Syria earthquake") == "loogle:2023-turkey-syria-earthquake"


def test_committed_loogle_file() -> None:
    data = load_long_evidence(COMMITTED)  # checks every span is inside its document
    assert COMMITTED.stat().st_size < 2 * 2**20
    (source,) = data.sources
    assert source["name"] == "loogle" and len(source["commit"]) == 40 and "CC BY-SA" in source["licence"]
    # the README's counts, and the build's own accounting of what it dropped
    assert data.counts() == {"loogle": {"heldout": {"documents": 5, "questions": 46},
                                        "validation": {"documents": 3, "questions": 18}}}
    assert (source["questions_read"] - source["questions_excluded_with_document"] - source["questions_unlocated"]
            - source["questions_short_evidence"]) == data.n_questions == 64
    titles = {d.title for d in data.documents}
    assert titles.isdisjoint(source["excluded_documents"])
    for d in data.documents:
        assert d.source == "loogle" and d.source_split == "test" and d.split == assign_split(d.doc_id)
        assert len(d.text) > 50_000  # long: the shortest article is about 12k tokens
        for q in d.questions:
            assert q.evidence_chars >= MIN_EVIDENCE_CHARS
            for s, e in q.evidence:  # a span starts and ends on text, never on a space
                assert not d.text[s].isspace() and not d.text[e - 1].isspace()
    val = load_long_evidence(COMMITTED, split="validation")
    held = load_long_evidence(COMMITTED, split="heldout")
    assert {d.doc_id for d in val.documents}.isdisjoint(d.doc_id for d in held.documents)
    assert val.n_questions + held.n_questions == data.n_questions
    # one question read back: its evidence is the article's own sentences about Article 49.3
    doc = next(d for d in data.documents if d.doc_id == "loogle:2023-french-pension-reform-unrest")
    q = next(q for q in doc.questions if q.question.startswith("Why could Marine Le Pen"))
    gold = " ".join(doc.text[s:e] for s, e in q.evidence)
    assert gold.startswith("Article 49.3 of the French Constitution allows governments to bypass the National Assembly")
    assert "file a no-confidence motion" in gold
