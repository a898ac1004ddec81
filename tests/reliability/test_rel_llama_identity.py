"""LlamaIndex writing through its own ``ChromaVectorStore`` (no ``ReplaceDocuments``): the model
identity still arrives with the first write (``LandmarkEmbedding`` stamps it on every sentence
node it embeds), readers learn it without recording it, and another model is refused by every
landmark writer and reader.
"""

from __future__ import annotations

import chromadb
import pytest

pytest.importorskip("llama_index.core", reason="the llama-index extra")
pytest.importorskip("llama_index.vector_stores.chroma", reason="the llama-index extra")
from reliability.faultkit import paragraphs
from typer.testing import CliRunner

from landmark_rag.cli import _register, app
from landmark_rag.index import LandmarkIndex
from landmark_rag.store import ChromaSentenceStore, StoreMismatchError
from landmark_rag.store.schema import IDENTITY_PREFIX, MODEL

_register()
RUNNER = CliRunner()


def _docs(lo: int, hi: int, prefix: str = "p"):
    from llama_index.core import Document

    return [Document(text=paragraphs()[i], id_=f"{prefix}{i}") for i in range(lo, hi)]


def _vector_store(db, name: str = "plain"):
    from llama_index.vector_stores.chroma import ChromaVectorStore

    return ChromaVectorStore(chroma_collection=chromadb.PersistentClient(path=str(db)).get_or_create_collection(name))


def _collection_identity(vs) -> dict:
    md = vs.client.metadata or {}
    return {k: v for k, v in md.items() if k.startswith(IDENTITY_PREFIX)}


def test_plain_vector_store_writes_carry_the_model_and_other_models_are_refused(tmp_path, tiny_encoder):
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.ingestion import IngestionPipeline

    from landmark_rag.llama_index import LandmarkEmbedding, LandmarkNodeParser, ReplaceDocuments

    db = tmp_path / "db"
    encoder = tiny_encoder(pooling="landmark")
    embed = LandmarkEmbedding(encoder=encoder)
    vs = _vector_store(db)
    # the two plain paths: a pipeline writing to the vector store, and VectorStoreIndex on embedded nodes
    IngestionPipeline(transformations=[LandmarkNodeParser(), embed], vector_store=vs).run(documents=_docs(0, 2))
    nodes = embed(LandmarkNodeParser().get_nodes_from_documents(_docs(2, 3)))
    VectorStoreIndex(nodes, storage_context=StorageContext.from_defaults(vector_store=vs), embed_model=embed)
    stored = vs.client.get(include=["metadatas"])
    assert stored["ids"] and all(MODEL in md for md in stored["metadatas"])
    assert not any(MODEL in n.get_content(metadata_mode="embed") for n in nodes)  # never in a vector or prompt
    assert not any(MODEL in n.get_content(metadata_mode="llm") for n in nodes)

    # readers learn the model from the records and record nothing
    store = ChromaSentenceStore.for_collection(vs.client)
    want = encoder.config.identity()
    assert {k: store.identity()[k] for k in want} == want  # includes the weights fingerprint
    assert LandmarkEmbedding.for_vector_store(vs).encoder.config.identity() == want
    reader = LandmarkIndex.open(db, collection="plain", create=False)
    assert reader.encoder.config.identity() == want
    assert {p.doc_id for p in reader.search(paragraphs()[1][:80], k=20)} == {"p0", "p1", "p2"}
    answered = RUNNER.invoke(app, ["query", "Who?", "--db", str(db), "--collection", "plain", "--json"])
    assert answered.exit_code == 0, answered.output
    assert _collection_identity(vs) == {}

    # another model: every landmark writer and reader refuses it (nothing written)
    mean = LandmarkEmbedding(encoder=tiny_encoder(pooling="mean"))
    before = vs.client.count()
    with pytest.raises(StoreMismatchError, match="pooling"):
        IngestionPipeline(
            transformations=[LandmarkNodeParser(), mean, ReplaceDocuments(vs)], vector_store=vs
        ).run(documents=_docs(3, 4))
    with pytest.raises(StoreMismatchError, match="pooling"):
        LandmarkIndex.open(db, collection="plain", model=encoder.config.model_name, overrides={"pooling": "mean"})
    from landmark_rag.llama_index import LandmarkHybridRetriever

    with pytest.raises(StoreMismatchError, match="pooling"):
        LandmarkHybridRetriever(vs, mean)
    assert vs.client.count() == before and _collection_identity(vs) == {}

    # the same model through a landmark writer: recorded on the collection from then on
    IngestionPipeline(
        transformations=[LandmarkNodeParser(), embed, ReplaceDocuments(vs)], vector_store=vs
    ).run(documents=_docs(3, 4))
    assert _collection_identity(vs)[IDENTITY_PREFIX + "pooling"] == "landmark"


def test_another_model_through_the_plain_vector_store_makes_readers_refuse(tmp_path, tiny_encoder):
    """LlamaIndex's own vector store runs no landmark code, so a second model's write cannot be
    stopped; its stamp makes the next landmark reader (and writer) refuse the collection clearly."""
    from llama_index.core.ingestion import IngestionPipeline

    from landmark_rag.llama_index import LandmarkEmbedding, LandmarkNodeParser

    db = tmp_path / "db"
    vs = _vector_store(db)
    for pooling, docs in (("landmark", _docs(0, 2)), ("mean", _docs(2, 3, prefix="m"))):
        embed = LandmarkEmbedding(encoder=tiny_encoder(pooling=pooling))
        IngestionPipeline(transformations=[LandmarkNodeParser(), embed], vector_store=vs).run(documents=docs)
    with pytest.raises(StoreMismatchError, match="two model set-ups.*pooling"):
        LandmarkIndex.open(db, collection="plain", create=False)
    refused = RUNNER.invoke(app, ["query", "Who?", "--db", str(db), "--collection", "plain"])
    assert refused.exit_code == 3 and "two model set-ups" in refused.output
    assert _collection_identity(vs) == {}
