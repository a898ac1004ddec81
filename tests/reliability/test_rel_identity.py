"""Which model a collection gets: readers never record one, every writer does, and a
collection that records none is refused with a message saying how to name the model.

The unmarked collection is written by the one LlamaIndex path that carries no model (bare
node texts embedded by ``VectorStoreIndex``); the pipeline paths are in test_rel_llama_identity.py.
"""

from __future__ import annotations

import chromadb
import pytest
from reliability.faultkit import paragraphs
from typer.testing import CliRunner

from landmark_rag.cli import _register, app
from landmark_rag.index import LandmarkIndex
from landmark_rag.store import ChromaSentenceStore, ModelNotRecordedError

_register()
RUNNER = CliRunner()


def unmarked_llama_collection(db, encoder) -> None:
    """The one LlamaIndex path that records no model: ``VectorStoreIndex`` embedding bare node
    texts (the nodes never went through ``LandmarkEmbedding`` as a transformation, so nothing
    of landmark-rag sees them; see docs/reliability.md, "LlamaIndex writers")."""
    from llama_index.core import Document, StorageContext, VectorStoreIndex
    from llama_index.vector_stores.chroma import ChromaVectorStore

    from landmark_rag.llama_index import LandmarkEmbedding, LandmarkNodeParser

    vs = ChromaVectorStore(chroma_collection=chromadb.PersistentClient(path=str(db)).get_or_create_collection("llama"))
    docs = [Document(text=p, id_=f"p{i}") for i, p in enumerate(paragraphs()[:3])]
    nodes = LandmarkNodeParser().get_nodes_from_documents(docs)
    VectorStoreIndex(nodes, storage_context=StorageContext.from_defaults(vector_store=vs),
                     embed_model=LandmarkEmbedding(encoder=encoder))


def recorded(db) -> dict:
    from chromadb.api.shared_system_client import SharedSystemClient

    SharedSystemClient.clear_system_cache()
    return ChromaSentenceStore.open(db, "llama", create=False).identity()


def test_readers_never_record_and_unmarked_collections_are_refused(tmp_path, tiny_bert_dir, tiny_encoder):
    from langchain_core.documents import Document as LCDocument

    from landmark_rag.langchain import LandmarkEmbeddings, LandmarkRetriever

    db = tmp_path / "db"
    encoder = tiny_encoder(pooling="landmark")
    unmarked_llama_collection(db, encoder)
    assert recorded(db) == {}

    # CLI: refused without --model (exit 2, one line naming how), answered with it; nothing recorded
    refused = RUNNER.invoke(app, ["query", "Who?", "--db", str(db), "--collection", "llama"])
    assert refused.exit_code == 2 and "records no model" in refused.output and "--model NAME" in refused.output
    named = RUNNER.invoke(
        app, ["query", "Who?", "--db", str(db), "--collection", "llama", "--model", str(tiny_bert_dir), "--json"]
    )
    assert named.exit_code == 0, named.output
    assert recorded(db) == {}

    # core and LangChain: the same rule
    with pytest.raises(ModelNotRecordedError):
        LandmarkIndex.open(db, collection="llama")
    reader = LandmarkIndex.open(db, collection="llama", model=str(tiny_bert_dir), overrides={"pooling": "landmark"})
    assert reader.search("Who?", k=2)
    with pytest.raises(ModelNotRecordedError):
        LandmarkRetriever(persist_directory=str(db), collection_name="llama").invoke("Who?")
    emb = LandmarkEmbeddings.from_encoder(encoder)
    assert LandmarkRetriever(persist_directory=str(db), collection_name="llama", embeddings=emb, k=2).invoke("Who?")
    assert recorded(db) == {}

    # the first write records the model; another model is refused from then on
    writer = LandmarkRetriever(persist_directory=str(db), collection_name="llama", embeddings=emb)
    writer.add_documents([LCDocument(page_content=paragraphs()[4], id="lc")])
    identity = recorded(db)
    assert identity["model_name"] == encoder.config.model_name and identity["pooling"] == "landmark"
    assert identity["weights_fingerprint"] == encoder.config.weights_fingerprint
    other = RUNNER.invoke(
        app, ["query", "Who?", "--db", str(db), "--collection", "llama", "--model", str(tiny_bert_dir), "--json"]
    )
    assert other.exit_code == 3 and "pooling" in other.output  # the CLI's tiny model pools per sentence


def test_isolated_landmarks_are_another_set_up_in_both_directions(tmp_path):
    """``landmark_attention`` is in the identity only when not ``full`` (configs saved before it
    existed stay byte-identical); a store recorded with ``isolated`` must still refuse a ``full``
    model, whose identity simply lacks the field."""
    from landmark_rag.encode.config import LandmarkConfig
    from landmark_rag.store import StoreMismatchError

    full = LandmarkConfig(model_name="bert-tiny").identity()
    isolated = LandmarkConfig(model_name="bert-tiny", landmark_attention="isolated").identity()
    assert "landmark_attention" not in full
    for i, (recorded, other) in enumerate(((isolated, full), (full, isolated))):
        store = ChromaSentenceStore.open(tmp_path / f"db{i}", "iso", identity=recorded)
        with pytest.raises(StoreMismatchError, match="landmark_attention"):
            store.check_identity(other)
        store.check_identity(dict(recorded))  # the same set-up opens
    ChromaSentenceStore.open(tmp_path / "db1", "iso").check_identity({**full, "landmark_attention": "full"})
