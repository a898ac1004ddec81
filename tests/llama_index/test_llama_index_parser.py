"""LandmarkNodeParser: sentence nodes with exact offsets, deterministic ids, core schema.

No model is loaded here (only MiniLM's tokenizer for the long-sentence case), so these run
in well under a second each on real SQuAD prose from tests/data.
"""

from __future__ import annotations

import re

import pytest

pytest.importorskip("llama_index.core")

import itertools

from llama_index.core import Document
from llama_index.core.schema import MetadataMode, NodeRelationship, TextNode

from landmark_rag.llama_index import LandmarkNodeParser
from landmark_rag.llama_index.convert import HIDDEN_KEYS, node_to_sentence
from landmark_rag.segment import segment_sentences
from landmark_rag.store import content_hash, sentence_id
from landmark_rag.store.schema import SCHEMA_KEYS


@pytest.fixture(scope="module")
def docs(excerpt_articles) -> list[Document]:
    return [
        Document(
            text=a.text, id_=a.title, metadata={"title": a.title, "tags": ["squad", "dev"], "year": 2016, "none": None}
        )
        for a in excerpt_articles
    ]


def test_one_node_per_sentence_with_exact_offsets_and_ids(docs):
    nodes = LandmarkNodeParser().get_nodes_from_documents(docs)
    expected = [s for d in docs for s in segment_sentences(d.text, doc_id=d.id_)]
    assert len(nodes) == len(expected) > 30
    by_id = {d.id_: d for d in docs}
    for node, sent in zip(nodes, expected, strict=True):
        assert isinstance(node, TextNode)
        assert node.id_ == sentence_id(sent.doc_id, sent.index)
        assert node.text == sent.text
        doc = by_id[sent.doc_id]
        assert doc.text[node.start_char_idx : node.end_char_idx] == node.text
        assert node.ref_doc_id == doc.id_
        assert node_to_sentence(node) == sent  # the core can read it back exactly
        assert node.metadata["doc_hash"] == content_hash(doc.text)


def test_relationships_follow_document_order(docs):
    nodes = LandmarkNodeParser().get_nodes_from_documents(docs)
    for doc in docs:
        mine = [n for n in nodes if n.ref_doc_id == doc.id_]
        assert mine[0].prev_node is None and mine[-1].next_node is None
        for a, b in itertools.pairwise(mine):
            assert a.next_node.node_id == b.id_ and b.prev_node.node_id == a.id_
        assert all(n.relationships[NodeRelationship.SOURCE].node_id == doc.id_ for n in mine)
    # prev/next never cross documents
    assert all(n.next_node is None or n.next_node.node_id.rsplit(":", 1)[0] == n.ref_doc_id for n in nodes)


def test_metadata_is_flat_and_schema_keys_stay_out_of_prompts(docs):
    nodes = LandmarkNodeParser().get_nodes_from_documents(docs)
    node = nodes[5]
    assert all(isinstance(v, str | int | float | bool) for v in node.metadata.values())
    assert node.metadata["tags"] == '["squad", "dev"]'
    assert node.metadata["year"] == 2016 and "none" not in node.metadata
    assert set(SCHEMA_KEYS) <= set(node.metadata)
    for mode in (MetadataMode.LLM, MetadataMode.EMBED):
        rendered = node.get_content(metadata_mode=mode)
        assert "title: " in rendered and node.text in rendered
        for key in HIDDEN_KEYS:
            assert not re.search(rf"^{key}: ", rendered, flags=re.MULTILINE), (mode, key)


def test_ids_are_stable_across_runs_and_independent_of_id_func(docs):
    a = LandmarkNodeParser().get_nodes_from_documents(docs[:1])
    b = LandmarkNodeParser(id_func=lambda i, doc: f"random-{i}").get_nodes_from_documents(docs[:1])
    assert [n.id_ for n in a] == [n.id_ for n in b]
    assert [n.hash for n in a] == [n.hash for n in b]


def test_custom_segmenter_and_repeated_sentences():
    def by_line(text: str):
        start = 0
        for line in text.split("\n"):
            yield start, start + len(line)
            start += len(line) + 1

    text = "Yes.\nNo.\nYes.\nA.\nYes. A.\nA."
    parser = LandmarkNodeParser(segmenter=by_line)
    assert parser.segmenter_name.endswith("by_line")
    nodes = parser.get_nodes_from_documents([Document(text=text, id_="d")])
    assert [n.text for n in nodes] == ["Yes.", "No.", "Yes.", "A.", "Yes. A.", "A."]
    # str.find would place the last "A." inside "Yes. A."; the offsets must stay exact
    assert [text[n.start_char_idx : n.end_char_idx] for n in nodes] == [n.text for n in nodes]
    assert nodes[-1].start_char_idx == len(text) - 2


