"""Sentence segmentation: exact offsets, nothing lost, hard cases, long-sentence cutting."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from landmark_rag import Sentence, segment_sentences
from landmark_rag.segment import sentencex_spans, spans_to_sentences, split_long_sentences


def assert_valid(doc: str, sentences: list[Sentence], doc_id: str | None = None) -> None:
    """Every invariant the rest of the pipeline relies on."""
    last = 0
    for i, s in enumerate(sentences):
        assert s.index == i
        assert s.doc_id == doc_id
        assert s.text == doc[s.start : s.end]  # offsets round-trip
        assert s.text and s.text == s.text.strip()  # never empty, never padded with whitespace
        assert s.start >= last  # sorted, non-overlapping
        assert s.space_before == doc[last : s.start]
        assert s.space_before.strip() == ""  # only whitespace lies between sentences
        last = s.end
    assert doc[last:].strip() == ""
    # together they cover every non-whitespace character: rebuild the document from them
    rebuilt = "".join(s.space_before + s.text for s in sentences)
    assert rebuilt == doc[:last]
    assert rebuilt.strip() == doc.strip()


# --------------------------------------------------------------------------- hard cases
HARD_CASES = [
    pytest.param(
        "Dr. Smith arrived at 5 p.m. on Monday. He left early.",
        ["Dr. Smith arrived at 5 p.m. on Monday.", "He left early."],
        id="abbreviations",
    ),
    pytest.param(
        "The price rose 3.5 percent in 2015. Analysts, e.g. Mr. Lee, were surprised.",
        ["The price rose 3.5 percent in 2015.", "Analysts, e.g. Mr. Lee, were surprised."],
        id="decimals-eg",
    ),
    pytest.param(
        "See section 4.2. It explains the rule (see Fig. 3). Done.",
        ["See section 4.2.", "It explains the rule (see Fig. 3).", "Done."],
        id="section-numbers",
    ),
    pytest.param(
        '"Is it over?" she asked. "Yes," he said.', ['"Is it over?" she asked.', '"Yes," he said.'], id="quotes"
    ),
    pytest.param('He said: "Stop." Then he went home.', ['He said: "Stop."', "Then he went home."], id="quote-end"),
    pytest.param(
        "Shopping list:\n- apples\n- pears\n- plums", ["Shopping list:", "- apples", "- pears", "- plums"], id="bullets"
    ),
    pytest.param("1. Install it.\n2. Run it.\n3. Enjoy.", ["1. Install it.", "2. Run it.", "3. Enjoy."], id="numbered"),
    pytest.param(
        "First paragraph without a stop\n\nSecond paragraph. It has two sentences.",
        ["First paragraph without a stop", "Second paragraph.", "It has two sentences."],
        id="paragraph-break",
    ),
    pytest.param(
        "no punctuation at all just words flowing on", ["no punctuation at all just words flowing on"], id="no-punct"
    ),
    pytest.param("The U.S. Army won. Then it rained!", ["The U.S. Army won.", "Then it rained!"], id="initialism"),
    pytest.param("  Leading and trailing space.  \n", ["Leading and trailing space."], id="outer-space"),
]


@pytest.mark.parametrize(("text", "expected"), HARD_CASES)
def test_hard_cases(text: str, expected: list[str]) -> None:
    sentences = segment_sentences(text, doc_id="d")
    assert [s.text for s in sentences] == expected
    assert_valid(text, sentences, "d")


@pytest.mark.parametrize("text", ["", " ", "\n\n\t  \r\n"])
def test_empty_or_whitespace_gives_no_sentences(text: str) -> None:
    assert segment_sentences(text) == []


def test_not_a_string_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="str"):
        segment_sentences(b"bytes are not text")  # type: ignore[arg-type]


def test_newlines_inside_a_paragraph_and_unicode() -> None:
    doc = "Zürich liegt am See.\nDas Café öffnet um 8 Uhr. — Ende…\r\n\r\nNeuer Absatz 😀 hier."
    sentences = segment_sentences(doc)
    assert_valid(doc, sentences)
    assert len(sentences) >= 3
    assert sentences[-1].text.endswith("hier.")
    # a paragraph break always ends a sentence
    assert any(s.text.endswith("…") or s.text.endswith("Ende…") for s in sentences)


def test_squad_excerpt_round_trips(excerpt_articles) -> None:
    for art in excerpt_articles:
        sentences = segment_sentences(art.text, doc_id=art.title)
        assert_valid(art.text, sentences, art.title)
        # a blank line between paragraphs is always a sentence boundary
        for s in sentences:
            assert "\n\n" not in s.text
        assert len(sentences) > 10


# --------------------------------------------------------------------------- property tests
_WORDS = st.sampled_from(
    ["Dr.", "Mr.", "e.g.", "3.5", "U.S.", "word", "Word", "end.", "Why?", "Yes!", '"Quote."', "(a)", "-", "1.",
     "\n", "\n\n", " ", "\t", "…", "é", "…!", "", "''", "x"]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_WORDS, max_size=60).map(" ".join))
def test_property_offsets_round_trip_default_segmenter(doc: str) -> None:
    assert_valid(doc, segment_sentences(doc, doc_id="p"), "p")


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300))
def test_property_any_unicode_text(doc: str) -> None:
    assert_valid(doc, segment_sentences(doc))


@st.composite
def _doc_and_spans(draw):
    doc = draw(st.text(alphabet=st.sampled_from("ab .\n\t"), max_size=80))
    cuts = sorted(draw(st.lists(st.integers(0, len(doc)), max_size=12)))
    pairs = list(zip(cuts[::2], cuts[1::2]))  # disjoint spans, possibly leaving gaps
    return doc, draw(st.permutations(pairs))


@settings(max_examples=200, deadline=None)
@given(_doc_and_spans())
def test_property_custom_segmenter_never_loses_text(case) -> None:
    doc, spans = case
    sentences = segment_sentences(doc, segmenter=lambda _t: spans)
    assert_valid(doc, sentences)
    # every non-empty span the segmenter gave appears as a sentence (trimmed)
    texts = {(s.start, s.end) for s in sentences}
    for a, b in spans:
        stripped = doc[a:b].strip()
        if stripped:
            lead = len(doc[a:b]) - len(doc[a:b].lstrip())
            assert (a + lead, a + lead + len(stripped)) in texts


# --------------------------------------------------------------------------- custom segmenters
def test_custom_segmenter_offsets_are_used_and_gaps_kept() -> None:
    doc = "alpha beta. gamma delta; epsilon"
    # the segmenter only knows about the first 11 characters and "delta"
    sentences = segment_sentences(doc, segmenter=lambda t: [(0, 11), (18, 23)])
    assert [s.text for s in sentences] == ["alpha beta.", "gamma", "delta", "; epsilon"]
    assert_valid(doc, sentences)


@dataclass
class _Span:
    start: int
    end: int


def test_custom_segmenter_may_return_objects_with_start_end() -> None:
    doc = "One two. Three four."
    sentences = segment_sentences(doc, segmenter=lambda t: [_Span(9, 20), _Span(0, 8)])  # unsorted on purpose
    assert [s.text for s in sentences] == ["One two.", "Three four."]


def test_custom_segmenter_overlap_is_an_error() -> None:
    with pytest.raises(ValueError, match="overlap"):
        segment_sentences("One two. Three four.", segmenter=lambda t: [(0, 10), (5, 20)])


def test_custom_segmenter_out_of_range_is_an_error() -> None:
    with pytest.raises(ValueError, match="outside"):
        segment_sentences("short", segmenter=lambda t: [(0, 50)])
    with pytest.raises(ValueError, match="outside"):
        segment_sentences("short", segmenter=lambda t: [(3, 2)])


def test_custom_segmenter_bad_items_are_a_type_error() -> None:
    with pytest.raises(TypeError, match="start"):
        segment_sentences("short text", segmenter=lambda t: ["short", "text"])


def test_sentencex_spans_are_character_offsets() -> None:
    # multi-byte characters before a boundary would shift byte offsets
    doc = "Ünïcödé façade. Straße zwei."
    spans = sentencex_spans(doc)
    assert [doc[a:b].strip() for a, b in spans] == ["Ünïcödé façade.", "Straße zwei."]


def test_spans_to_sentences_drops_whitespace_only_spans() -> None:
    doc = "a   b"
    sentences = spans_to_sentences(doc, [(0, 1), (1, 4), (4, 5)], "x")
    assert [(s.text, s.space_before) for s in sentences] == [("a", ""), ("b", "   ")]


# --------------------------------------------------------------------------- long sentences
def _long_sentence(n_words: int) -> str:
    words = ["the", "landmark", "follows", "every", "sentence", "ofa", "document", "antidisestablishmentarianism"]
    return " ".join(words[i % len(words)] for i in range(n_words)) + "."


@pytest.mark.parametrize("max_tokens", [1, 2, 7, 32])
def test_long_sentences_are_cut_to_fit(minilm_tokenizer, max_tokens: int) -> None:
    doc = "Short one. " + _long_sentence(120) + "\n\nAnother short one."
    sentences = segment_sentences(doc, doc_id="L", max_tokens=max_tokens, tokenizer=minilm_tokenizer)
    assert_valid(doc, sentences, "L")
    for s in sentences:
        n = len(minilm_tokenizer(s.text, add_special_tokens=False)["input_ids"])
        assert n <= max_tokens, (s.text, n)
    if max_tokens >= 32:
        # cuts prefer word boundaries (searched in the last half of the budget; the longest
        # word here is under 16 tokens): no piece starts inside a word
        for s in sentences:
            assert s.start == 0 or not doc[s.start - 1].isalnum(), s.text


def test_short_sentences_are_left_alone(minilm_tokenizer) -> None:
    doc = "Dr. Smith arrived at 5 p.m. on Monday. He left early."
    plain = segment_sentences(doc)
    assert segment_sentences(doc, max_tokens=64, tokenizer=minilm_tokenizer) == plain


def test_a_single_unbreakable_token_run_is_cut_at_token_boundaries(minilm_tokenizer) -> None:
    # one "word" of 27 WordPiece tokens (BERT turns words over 100 characters into one [UNK])
    doc = "x" * 5 + "Supercalifragilisticexpialidocious" * 2
    sentences = segment_sentences(doc, max_tokens=5, tokenizer=minilm_tokenizer)
    assert_valid(doc, sentences)
    assert len(sentences) > 1
    for s in sentences:
        assert len(minilm_tokenizer(s.text, add_special_tokens=False)["input_ids"]) <= 5


def test_max_tokens_needs_a_tokenizer_and_a_positive_value(minilm_tokenizer) -> None:
    with pytest.raises(ValueError, match="tokenizer"):
        segment_sentences("Some text.", max_tokens=10)
    with pytest.raises(ValueError, match=">= 1"):
        split_long_sentences("Some text.", segment_sentences("Some text."), minilm_tokenizer, 0)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.sampled_from(["alpha", "β", "3.14", "end.", "\n", "antidisestablishmentarianism", ",", "x"]), max_size=80)
    .map(" ".join),
    st.integers(1, 12),
)
def test_property_long_sentence_split(minilm_tokenizer, doc: str, max_tokens: int) -> None:
    sentences = segment_sentences(doc, max_tokens=max_tokens, tokenizer=minilm_tokenizer)
    assert_valid(doc, sentences)
    for s in sentences:
        assert len(minilm_tokenizer(s.text, add_special_tokens=False)["input_ids"]) <= max_tokens
