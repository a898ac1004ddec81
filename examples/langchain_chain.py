"""Landmark retrieval inside a LangChain (LCEL) RAG chain, on real SQuAD articles.

What it shows, end to end:

1. ingest whole articles into a persistent Chroma with ``LandmarkRetriever`` (each article
   is encoded in one pass, one context-aware vector per sentence);
2. ask a question and get exactly ``k=3`` passages, each checked to be the exact slice
   ``article[start:end]`` named by its metadata;
3. run the retriever inside ``{"context": retriever | format_docs, "question": ...} | prompt | llm``;
4. read the same collection through plain ``langchain_chroma.Chroma`` (sentence hits).

The chat model is langchain-core's ``FakeListChatModel`` so the example runs offline;
put any LangChain chat model in its place. Run::

    python examples/langchain_chain.py                      # 3 short articles, a temp db
    python examples/langchain_chain.py --persist-dir ./lc_db --question "..."

Needs only langchain-core, langchain-chroma, chromadb and landmark-rag
(``pip install landmark-rag[langchain]``) plus the data file (SQuAD v1.1 dev, CC BY-SA 4.0).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import chromadb
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough

from langchain_landmark import LandmarkRetriever

DATA = Path(__file__).resolve().parent.parent / "data" / "squad-v1.1-dev-part-a.json"
#: Three of the shortest articles of the file, so the example runs in seconds on a laptop.
TITLES = ["Construction", "Victoria_(Australia)", "Jacksonville,_Florida"]
COLLECTION = "squad-articles"

PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "Answer the question using only the context. Cite passages by their [id]."),
        ("human", "Context:\n{context}\n\nQuestion: {question}"),
    ]
)


def load_documents(path: Path = DATA, titles: list[str] = TITLES) -> tuple[list[Document], list[str]]:
    """The articles as LangChain documents (paragraphs joined by a blank line) and their questions.

    ``Document.id`` is the article title, so running the example again replaces (or, when
    nothing changed, skips) the articles instead of duplicating them.
    """
    articles = {a["title"]: a for a in json.loads(path.read_text(encoding="utf-8"))["data"]}
    docs, questions = [], []
    for title in titles:
        paragraphs = articles[title]["paragraphs"]
        text = "\n\n".join(p["context"] for p in paragraphs)
        docs.append(Document(page_content=text, metadata={"title": title, "source": str(path)}, id=title))
        questions.extend(qa["question"] for p in paragraphs for qa in p["qas"])
    return docs, questions


def format_docs(docs: list[Document]) -> str:
    """Passages as prompt context, each tagged with its id (``doc_id:first-last``)."""
    return "\n\n".join(f"[{d.id}] {d.page_content}" for d in docs)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--titles", nargs="+", default=TITLES)
    parser.add_argument("--persist-dir", default=None, help="Chroma directory (default: a temporary one)")
    parser.add_argument("--question", default=None, help="default: the first question of the first article")
    parser.add_argument("-k", type=int, default=3)
    args = parser.parse_args(argv)

    docs, questions = load_documents(args.data, args.titles)
    question = args.question or questions[0]
    persist_dir = args.persist_dir or tempfile.mkdtemp(prefix="landmark-lc-")

    # 1. Context-aware ingestion: one encoder pass per article, vectors written by landmark-rag.
    client = chromadb.PersistentClient(path=persist_dir)
    retriever = LandmarkRetriever(client=client, collection_name=COLLECTION, k=args.k)
    before = retriever.store.documents()
    retriever.add_documents(docs)
    print(
        f"ingested {len(docs)} articles into {persist_dir!r} / {COLLECTION!r}: "
        f"{retriever.store.count_sentences()} sentences ({len(before)} articles were already there)"
    )

    # 2. Exactly k passages, each the exact slice of its article named by its metadata.
    passages = retriever.invoke(question, k=args.k)
    texts = {d.id: d.page_content for d in docs}
    print(f"\nQ: {question}")
    for d in passages:
        md = d.metadata
        exact = texts[md["doc_id"]][md["start"] : md["end"]] == d.page_content
        print(
            f"  [{d.id}] score={md['score']:.3f} chars {md['start']}:{md['end']} exact={exact}\n    {d.page_content[:160]!r}"
        )
        if not exact:
            raise SystemExit(f"passage {d.id} is not the exact slice of its article")
    if len(passages) != args.k:
        raise SystemExit(f"expected {args.k} passages, got {len(passages)}")

    # 3. The retriever in an LCEL chain (swap FakeListChatModel for a real chat model).
    llm = FakeListChatModel(responses=["(a real chat model would answer from the passages here)"])
    chain = {"context": retriever | format_docs, "question": RunnablePassthrough()} | PROMPT | llm | StrOutputParser()
    answer = chain.invoke(question)
    prompt_text = (
        ({"context": retriever | format_docs, "question": RunnablePassthrough()} | PROMPT).invoke(question).to_string()
    )
    print(f"\nchain answer: {answer}\nprompt sent to the model: {len(prompt_text)} characters")

    # 4. The same collection through langchain_chroma: sentence hits (no expansion).
    store = Chroma(client=client, collection_name=COLLECTION, embedding_function=retriever.embeddings)
    hits = store.similarity_search_with_relevance_scores(question, k=3)
    print("\nlangchain_chroma sentence hits:")
    for doc, score in hits:
        print(f"  [{doc.id}] {score:.3f} {doc.page_content[:100]!r}")

    result = {
        "persist_dir": persist_dir,
        "question": question,
        "passages": [{"id": d.id, **d.metadata} for d in passages],
        "chain_answer": answer,
        "prompt_contains_passages": all(d.page_content in prompt_text for d in passages),
        "chroma_hits": [doc.id for doc, _ in hits],
    }
    print("\nRESULT " + json.dumps(result))
    return result


if __name__ == "__main__":
    main()
