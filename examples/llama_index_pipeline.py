"""landmark-rag inside LlamaIndex: the four usage patterns, end to end.

Imports only llama-index-core, llama-index-vector-stores-chroma, chromadb and landmark-rag's
LlamaIndex integration paths (``llama_index.embeddings.landmark``,
``llama_index.node_parser.landmark``, ``llama_index.postprocessor.landmark``). Run:

    python examples/llama_index_pipeline.py [--data data/squad-v1.1-dev-part-a.json]
        [--articles 2] [--paragraphs 4] [--db ./landmark_llama_db]

1. ``IngestionPipeline`` writing sentence nodes with in-context vectors into Chroma;
2. ``VectorStoreIndex.from_documents`` with the same transformations;
3. ``Settings`` so that every index picks the landmark components up;
4. a query engine whose retrieved sentences are expanded into passages (any LLM; MockLLM
   here, which echoes its prompt).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import chromadb
from llama_index.core import Document, Settings, StorageContext, VectorStoreIndex
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.llms import MockLLM
from llama_index.vector_stores.chroma import ChromaVectorStore

from llama_index.embeddings.landmark import LandmarkEmbedding
from llama_index.node_parser.landmark import LandmarkNodeParser, ReplaceDocuments
from llama_index.postprocessor.landmark import BoundaryExpansionPostprocessor

DEFAULT_DATA = Path(__file__).resolve().parents[1] / "data" / "squad-v1.1-dev-part-a.json"


def load_documents(path: Path, articles: int, paragraphs: int | None) -> tuple[list[Document], list[str]]:
    """SQuAD articles as long documents (paragraphs joined by a blank line) and a question each."""
    data = json.loads(path.read_text(encoding="utf-8"))["data"][:articles]
    docs, questions = [], []
    for art in data:
        paras = art["paragraphs"][:paragraphs]
        text = "\n\n".join(p["context"] for p in paras)
        docs.append(Document(text=text, id_=art["title"], metadata={"title": art["title"]}))
        questions.append(paras[0]["qas"][0]["question"])
    return docs, questions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--articles", type=int, default=2)
    parser.add_argument("--paragraphs", type=int, default=4, help="first N paragraphs of each article (0: all)")
    parser.add_argument("--db", type=Path, default=None, help="Chroma directory (default: a temporary one)")
    parser.add_argument("--model", default=None, help="model alias or path (default: the package's, landmark-minilm)")
    args = parser.parse_args()

    docs, questions = load_documents(args.data, args.articles, args.paragraphs or None)
    db = str(args.db or tempfile.mkdtemp(prefix="landmark_llama_"))
    client = chromadb.PersistentClient(path=db)
    embed = LandmarkEmbedding(args.model)  # None: the package default; loaded on first use
    splitter = LandmarkNodeParser.for_embedding(embed)  # cuts over-long sentences as the encoder does

    # 1. IngestionPipeline -> ChromaVectorStore (ReplaceDocuments: re-ingesting replaces)
    vector_store = ChromaVectorStore(chroma_collection=client.get_or_create_collection("landmark_pipeline"))
    pipeline = IngestionPipeline(
        transformations=[splitter, embed, ReplaceDocuments(vector_store, embed_model=embed)],
        vector_store=vector_store,
    )
    nodes = pipeline.run(documents=docs)
    pipeline.run(documents=docs)  # idempotent
    count = vector_store.client.count()
    print(f"[1] IngestionPipeline: {len(docs)} documents -> {len(nodes)} sentence nodes, {count} in Chroma")
    assert count == len(nodes)

    # 2. VectorStoreIndex.from_documents; nodes arrive embedded, so the index does not re-embed
    store2 = ChromaVectorStore(chroma_collection=client.get_or_create_collection("landmark_index"))
    index2 = VectorStoreIndex.from_documents(
        docs,
        transformations=[splitter, embed],
        embed_model=embed,
        storage_context=StorageContext.from_defaults(vector_store=store2),
    )
    print(f"[2] VectorStoreIndex.from_documents: {store2.client.count()} sentences in Chroma")

    # 3. Settings: every index built afterwards uses the landmark components
    Settings.embed_model = embed
    Settings.transformations = [splitter, embed]
    Settings.llm = MockLLM(max_tokens=32)
    store3 = ChromaVectorStore(chroma_collection=client.get_or_create_collection("landmark_settings"))
    index3 = VectorStoreIndex.from_documents(docs, storage_context=StorageContext.from_defaults(vector_store=store3))
    print(f"[3] Settings: {store3.client.count()} sentences in Chroma")

    # 4. a query engine with boundary expansion (Front-3: the hit and the two sentences before it)
    index = VectorStoreIndex.from_vector_store(vector_store, embed_model=embed)
    engine = index.as_query_engine(
        llm=MockLLM(max_tokens=32),
        similarity_top_k=5,
        node_postprocessors=[BoundaryExpansionPostprocessor(vector_store=vector_store, strategy="front")],
    )
    for question in questions:
        response = engine.query(question)
        print(f"\n[4] Q: {question}")
        for hit in response.source_nodes:
            md = hit.node.metadata
            print(
                f"    {hit.score:.3f} {md['doc_id']} sentences {md['first_sentence']}-{md['last_sentence']} "
                f"(hit {md['hit_sentences']}): {hit.node.text[:90]!r}..."
            )
    for idx in (index2, index3):
        assert idx.as_retriever(similarity_top_k=1).retrieve(questions[0])
    print(f"\nChroma directory: {db}")


if __name__ == "__main__":
    main()
