"""LlamaIndex without Chroma: the default in-memory ``VectorStoreIndex`` and FAISS.

``VectorStoreIndex(nodes, embed_model=...)`` embeds nodes that carry no vector as bare strings
(``get_text_embedding_batch``), where ``LandmarkEmbedding`` cannot see their document. That
must not happen silently (``OutOfContextWarning``), and nodes embedded first
(``embed(nodes)``) must keep their in-context vectors in either index. Real landmark-minilm
on the first paragraphs of real SQuAD articles.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("llama_index.core")

from llama_index.core import Document, StorageContext, VectorStoreIndex

from landmark_rag.index.handoff import OutOfContextWarning
from landmark_rag.llama_index import (
    BoundaryExpansionPostprocessor,
    LandmarkEmbedding,
    LandmarkNodeParser,
)


@pytest.fixture(scope="module")
def docs(squad_articles) -> list[Document]:
    return [
        Document(text="\n\n".join(a.text.split("\n\n")[:2]), id_=a.title, metadata={"title": a.title})
        for a in squad_articles[:2]
    ]


@pytest.fixture(scope="module")
def embed() -> LandmarkEmbedding:
    return LandmarkEmbedding()


def in_context(embed: LandmarkEmbedding, docs: list[Document], nodes) -> np.ndarray:
    whole = {d.id_: embed.encoder.encode_document(d.text, d.id_).embeddings for d in docs}
    return np.array([whole[n.metadata["doc_id"]][n.metadata["sentence_index"]] for n in nodes])


def faiss_storage(dim: int) -> StorageContext:
    faiss = pytest.importorskip("faiss", reason="faiss-cpu (test extra)")
    vector_stores = pytest.importorskip("llama_index.vector_stores.faiss", reason="llama-index-vector-stores-faiss")
    return StorageContext.from_defaults(vector_store=vector_stores.FaissVectorStore(faiss_index=faiss.IndexFlatIP(dim)))


def test_unembedded_nodes_in_a_vector_store_index_warn(docs, embed):
    nodes = LandmarkNodeParser.for_embedding(embed).get_nodes_from_documents(docs)
    with pytest.warns(OutOfContextWarning) as caught:
        index = VectorStoreIndex(nodes, embed_model=embed)
    messages = [str(w.message) for w in caught if w.category is OutOfContextWarning]
    assert "nodes = embed_model(nodes)" in messages[0]
    assert sum(int(m.split(" of ")[0]) for m in messages) == len(nodes)  # one warning per batch LlamaIndex sends
    # what LlamaIndex stored: each sentence alone, not the in-context vector
    stored = np.array([index.vector_store.get(n.node_id) for n in nodes])
    cosines = np.sum(stored * in_context(embed, docs, nodes), axis=1)
    assert cosines.mean() < 0.95
    # a standalone string is not a parsed sentence: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutOfContextWarning)
        embed.get_text_embedding("A question nobody parsed, embedded on its own.")


@pytest.mark.parametrize("store", ["memory", "faiss"])
def test_nodes_embedded_first_keep_their_vectors(docs, embed, store):
    nodes = LandmarkNodeParser.for_embedding(embed).get_nodes_from_documents(docs)
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutOfContextWarning)
        embedded = embed(nodes)  # in context: one pass per document
        storage = faiss_storage(embed.encoder.dim) if store == "faiss" else None
        index = VectorStoreIndex(embedded, embed_model=embed, storage_context=storage)
    want = in_context(embed, docs, nodes)
    if store == "faiss":
        faiss_index = index.vector_store._faiss_index
        stored = np.array([faiss_index.reconstruct(i) for i in range(faiss_index.ntotal)])
    else:
        stored = np.array([index.vector_store.get(n.node_id) for n in nodes])
    np.testing.assert_allclose(stored, want, atol=1e-5)
    # retrieval and expansion from the index's docstore (no Chroma anywhere)
    question = nodes[3].text
    hits = index.as_retriever(similarity_top_k=3).retrieve(question)
    assert hits[0].node.node_id == nodes[3].node_id
    post = BoundaryExpansionPostprocessor(docstore=index.docstore, vector_store=index.vector_store, strategy="surround")
    passages = post.postprocess_nodes(hits, query_str=question)
    source = {d.id_: d.text for d in docs}
    for p in passages:
        md = p.node.metadata
        assert source[md["doc_id"]][md["start"] : md["end"]] == p.node.text
    assert nodes[3].text in passages[0].node.text


def test_docs_in_memory_block_runs(capsys):
    """The docs/llama_index.md block for an in-memory index, as it stands, warns of nothing."""
    import re
    from pathlib import Path

    page = (Path(__file__).parents[2] / "docs" / "llama_index.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL) if "embed(LandmarkNodeParser" in b]
    assert len(blocks) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutOfContextWarning)
        exec(compile(blocks[0], "docs/llama_index.md", "exec"), {"__name__": "__docs__"})  # noqa: S102 - our docs
    assert "Ice-breaking was tried in 1931" in capsys.readouterr().out