def test_long_sentences_are_cut_like_the_encoder_does(minilm_tokenizer):
    words = " ".join(f"word{i}" for i in range(400))
    text = f"Short one. {words}. Last one."
    parser = LandmarkNodeParser(tokenizer=minilm_tokenizer, max_sentence_tokens=64)
    nodes = parser.get_nodes_from_documents([Document(text=text, id_="long")])
    assert len(nodes) > 5
    assert all(len(minilm_tokenizer(n.text, add_special_tokens=False)["input_ids"]) <= 64 for n in nodes)
    assert all(text[n.start_char_idx : n.end_char_idx] == n.text for n in nodes)
    with pytest.raises(ValueError, match="tokenizer"):
        LandmarkNodeParser(max_sentence_tokens=64)


@pytest.fixture
def settings_embed_model():
    """Restore LlamaIndex's global Settings after a test sets its embed model."""
    from llama_index.core import Settings

    saved = Settings._embed_model
    yield Settings
    Settings._embed_model = saved


def test_default_parser_cuts_like_the_settings_embedding(tiny_encoder, settings_embed_model):
    from llama_index.core.embeddings import MockEmbedding

    from landmark_rag.llama_index import LandmarkEmbedding

    encoder = tiny_encoder(max_length=64)
    words = " ".join(f"word{i}" for i in range(300))
    text = f"Short one. {words}. Last one."
    doc = Document(text=text, id_="long")
    limit = encoder.max_sentence_tokens
    n_tokens = [len(encoder.tokenizer(s.text, add_special_tokens=False)["input_ids"]) for s in encoder.segment(text)]
    assert max(n_tokens) <= limit < 300  # what the encoder itself stores for this document

    settings_embed_model._embed_model = MockEmbedding(embed_dim=8)  # not a landmark encoder: nothing to cut by
    assert len(LandmarkNodeParser().get_nodes_from_documents([doc])) == 3

    settings_embed_model._embed_model = LandmarkEmbedding(encoder=encoder)
    nodes = LandmarkNodeParser().get_nodes_from_documents([doc])
    assert [n.text for n in nodes] == [s.text for s in encoder.segment(text)]  # the encoder's own sentences
    assert len(nodes) == len(n_tokens) > 3
    assert all(text[n.start_char_idx : n.end_char_idx] == n.text for n in nodes)
    # opting out keeps the long sentence whole
    assert len(LandmarkNodeParser(cut_long_sentences=False).get_nodes_from_documents([doc])) == 3


def test_empty_document_gives_no_nodes_and_include_metadata_false(docs):
    parser = LandmarkNodeParser(include_metadata=False)
    nodes = parser.get_nodes_from_documents([Document(text="  \n ", id_="empty"), docs[0]])
    assert nodes and all(n.ref_doc_id == docs[0].id_ for n in nodes)
    assert "title" not in nodes[0].metadata and set(nodes[0].metadata) == set(SCHEMA_KEYS)


async def test_async_parsing_matches_sync(docs):
    parser = LandmarkNodeParser()
    a = parser.get_nodes_from_documents(docs)
    b = await parser.acall(docs)
    assert [(n.id_, n.start_char_idx, n.metadata) for n in a] == [(n.id_, n.start_char_idx, n.metadata) for n in b]


async def test_async_parsing_runs_off_the_event_loop():
    import threading

    threads: list[int] = []

    def segmenter(text: str) -> list[tuple[int, int]]:
        threads.append(threading.get_ident())
        return [(0, len(text))]

    nodes = await LandmarkNodeParser(segmenter=segmenter).acall([Document(text="One. Two.", id_="d")])
    assert len(nodes) == 1 and threads and threading.get_ident() not in threads


def test_pickled_parser_refuses_to_lose_a_custom_segmenter():
    import pickle

    parser = LandmarkNodeParser(segmenter=lambda text: [(0, len(text))])
    clone = pickle.loads(pickle.dumps(parser))
    with pytest.raises(RuntimeError, match="segmenter"):
        clone.get_nodes_from_documents([Document(text="One. Two.", id_="d")])
    plain = pickle.loads(pickle.dumps(LandmarkNodeParser()))
    assert len(plain.get_nodes_from_documents([Document(text="One. Two.", id_="d")])) == 2
