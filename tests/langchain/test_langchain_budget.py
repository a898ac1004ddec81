"""``max_tokens`` in LangChain: ``LandmarkRetriever`` and ``BoundaryExpansionCompressor``
(real shipped model, real persistent Chroma, real SQuAD prose).

The adapters only pass the budget on; the cut itself is the core's (tests/index), so these
check what a LangChain user sees: passages that are exact slices cut between sentences and
fit the budget, a hit in every passage, ``k`` as a cap, every way of giving the budget, and
the same passages as the core's budgeted search.
"""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("langchain_core")

from langchain_core.documents import Document

from landmark_rag.langchain import BoundaryExpansionCompressor, LandmarkEmbeddings, LandmarkRetriever


@pytest.fixture(scope="module")
def built(tmp_path_factory, excerpt_articles):
    """The excerpt articles ingested once through the retriever, with the default model."""
    base = {"persist_directory": str(tmp_path_factory.mktemp("lc-budget")), "collection_name": "budget"}
    docs = [Document(page_content=a.text, metadata={"title": a.title}, id=a.title) for a in excerpt_articles]
    LandmarkRetriever.from_documents(docs, embeddings=LandmarkEmbeddings(), **base)
    questions = [q.text for a in excerpt_articles for q in a.questions[:2]]
    return base, {d.id: d.page_content for d in docs}, questions


def check(passages: list[Document], texts: dict[str, str], retriever: LandmarkRetriever, budget: int) -> None:
    """Exact slices starting and ending on sentences, each with a hit, within ``budget``."""
    index = retriever.index
    assert passages, "a budget always gets at least one passage"
    assert sum(index.count_tokens(p.page_content) for p in passages) <= budget
    for p in passages:
        md = p.metadata
        text = texts[md["doc_id"]]
        assert text[md["start"] : md["end"]] == p.page_content
        sents = index.encoder.segment(text, md["doc_id"])
        assert sents[md["first_sentence"]].start == md["start"] and sents[md["last_sentence"]].end == md["end"]
        hits = [int(i) for i in str(md["hit_sentences"]).split(",")]
        assert hits and all(md["first_sentence"] <= i <= md["last_sentence"] for i in hits)


def test_retriever_budget_every_way_it_is_given(built):
    base, texts, questions = built
    retriever = LandmarkRetriever(**base, max_tokens=120)
    for q in questions[:3]:
        passages = retriever.invoke(q)
        check(passages, texts, retriever, 120)
        # the adapter holds no algorithm: the core's budgeted search gives the same passages
        assert [p.id for p in passages] == [p.id for p in retriever.index.search(q, max_tokens=120)]
        assert [p.id for p in LandmarkRetriever(**base, search_kwargs={"max_tokens": 120}).invoke(q)] == [
            p.id for p in passages
        ]
        assert [p.id for p in asyncio.run(retriever.ainvoke(q))] == [p.id for p in passages]
        per_call = LandmarkRetriever(**base).invoke(q, max_tokens=120)  # a call's own budget
        assert [p.id for p in per_call] == [p.id for p in passages]


def test_k_caps_a_budget_only_when_given(built):
    base, texts, questions = built
    q = questions[0]
    uncapped = LandmarkRetriever(**base, max_tokens=1500)  # k left at its default: no cap
    whole = uncapped.invoke(q)
    assert len(whole) >= 3
    assert [p.id for p in whole] == [p.id for p in uncapped.index.search(q, None, max_tokens=1500)]
    capped = LandmarkRetriever(**base, max_tokens=1500, k=2)
    assert len(capped.invoke(q)) == 2
    assert len(uncapped.invoke(q, k=1)) == 1  # a call's k caps too
    check(capped.invoke(q), texts, capped, 1500)
    assert len(LandmarkRetriever(**base, k=3).invoke(q)) == 3  # no budget: exactly k


def test_compressor_fits_chroma_hits_to_the_budget(built):
    base, texts, questions = built
    retriever = LandmarkRetriever(**base)
    store = retriever.as_vectorstore().as_retriever(search_kwargs={"k": 30})
    compressor = BoundaryExpansionCompressor(**base, max_tokens=100)
    capped = BoundaryExpansionCompressor(**base, max_tokens=3000, k=2)
    for q in questions[:3]:
        hits = store.invoke(q)
        out = list(compressor.compress_documents(hits, q))
        check(out, texts, retriever, 100)
        assert 1 <= len(capped.compress_documents(hits, q)) <= 2


@pytest.mark.parametrize("bad", [0, -1, 2.5, "100", True])
def test_bad_budgets_are_refused(built, bad):
    base, _, questions = built
    with pytest.raises(ValueError, match="max_tokens"):
        LandmarkRetriever(**base, max_tokens=bad)
    with pytest.raises(ValueError, match="max_tokens"):
        LandmarkRetriever(**base, search_kwargs={"max_tokens": bad})
    with pytest.raises(ValueError, match="max_tokens"):
        BoundaryExpansionCompressor(**base, max_tokens=bad)
    with pytest.raises(ValueError, match="max_tokens"):
        LandmarkRetriever(**base).invoke(questions[0], max_tokens=bad)


def test_the_public_import_path_takes_max_tokens():
    import langchain_landmark

    assert langchain_landmark.LandmarkRetriever is LandmarkRetriever
    assert "max_tokens" in langchain_landmark.LandmarkRetriever.model_fields
    assert "max_tokens" in langchain_landmark.BoundaryExpansionCompressor.model_fields
