"""Framework ingests show progress by default once they run long, and stay quiet when quick.

Real (tiny) encoder and real adapters; the "long" threshold is lowered for the test rather
than making the machine work for seconds.
"""

from __future__ import annotations

import pytest

from landmark_rag import progress

TEXTS = [f"Document {i} talks about topic {i}. It has a second sentence about {i}." for i in range(6)]


@pytest.fixture
def encoder(tiny_encoder):
    return tiny_encoder(max_length=64)


def test_bar_options_map_true_none_false():
    assert progress.bar_options(True) == {"disable": False, "delay": 0.0}
    assert progress.bar_options(None) == {"disable": False, "delay": progress.AUTO_DELAY_S}
    assert progress.bar_options(False)["disable"] is True
    assert progress.AUTO_DELAY_S <= 5  # "longer than a few seconds"


def test_default_is_quiet_for_a_quick_call_and_shows_for_a_long_one(encoder, capsys, monkeypatch):
    encoder.encode_documents(TEXTS, show_progress=None)
    assert "encoding" not in capsys.readouterr().err  # well under the delay: no bar
    monkeypatch.setattr(progress, "AUTO_DELAY_S", 0.0)  # every call now counts as "long"
    encoder.encode_documents(TEXTS, show_progress=None)
    assert "encoding" in capsys.readouterr().err
    encoder.encode_documents(TEXTS, show_progress=False)
    assert "encoding" not in capsys.readouterr().err


def test_langchain_retriever_ingest_shows_progress_by_default(encoder, capsys, monkeypatch):
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document

    from langchain_landmark import LandmarkEmbeddings, LandmarkRetriever

    monkeypatch.setattr(progress, "AUTO_DELAY_S", 0.0)
    retriever = LandmarkRetriever(embeddings=LandmarkEmbeddings.from_encoder(encoder), collection_name="progress")
    assert retriever.show_progress is None and retriever.embeddings.show_progress is None
    retriever.add_documents([Document(page_content=t, id=f"d{i}") for i, t in enumerate(TEXTS)])
    assert "adding" in capsys.readouterr().err  # LandmarkIndex.add_texts' bar


def test_llama_index_embedding_shows_progress_by_default(encoder, capsys, monkeypatch):
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document

    from llama_index.embeddings.landmark import LandmarkEmbedding
    from llama_index.node_parser.landmark import LandmarkNodeParser

    monkeypatch.setattr(progress, "AUTO_DELAY_S", 0.0)
    embed = LandmarkEmbedding(encoder=encoder)
    assert embed.show_progress is None
    nodes = LandmarkNodeParser.for_embedding(embed).get_nodes_from_documents(
        [Document(text=t, id_=f"d{i}") for i, t in enumerate(TEXTS)]
    )
    embed(nodes)
    assert all(n.embedding is not None for n in nodes)
    assert "encoding" in capsys.readouterr().err
