"""``max_tokens`` in LlamaIndex: the postprocessor over any retriever's sentence nodes, and
``LandmarkHybridRetriever`` reading enough hits to fill a budget (real shipped model, real
``ChromaVectorStore``, real SQuAD prose).

The adapters only pass the budget on; the cut itself is the core's (tests/index), so these
check what a LlamaIndex user sees: node texts that are exact slices and fit the budget, a
hit in every node, ``top_n`` as a cap, and the same passages as the core's budgeted search.
"""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("llama_index.vector_stores.chroma")

import chromadb
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.schema import QueryBundle
from llama_index.vector_stores.chroma import ChromaVectorStore

from landmark_rag.llama_index import (
    BoundaryExpansionPostprocessor,
    LandmarkEmbedding,
    LandmarkHybridRetriever,
    LandmarkNodeParser,
)


@pytest.fixture(scope="module")
def setup(tmp_path_factory, excerpt_articles):
    """The excerpt articles through the documented pipeline, with the package's default model."""
    docs = [Document(text=a.text, id_=a.title, metadata={"title": a.title}) for a in excerpt_articles]
    questions = [q.text for a in excerpt_articles for q in a.questions[:2]]
    collection = chromadb.PersistentClient(path=str(tmp_path_factory.mktemp("chroma"))).get_or_create_collection("lmk")
    vs = ChromaVectorStore(chroma_collection=collection)
    embed = LandmarkEmbedding()
    IngestionPipeline(transformations=[LandmarkNodeParser(), embed], vector_store=vs).run(documents=docs)
    return vs, embed, {d.id_: d.text for d in docs}, questions


def check_nodes(nodes, texts: dict[str, str], count, budget: int) -> None:
    """Exact slices, each with a hit inside it, adding up to at most ``budget`` tokens."""
    assert nodes, "a budget always gets at least one passage"
    assert sum(count(n.node.text) for n in nodes) <= budget
    for n in nodes:
        md = n.node.metadata
        assert texts[md["doc_id"]][md["start"] : md["end"]] == n.node.text
        hits = [int(i) for i in str(md["hit_sentences"]).split(",")]
        assert all(md["first_sentence"] <= i <= md["last_sentence"] for i in hits)


def test_postprocessor_fits_a_plain_vector_retrievers_hits_to_the_budget(setup):
    vs, embed, texts, questions = setup
    plain = VectorStoreIndex.from_vector_store(vs, embed_model=embed).as_retriever(similarity_top_k=20)
    pp = BoundaryExpansionPostprocessor(vector_store=vs, embed_model=embed, max_tokens=90)
    capped = BoundaryExpansionPostprocessor(vector_store=vs, embed_model=embed, max_tokens=2000, top_n=2)
    count = embed.encoder.count_tokens
    for q in questions[:4]:
        hits = plain.retrieve(q)
        nodes = pp.postprocess_nodes(hits, query_str=q)
        check_nodes(nodes, texts, count, 90)
        best = max(hits, key=lambda h: h.score or 0.0).node.metadata  # the retriever's best sentence
        first = nodes[0].node.metadata
        assert first["doc_id"] == best["doc_id"]
        assert first["first_sentence"] <= best["sentence_index"] <= first["last_sentence"]
        wide = capped.postprocess_nodes(hits, query_str=q)
        assert 1 <= len(wide) <= 2  # top_n caps the passages a budget fills
        check_nodes(wide, texts, count, 2000)


def test_retriever_and_postprocessor_give_the_cores_budgeted_passages(setup):
    vs, embed, texts, questions = setup
    retriever = LandmarkHybridRetriever(vs, embed, max_tokens=250)
    pp = BoundaryExpansionPostprocessor(vector_store=vs, embed_model=embed, max_tokens=250)
    for q in questions[:3]:
        nodes = pp.postprocess_nodes(retriever.retrieve(q), query_str=q)
        check_nodes(nodes, texts, embed.encoder.count_tokens, 250)
        core = retriever.index.search(q, max_tokens=250)
        assert [n.node.id_ for n in nodes] == [p.id for p in core]
        # the async paths read the same hits and cut the same passages
        again = asyncio.run(pp.apostprocess_nodes(asyncio.run(retriever.aretrieve(q)), query_bundle=QueryBundle(q)))
        assert [n.node.id_ for n in again] == [p.id for p in core]


def test_max_tokens_is_a_serialised_field_under_the_public_path(setup):
    vs, embed, _, _ = setup
    from llama_index.postprocessor.landmark import BoundaryExpansionPostprocessor as Public

    assert Public is BoundaryExpansionPostprocessor and "max_tokens" in Public.model_fields
    pp = Public(vector_store=vs, embed_model=embed, max_tokens=64)
    assert pp.to_dict()["max_tokens"] == 64
    assert Public(vector_store=vs, embed_model=embed).max_tokens is None  # no budget unless asked


@pytest.mark.parametrize("bad", [0, -3, 12.5, "64", True])
def test_bad_budgets_are_refused_at_construction(setup, bad):
    vs, embed, _, _ = setup
    with pytest.raises(ValueError, match="max_tokens"):
        BoundaryExpansionPostprocessor(vector_store=vs, embed_model=embed, max_tokens=bad)
    with pytest.raises(ValueError, match="max_tokens"):
        LandmarkHybridRetriever(vs, embed, max_tokens=bad)
