"""A LlamaIndex ``IngestionPipeline`` re-ingest as its own process (killable like kill_launcher).

Usage: llama_pipeline_run.py DB DOCS_JSON MODEL_DIR [POOLING]
Writes every document of DOCS_JSON ({id: text}) into collection ``landmark`` of the
PersistentClient at DB through ``[LandmarkNodeParser(), embed, ReplaceDocuments(...)]``.
``LANDMARK_RAG_TEST_KILL_AT`` works as in kill_launcher.py. Exit 2 with the message on a
``ValueError``/``StoreMismatchError`` (what the test checks for refused runs).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def ingest(db: str, items: list[tuple[str, str]], model: str, pooling: str | None = None) -> int:
    """Run the pipeline over ``items`` ((id, text) pairs); returns the number of nodes.

    Also called in the test process for the runs that are not killed (no process start)."""
    import chromadb
    from chromadb.api.shared_system_client import SharedSystemClient
    from llama_index.core import Document
    from llama_index.core.ingestion import IngestionPipeline
    from llama_index.vector_stores.chroma import ChromaVectorStore

    from landmark_rag.encode import LandmarkEncoder
    from landmark_rag.llama_index import LandmarkEmbedding, LandmarkNodeParser, ReplaceDocuments

    SharedSystemClient.clear_system_cache()  # open the store as it is now (another process may have written)
    docs = [Document(text=text, id_=doc_id) for doc_id, text in items]
    overrides = {"pooling": pooling} if pooling else {}
    embed = LandmarkEmbedding(encoder=LandmarkEncoder.from_pretrained(model, device="cpu", **overrides))
    vs = ChromaVectorStore(chroma_collection=chromadb.PersistentClient(path=db).get_or_create_collection("landmark"))
    pipeline = IngestionPipeline(
        transformations=[LandmarkNodeParser(), embed, ReplaceDocuments(vs, embed_model=embed)], vector_store=vs
    )
    return len(pipeline.run(documents=docs))


def main() -> None:
    db, docs_json, model = sys.argv[1:4]
    pooling = sys.argv[4] if len(sys.argv) > 4 else None
    if os.environ.get("LANDMARK_RAG_TEST_KILL_AT"):
        import kill_launcher  # beside this script

        kill_launcher._install(os.environ["LANDMARK_RAG_TEST_KILL_AT"])
    items = json.loads(Path(docs_json).read_text(encoding="utf-8"))
    try:
        n = ingest(db, items, model, pooling)
    except ValueError as exc:  # StoreMismatchError is a ValueError
        print(f"refused: {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(2)
    print(n)


if __name__ == "__main__":
    main()
