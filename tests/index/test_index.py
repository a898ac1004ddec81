"""``LandmarkIndex``: the core object every adapter searches through (real model, real Chroma).

Also checks the "one place" rules of the architecture by reading the source: each of
Chroma client creation, strategy choice, cosine re-scoring and the passage id lives in
exactly one module, and no adapter assembles an encoder, a store and a strategy itself.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pytest

from landmark_rag import LandmarkIndex
from landmark_rag.expand import Evidence, Surround
from landmark_rag.store import StoreMismatchError

SRC = Path(__file__).resolve().parents[2] / "src" / "landmark_rag"


@pytest.fixture(scope="module")
def article(squad_articles):
    """A whole SQuAD Wikipedia article (a validation one: nothing is tuned on it here)."""
    return squad_articles[13]


@pytest.fixture(scope="module")
def built(tmp_path_factory, article):
    """An index in a fresh folder with one real article added through ``add_texts``."""
    db = tmp_path_factory.mktemp("index") / "db"
    index = LandmarkIndex.open(db, collection="articles")
    ids = index.add_texts([article.text], ids=["art"], metadatas=[{"title": article.title}])
    return db, index, ids


def test_round_trip_add_search_exact_slices(built, article):
    _db, index, ids = built
    assert ids == ["art"]
    assert index.encoder.model_name == "landmark-minilm"  # the package default for a new store
    found = 0
    questions = article.questions[:12]
    for q in questions:
        passages = index.search(q.text, k=3)
        assert len(passages) == 3  # exactly k: the store has far more sentences
        spans = sorted((p.start, p.end) for p in passages)
        assert all(a[1] < b[0] for a, b in itertools.pairwise(spans))  # non-overlapping
        for p in passages:
            assert p.doc_id == "art" and p.text == article.text[p.start : p.end]
            assert p.metadata == {"title": article.title}
            assert p.id == f"art:{p.first_index}-{p.last_index}"
        found += any(p.start <= q.answer_start < p.end for p in passages)
    # a real trained model on a real article: the answer is in the top 3 for most questions
    assert found >= len(questions) // 2, f"answer found for only {found} of {len(questions)} questions"


def test_reopen_uses_the_recorded_model_and_refuses_another(built, article):
    db, index, _ = built
    again = LandmarkIndex.open(db, collection="articles", create=False)
    assert again.encoder is index.encoder  # one shared encoder for one store
    q = article.questions[0].text
    assert [p.id for p in again.search(q, k=2)] == [p.id for p in index.search(q, k=2)]
    with pytest.raises(StoreMismatchError, match="built with 'landmark-minilm'.*leave the model out"):
        LandmarkIndex.open(db, collection="articles", model="all-MiniLM-L6-v2")
    with pytest.raises(LookupError):
        LandmarkIndex.open(db, collection="nothing-here", create=False)
    missing = db.parent / "never-made"
    with pytest.raises(LookupError):
        LandmarkIndex.open(missing, create=False)
    assert not missing.exists()  # opening to read never creates a store


def test_bad_arguments_are_refused_before_anything_is_read_or_written(tmp_path, article):
    index = LandmarkIndex.open(tmp_path / "db")
    index.add_texts(["Ab is a river. It floods.", "A is a town. It is old.", "B is a hill."], ids=["ab", "a", "b"])
    with pytest.raises(TypeError, match="not one string"):
        index.delete("ab")  # iterated, it would delete "a" and "b"
    with pytest.raises(TypeError, match="not one string"):
        index.add_texts("hello")  # iterated, one document per character
    assert sorted(index.sentence_store.documents()) == ["a", "ab", "b"]
    assert index.delete(["ab", "ab"]) == 2 and sorted(index.sentence_store.documents()) == ["a", "b"]
    for query in ("", "   \n"):
        with pytest.raises(ValueError, match="blank"):
            index.search(query)
        with pytest.raises(ValueError, match="blank"):
            index.hits(query, 3)
    with pytest.raises(ValueError, match="query 1"):
        index.search_many(["Where is the town?", " "])
    with pytest.raises(ValueError, match="at least 1"):
        index.search("Which town is old?", k=0)
    with pytest.raises(ValueError, match="order"):
        index.search("Which town is old?", order="documents")  # type: ignore[arg-type]
    assert index.add_texts(["Zero is a number."], ids=[0]) == ["0"]  # type: ignore[list-item]
    with pytest.warns(UserWarning, match=r"\['_note', 'end', 'start'\]"):
        index.add_texts(["The fair ran for a week."], ids=["fair"],
                        metadatas=[{"start": "2020-01-01", "end": "2020-01-08", "_note": "x", "city": "Oslo",
                                    "country": "Norway"}])
    # two plain keys mean both (Chroma itself takes one operator per filter)
    (passage,) = index.search("How long did the fair run?", k=1, where={"city": "Oslo", "country": "Norway"})
    assert index.search("How long did the fair run?", k=1, where={"city": "Oslo", "country": "Sweden"}) == []
    assert passage.metadata["city"] == "Oslo" and "start" not in passage.metadata and passage.start == 0


def test_unchanged_texts_are_skipped_and_changed_ones_replaced(built, article):
    _, index, _ = built
    calls: list[list[str]] = []

    def encode(texts, doc_ids):
        calls.append(list(doc_ids))
        return index.encoder.encode_documents(texts, doc_ids)

    index.add_texts([article.text], ids=["art"], metadatas=[{"title": article.title}], encode=encode)
    assert calls == []  # same hash, same metadata: not encoded again
    short = article.text[:400]
    assert index.add_texts([short, short], encode=encode) == [index.add_texts([short], encode=encode)[0]] * 2
    assert len(calls) == 1  # a text without id gets its content hash; adding it again is a no-op
    with pytest.raises(ValueError, match="two different texts"):
        index.add_texts(["one text", "another"], ids=["x", "x"])
    doc_id = calls[0][0]
    assert index.delete([doc_id]) > 0
    assert doc_id not in index.store.documents()


def test_per_call_strategy_honours_strategy_params(built, article):
    db, _, _ = built
    params = {"before": 0, "after": 0}
    index = LandmarkIndex.open(db, collection="articles", create=False, strategy_params=params)
    assert index.strategy == Evidence(0, 0)  # the model's own expansion, with these parameters
    q = article.questions[1].text
    assert index.resolve_strategy("surround") == Surround(0, 0)
    passages = index.search(q, k=3, strategy="surround")
    assert len(passages) == 3 and all(p.first_index == p.last_index for p in passages)
    with pytest.raises(ValueError, match="front strategy takes"):
        index.search(q, k=3, strategy="front")  # parameters of another strategy: refused, not dropped


def test_langchain_retriever_per_call_strategy_uses_strategy_params(built, article):
    from landmark_rag.langchain import LandmarkRetriever

    db, index, _ = built
    retriever = LandmarkRetriever(
        persist_directory=str(db), collection_name="articles", k=3, strategy_params={"before": 0, "after": 0}
    )
    assert retriever.index.encoder is index.encoder  # the store's model, the same cached encoder
    docs = retriever.invoke(article.questions[1].text, strategy="surround")
    assert len(docs) == 3
    assert all(d.metadata["first_sentence"] == d.metadata["last_sentence"] for d in docs)


def test_rescore_gives_the_cosines_the_search_ranked_by(built, article):
    _, index, _ = built
    q = article.questions[2].text
    passages = index.search(q, k=4)
    shuffled = [*passages[::-1]]
    for p in shuffled:
        p.score = -1.0
    rescored = index.rescore(q, shuffled)
    assert [p.id for p in rescored] == [p.id for p in passages[::-1]]  # same order, copies
    assert all(p.score == -1.0 for p in shuffled)
    vec = index.encode_query(q)
    for p in rescored:
        stored = index.store.read_document(p.doc_id, p.hit_indices, embeddings=True).embeddings
        assert p.score == pytest.approx(max(float(v @ vec) for v in stored), abs=1e-5)
    assert index.encode_query(vec * 3.0) == pytest.approx(vec, abs=1e-6)
    assert np.isclose(np.linalg.norm(index.encode_query(vec * 3.0)), 1.0)


# ---------------------------------------------------------------------------- one place each
def _calls(pattern: str) -> set[str]:
    """Source files (relative to the package) where ``pattern`` occurs in code."""
    out = set()
    for path in SRC.rglob("*.py"):
        if re.search(pattern, path.read_text(encoding="utf-8")):
            out.add(str(path.relative_to(SRC)))
    return out


def test_each_rule_lives_in_one_place():
    assert _calls(r"chromadb\.(PersistentClient|HttpClient|EphemeralClient)\(") == {"store/client.py"}
    assert _calls(r"\}:\{[\w.]*first_index\}-\{") == {"types.py"}  # the passage id
    assert _calls(r"def choose_strategy\(") == {"expand/strategies.py"}  # the strategy rule's one name
    assert _calls(r"\b(make|model)_strategy\b") <= {"expand/__init__.py"}  # its deprecated aliases
    assert _calls(r"\.(nearest|nearest_ids)\(") == {"retrieve/ranking.py"}  # the dense half: one reader
    assert _calls(r"collection\.query\(") == {"store/reads.py"}  # and one place that searches Chroma
    grows = {p for p in _calls(r"\*= 2\b") if p.startswith(("retrieve/", "index/", "store/"))}
    assert grows == {"retrieve/search.py"}  # a search's one "ask for more" loop
    assert _calls(r"\bcosine_rescore\(") == {"retrieve/rescore.py", "index/landmark_index.py"}
    assert _calls(r"def store_model\(") == {"store/identity.py"}


def test_no_adapter_assembles_encoder_store_and_strategy():
    adapters = ["cli/query.py", "cli/demo.py", "cli/index.py", "langchain/retriever.py", "langchain/compressor.py",
                "llama_index/postprocessor.py", "evaluation/systems/landmark.py"]
    for rel in adapters:
        text = (SRC / rel).read_text(encoding="utf-8")
        assert "LandmarkIndex" in text or "open_index" in text or "open_query_index" in text, rel
        for forbidden in ("find_passages(", "expand_hits(", "make_strategy(", "model_strategy(",
                          "from_pretrained(", "check_identity("):
            assert forbidden not in text, f"{rel} calls {forbidden}"
