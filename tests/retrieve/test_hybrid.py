"""Hybrid retrieval: analyzer, fusion, the store-keyed lexical index, fused search.

Real Chroma PersistentClient stores; vectors are random unit vectors where only the lexical
half or the plumbing is under test (the real model: tests/index/test_hybrid_index.py).
"""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pytest

from landmark_rag.expand import Surround
from landmark_rag.retrieve import FusionConfig, Request, Sources, find_hits, find_passages, fuse, model_fusion
from landmark_rag.retrieve.fusion import fuse_arrays
from landmark_rag.segment import segment_sentences
from landmark_rag.store import ChromaSentenceStore, sentence_id
from landmark_rag.store.analyzer import language_name, make_analyzer
from landmark_rag.store.lexical import LEXICAL_DIR, StoreLexicalIndex
from tests.random_vectors import encode

DOC_A = "Cats purr when content. They sleep a lot. Kittens play with yarn. Old cats nap in the sun."
DOC_B = "Rockets need fuel. Orbits are curved paths. Satellites circle the Earth. Launches are loud."
DOC_C = "Bread needs flour. Ovens bake loaves. Yeast makes dough rise. Crusts turn brown."
DOC_DE = "Die Häuser der Stadt wurden im Mittelalter gebaut. Der Fluss fließt durch das Tal. Brücken verbinden die Ufer."
DOC_ZH = "东京是日本的首都。长城位于中国北方。熊猫喜欢吃竹子。"
DOC_JA = "富士山は日本で一番高い山です。京都には多くの寺があります。"




@pytest.fixture()
def store(tmp_path) -> ChromaSentenceStore:
    return ChromaSentenceStore.open(tmp_path / "db", "unit", identity={"model_name": "m", "pooling": "landmark"})


def texts(hits) -> list[str]:
    return [h.sentence.text for h in hits]


# ---------------------------------------------------------------------------- analyzer
def test_english_analyzer_stems_and_drops_stop_words():
    a = make_analyzer("en")
    assert a("The Reactions of the kittens") == ["reaction", "kitten"]
    assert a("ＡＢＣ１２") == ["abc12"]  # NFKC: full-width letters match ASCII
    assert a("a I") == []  # one-letter words and stop words are not terms


def test_other_languages_stem_with_their_own_rules():
    assert make_analyzer("de")("Häuser") == make_analyzer("german")("Häusern")
    assert make_analyzer("none")("The Reactions") == ["the", "reactions"]
    with pytest.raises(ValueError, match="unknown language 'klingon'"):
        make_analyzer("klingon")
    assert language_name(None) == "english" and language_name("FR") == "french"


def test_scripts_without_spaces_become_character_unigrams_and_bigrams():
    terms = make_analyzer("zh")("东京大学 Tokyo")
    assert {"东", "京", "东京", "京大", "大学", "tokyo"} <= set(terms)
    assert "东京大学" not in terms
    # the English analyzer handles CJK runs the same way (mixed-language corpora)
    assert "大学" in make_analyzer("en")("东京大学")
    assert {"富士", "士山"} <= set(make_analyzer("ja")("富士山"))


# ---------------------------------------------------------------------------- fusion
def test_rrf_and_linear_fusion_order():
    dense = [("a", 0.9), ("b", 0.8), ("c", 0.1)]
    lexical = [("b", 12.0), ("c", 3.0)]
    rrf = fuse(dense, lexical, "rrf", 0.5, rrf_k=60)
    assert [u for u, _ in rrf] == ["b", "c", "a"]  # ranked by both halves beats first in one
    assert rrf[0][1] == pytest.approx(0.5 / 62 + 0.5 / 61)
    # linear keeps score gaps: min-max over each list, 0 where a list lacks the unit
    lin = dict(fuse(dense, [("c", 12.0), ("b", 3.0)], "linear", 0.5))
    assert lin["a"] == pytest.approx(0.5) and lin["c"] == pytest.approx(0.5)
    assert lin["b"] == pytest.approx(0.5 * 0.875)
    assert [u for u, _ in fuse(dense, [("c", 12.0), ("b", 3.0)], "linear", 0.5)] == ["a", "c", "b"]  # tie: dense rank
    # weight 1 is the dense ranking, weight 0 the lexical one (then dense-only units)
    assert [u for u, _ in fuse(dense, lexical, "rrf", 1.0)] == ["a", "b", "c"]
    assert next(u for u, _ in fuse(dense, lexical, "linear", 0.0)) == "b"


def test_fusion_settings_are_validated():
    with pytest.raises(ValueError, match="fusion method"):
        fuse([], [], "max")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="weight"):
        FusionConfig(weight=1.5)
    with pytest.raises(ValueError, match="unknown fusion setting"):
        FusionConfig.from_dict({"mode": "hybrid", "wieght": 0.3})
    with pytest.raises(ValueError, match="search mode"):
        Request("sparse", "text")  # type: ignore[arg-type]


def test_model_fusion_defaults_to_dense_and_reads_the_config():
    from landmark_rag.encode import LandmarkConfig

    assert model_fusion(None).mode == "dense"
    cfg = LandmarkConfig(fusion={"mode": "hybrid", "method": "linear", "weight": 0.3})
    got = model_fusion(cfg, language="de")
    assert (got.mode, got.method, got.weight, got.language) == ("hybrid", "linear", 0.3, "de")
    assert LandmarkConfig.from_dict(cfg.to_dict()).fusion == cfg.fusion  # round-trips through JSON


def test_shipped_model_defaults_to_its_validated_hybrid_fusion():
    from landmark_rag.encode import LandmarkConfig
    from landmark_rag.encode.models.registry import DEFAULT_MODEL, packaged_model

    fusion = model_fusion(LandmarkConfig.load(packaged_model(DEFAULT_MODEL)))
    assert fusion.mode == "hybrid" and fusion.language == "english"  # chosen in benchmarks/hybrid_sweep.py


def test_fuse_arrays_ranks_only_candidates():
    dense = np.asarray([0.9, 0.1, 0.5, 0.2], dtype=np.float32)
    lexical = np.asarray([0.0, 7.0, 0.0, 0.0], dtype=np.float32)
    out = fuse_arrays(dense, lexical, FusionConfig(mode="hybrid", depth=2))
    assert out[3] == -1.0  # in neither top-2
    assert out[1] > -1.0 and out[0] > out[2]
    assert np.argmax(out) in (0, 1)


@pytest.mark.parametrize(("k1", "b"), [(1.5, 0.75), (1.2, 0.25), (0.9, 0.0), (2.0, 1.0)])
def test_bm25_scores_equal_bm25s(k1: float, b: float):
    """The vectorised matrix scores exactly as bm25s's Lucene BM25 (the eval's baseline), with
    its default parameters and with others a model's fusion may choose."""
    import bm25s

    from landmark_rag.store.lexical import BM25Index

    analyze = make_analyzer("en")
    corpus = [s.text for s in segment_sentences(DOC_A + " " + DOC_B + " " + DOC_C)] + ["", "cats cats cats purr"]
    vocab: dict[str, int] = {"unused": 0}  # a vocabulary may hold terms no sentence has any more
    rows = [[vocab.setdefault(t, len(vocab)) for t in analyze(text)] for text in corpus]
    ours = BM25Index.from_terms([str(i) for i in range(len(corpus))], rows, vocab, k1=k1, b=b)
    ref = bm25s.BM25(k1=k1, b=b)
    ref.index([analyze(t) for t in corpus], show_progress=False)
    for query in ("cats purr", "old cats cats", "rockets satellites earth", "zebra", "bread"):
        terms = analyze(query)
        expected = ref.get_scores(terms) if any(t in ref.vocab_dict for t in terms) else np.zeros(len(corpus))
        np.testing.assert_allclose(ours.scores(terms), expected, rtol=1e-5, atol=1e-6)


def test_bm25_parameters_are_validated_and_reach_the_store_index(tmp_path, store):
    from landmark_rag.encode import LandmarkConfig
    from landmark_rag.store.lexical import BM25Index

    for bad in ({"bm25_b": 1.5}, {"bm25_b": -0.1}, {"bm25_k1": -1.0}, {"bm25_k1": float("nan")}, {"bm25_k1": float("inf")}):
        with pytest.raises(ValueError, match="BM25"):
            FusionConfig(**bad)
    with pytest.raises(ValueError, match="BM25 b"):
        StoreLexicalIndex(store, b=2.0)
    from landmark_rag.evaluation.systems.bm25 import BM25System

    with pytest.raises(ValueError, match="BM25 k1"):
        BM25System(k1=-1.0)
    assert (BM25System().k1, BM25System().b) == (1.5, 0.75)  # the baseline keeps bm25s's parameters
    cfg = LandmarkConfig(fusion={"mode": "hybrid", "bm25_k1": 1.2, "bm25_b": 0.25})
    assert (model_fusion(cfg).bm25_k1, model_fusion(cfg).bm25_b) == (1.2, 0.25)
    assert LandmarkConfig.from_dict(cfg.to_dict()).fusion == cfg.fusion
    older = model_fusion(LandmarkConfig(fusion={"mode": "hybrid"}))  # configs that do not name them
    assert (older.bm25_k1, older.bm25_b) == (1.5, 0.75)

    # a short sentence and a long one with the query's term once each: without length
    # normalisation (b 0) they score the same, with it the short one wins
    store.add_document(encode("Cats purr. " + "Old cats nap in the warm afternoon sun by the open kitchen window.", "a"))
    flat = dict(zip(*StoreLexicalIndex(store, b=0.0).scores("cats"), strict=True))
    assert flat["a:0"] == pytest.approx(flat["a:1"]) and flat["a:1"] > 0
    normed = StoreLexicalIndex(store, b=0.75)  # the same cache, another matrix
    got = dict(zip(*normed.scores("cats"), strict=True))
    assert got["a:0"] > got["a:1"] > 0
    index = BM25Index.from_texts(["0", "1"], ["Cats purr.", "Old cats nap in the warm afternoon sun by the open kitchen window."],
                                 make_analyzer("en"), k1=1.5, b=0.75)
    np.testing.assert_allclose([got["a:0"], got["a:1"]], index.scores(["cat"]), rtol=1e-6)


# ---------------------------------------------------------------------------- lexical index
def test_lexical_index_uses_the_stored_ids_and_follows_the_store(store):
    a, b = encode(DOC_A, "a"), encode(DOC_B, "b")
    store.add_document(a)
    store.add_document(b)
    lex = StoreLexicalIndex(store)
    hits = lex.query("kitten with yarn", 3)
    assert texts(hits)[0] == "Kittens play with yarn."
    assert sentence_id(hits[0].sentence.doc_id, hits[0].sentence.index) == "a:2"
    assert hits[0].sentence == a.sentences[2] and hits[0].score > 0
    assert lex.query("zebra", 3) == []  # no shared term: no hit, not a random one
    # re-ingest replaces in both halves; the index follows without being told
    store.add_document(encode(DOC_A.replace("yarn", "string"), "a", 3))
    assert lex.query("yarn", 3) == []
    assert texts(lex.query("string", 3)) == ["Kittens play with string."]
    store.delete_document("b")
    assert lex.query("rockets fuel", 3) == []
    assert len(lex) == 4


def test_document_being_rewritten_keeps_its_previous_version(store):
    store.add_document(encode(DOC_A, "a"))
    lex = StoreLexicalIndex(store)
    assert lex.query("yarn", 2)

    # a crash in the middle of a rewrite: one sentence of the new version written, no commit
    def crash(version: str) -> None:
        store.collection.upsert(
            ids=[sentence_id("a", 0, version)], embeddings=[[1.0] + [0.0] * 7],
            metadatas=[{"doc_id": "a", "sentence_index": 0, "start": 0, "end": 9, "space_before": "",
                        "doc_hash": "newhash", "doc_version": version}], documents=["Dogs bark"],
        )
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        store.write_document("a", crash, n_sentences=4, doc_hash="newhash")
    assert lex.refresh() is not None
    assert texts(lex.query("yarn", 2)) == ["Kittens play with yarn."]  # previous version still visible
    assert lex.query("dogs bark", 2) == []  # the uncommitted sentence is not indexed
    assert len(lex) == len(encode(DOC_A, "a").sentences)
    store.add_document(encode(DOC_A.replace("yarn", "string"), "a"))  # the next run redoes it
    assert lex.query("yarn", 2) == []
    assert texts(lex.query("string", 2)) == ["Kittens play with string."]
    assert store.count_sentences() == len(lex)  # the interrupted write was cleaned up


def test_replacement_behind_the_protocol_is_caught_at_query_time(store):
    """A writer that changes a document without bumping the manifest generation: the hit's
    stored version differs from the indexed one, so the index re-reads before answering."""
    store.add_document(encode(DOC_A, "a"))
    lex = StoreLexicalIndex(store)
    assert texts(lex.query("yarn", 1)) == ["Kittens play with yarn."]
    got = store.collection.get(where={"doc_id": "a"}, include=["metadatas"])
    by_index = {md["sentence_index"]: (rid, md) for rid, md in zip(got["ids"], got["metadatas"], strict=True)}
    rid, md = by_index[2]
    store.collection.upsert(ids=[rid], embeddings=[[0.0] * 7 + [1.0]],
                            metadatas=[{**md, "doc_hash": "h2", "doc_version": "v2"}],
                            documents=["Kittens play with strings."])
    for i in (0, 1, 3):
        store.collection.update(ids=[by_index[i][0]], metadatas=[{"doc_hash": "h2", "doc_version": "v2"}])
    rec = store.manifest.get(ids=["a"], include=["metadatas"])["metadatas"][0]
    store.manifest.update(ids=["a"], metadatas=[{**rec, "doc_hash": "h2", "doc_version": "v2"}])
    assert lex.query("yarn", 1) == []
    assert texts(lex.query("string", 1)) == ["Kittens play with strings."]


def test_cache_persists_beside_the_store_and_rebuilds_when_broken(tmp_path, store):
    store.add_document(encode(DOC_A, "a"))
    old = os.umask(0o022)
    try:
        StoreLexicalIndex(store).query("cats", 1)
    finally:
        os.umask(old)
    cache = tmp_path / "db" / LEXICAL_DIR / "unit"
    # readable by the store's other users, like the Chroma files beside it (not mkdtemp's 0700)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o755
    state = json.loads((cache / "state.json").read_text())
    assert [d[0] for d in state["docs"]] == ["a"]
    # another process writes through the store protocol; a fresh reader sees it
    other = ChromaSentenceStore.open(tmp_path / "db", "unit")
    other.add_document(encode(DOC_B, "b"))
    assert texts(StoreLexicalIndex(store).query("satellites", 1)) == ["Satellites circle the Earth."]
    (cache / "terms.npz").write_bytes(b"garbage")
    assert texts(StoreLexicalIndex(store).query("kittens", 1)) == ["Kittens play with yarn."]
    in_memory = StoreLexicalIndex(store, cache_dir=False)
    assert in_memory.cache_dir is None and in_memory.query("orbits", 1)


def test_language_setting_and_scripts_without_spaces(tmp_path):
    store = ChromaSentenceStore.open(tmp_path / "db", "multi")
    store.add_document(encode(DOC_DE, "de"))
    store.add_document(encode(DOC_ZH, "zh", 1))
    store.add_document(encode(DOC_JA, "ja", 2))
    german = StoreLexicalIndex(store, language="de", cache_dir=False)
    # "Haus" only matches "Häuser" through German stemming
    assert texts(german.query("Haus", 1)) == ["Die Häuser der Stadt wurden im Mittelalter gebaut."]
    assert texts(StoreLexicalIndex(store, language="en", cache_dir=False).query("Haus", 1)) == []
    assert texts(german.query("熊猫吃什么", 1)) == ["熊猫喜欢吃竹子。"]
    assert texts(german.query("长城在哪里", 1)) == ["长城位于中国北方。"]
    assert texts(german.query("富士山の高さ", 1)) == ["富士山は日本で一番高い山です。"]


def test_collection_without_manifest_is_indexed(tmp_path):
    """Sentences written by LlamaIndex's ChromaVectorStore carry the schema but no manifest."""
    import chromadb

    client = chromadb.PersistentClient(path=str(tmp_path / "db"))
    col = client.get_or_create_collection("plain", embedding_function=None)
    doc = encode(DOC_B, "b")
    from landmark_rag.store import sentence_metadata

    col.add(
        ids=[sentence_id("b", s.index) for s in doc.sentences], embeddings=doc.embeddings,
        metadatas=[sentence_metadata(s) for s in doc.sentences], documents=[s.text for s in doc.sentences],
    )
    lex = StoreLexicalIndex(ChromaSentenceStore(col), cache_dir=False)
    assert texts(lex.query("orbit", 1)) == ["Orbits are curved paths."]


# ---------------------------------------------------------------------------- fused search
def test_modes_through_the_same_expansion(store):
    a, b = encode(DOC_A, "a", 1), encode(DOC_B, "b", 2)
    store.add_document(a, metadata={"topic": "pets"})
    store.add_document(b, metadata={"topic": "space"})
    store.add_document(encode(DOC_C, "c", 3), metadata={"topic": "food"})
    lex = StoreLexicalIndex(store)
    fusion = FusionConfig(mode="hybrid", depth=4)
    vec = b.embeddings[3]  # dense points at "Launches are loud."

    def run(mode, k, where=None):
        request = Request(mode, "kittens yarn", vec, where)
        return find_passages(request, k, Sources(store, lex, fusion), Surround())

    dense, lexical, hybrid = run("dense", 1), run("lexical", 1), run("hybrid", 2)
    assert dense[0].text == "Satellites circle the Earth. Launches are loud."
    assert lexical[0].text == "They sleep a lot. Kittens play with yarn. Old cats nap in the sun."
    assert {p.text for p in hybrid} == {dense[0].text, lexical[0].text}  # both halves' best
    assert all(p.text == (DOC_A if p.doc_id == "a" else DOC_B)[p.start : p.end] for p in hybrid)
    # exactly k: hybrid hits that merge (surround +/- 1 on 4-sentence documents leaves one
    # passage per document) are topped up from lower hits, as for dense hits
    assert len(run("hybrid", 3)) == 3 == len(run("dense", 3))
    # the metadata filter applies to the lexical half too
    assert {p.doc_id for p in run("hybrid", 3, where={"topic": "space"})} == {"b"}
    assert run("lexical", 2, where={"topic": "space"}) == []
    hits = find_hits(Request("hybrid", "kittens yarn", vec), 8, Sources(store, lex, fusion))
    assert "_lexical_score" in hits[0].metadata or "_dense_score" in hits[0].metadata
    with pytest.raises(ValueError, match="lexical index"):
        find_hits(Request("hybrid", "kittens yarn", vec), 2, Sources(store))
    with pytest.raises(ValueError, match="lexical index"):
        Request("hybrid", None, vec)
    with pytest.raises(ValueError, match="query vector"):
        Request("dense", "kittens yarn")


# ---------------------------------------------------------------------------- lexical context
DOC_CTX = "The Thames Barrier spans the river at Woolwich. It was completed in 1982. Boats pass through its gates."


def test_bm25_context_adds_the_preceding_sentence_of_the_same_document_only():
    from landmark_rag.store.bm25 import BM25Index

    analyze = make_analyzer("en")
    corpus = ["thames barrier woolwich", "completed in 1982", "boats gates", "thames tunnel", "rowing clubs"]
    documents = np.array([0, 0, 0, 1, 1])
    index = BM25Index.from_texts([str(i) for i in range(5)], corpus, analyze, documents=documents)
    terms = analyze("thames")
    own = index.scores(terms)
    got = index.scores(terms, context=0.5)
    assert own[1] == 0 and own[2] == 0  # neither names the river
    np.testing.assert_allclose(got, own + 0.5 * np.array([0, own[0], own[1], 0, own[3]]), rtol=1e-6)
    assert got[3] == own[3]  # the first sentence of document 1 takes nothing from document 0
    assert {r for r, _ in index.top(terms, 5, context=0.5)} == {0, 1, 3, 4}  # each match's successor matches too
    assert {r for r, _ in index.top(terms, 5)} == {0, 3}
    alone = BM25Index.from_texts([str(i) for i in range(5)], corpus, analyze)  # no documents: no predecessor
    np.testing.assert_array_equal(alone.scores(terms, context=0.5), own)
    with pytest.raises(ValueError, match="context"):
        index.scores(terms, context=-0.1)
    with pytest.raises(ValueError, match="one label per row"):
        BM25Index.from_texts(["0", "1"], corpus[:2], analyze, documents=np.array([0]))


def test_store_lexical_context_follows_each_document_and_survives_the_cache(tmp_path, store):
    store.add_document(encode(DOC_CTX, "ctx"))
    store.add_document(encode("The Woolwich ferry is free.", "ferry"))  # its only sentence ranks on its own
    plain = StoreLexicalIndex(store)
    assert texts(plain.query("when was the Thames Barrier completed", 3))[0] == (
        "The Thames Barrier spans the river at Woolwich."
    )
    assert "It was completed in 1982." in texts(plain.query("when was the Thames Barrier completed", 3))
    ctx = StoreLexicalIndex(store, context=0.5)
    ranked = ctx.candidates("Thames Barrier", 5)
    assert [u for u, _ in ranked][:2] == ["ctx:0", "ctx:1"]  # "It was completed" inherits half the name's score
    assert dict(ranked)["ctx:1"] == pytest.approx(0.5 * dict(ranked)["ctx:0"])
    ids, scores = StoreLexicalIndex(store, context=0.5).scores("Thames Barrier")  # a new reader, from the cache
    got = dict(zip(ids, scores.tolist(), strict=True))
    assert got == pytest.approx({**dict(ranked), "ctx:2": 0.0, "ferry:0": 0.0})  # one sentence back, not two
    with pytest.raises(ValueError, match="lexical context"):
        StoreLexicalIndex(store, context=1.5)


def test_fusion_lexical_context_reaches_the_index_and_is_validated(tmp_path):
    from landmark_rag.encode import LandmarkConfig

    with pytest.raises(ValueError, match="lexical_context"):
        FusionConfig(lexical_context=-0.5)
    cfg = LandmarkConfig(fusion={"mode": "hybrid", "method": "linear", "weight": 0.6, "lexical_context": 0.5})
    assert model_fusion(cfg).lexical_context == 0.5
    assert model_fusion(cfg, lexical_context=0.0).lexical_context == 0.0
    assert model_fusion(LandmarkConfig(fusion={"mode": "hybrid"})).lexical_context == 0.0  # older configs: alone
    assert LandmarkConfig.from_dict(cfg.to_dict()).fusion == cfg.fusion


def test_bm25_context_needs_the_sentence_right_before():
    from landmark_rag.store.bm25 import BM25Index

    analyze = make_analyzer("en")
    # rows 0 and 1 are sentences 0 and 2 of one document: sentence 1 is missing, so no context
    index = BM25Index(
        ["d:0", "d:2", "d:3"], np.array([0, 1, 2]), np.array([1, 1, 1]), {"thame": 0, "complet": 1, "boat": 2},
        documents=np.array([0, 0, 0]), positions=np.array([0, 2, 3]),
    )
    assert analyze("thames completed boats") == ["thame", "complet", "boat"]
    assert index.scores(analyze("thames"), context=0.5)[1] == 0
    assert index.scores(analyze("completed"), context=0.5)[2] > 0  # 2 -> 3 is a real step
    with pytest.raises(ValueError, match="one index per row"):
        BM25Index(["0", "1"], np.array([0, 1]), np.array([1, 1]), {"a": 0, "b": 1},
                  documents=np.array([0, 0]), positions=np.array([0]))


def test_lexical_context_stays_within_documents_as_the_store_changes(store):
    lex = StoreLexicalIndex(store, context=0.5)
    store.add_document(encode("Rowing clubs line the Thames.", "clubs"))
    assert [u for u, _ in lex.candidates("Thames", 5)] == ["clubs:0"]
    # documents added and replaced after the first build: each one's first sentence takes
    # nothing from the document before it in the index
    store.add_document(encode("Tidal mills once stood here. The Thames floods.", "mills"))
    store.add_document(encode(DOC_CTX, "ctx"))
    got = dict(lex.candidates("Thames", 10))
    assert set(got) == {"clubs:0", "mills:1", "ctx:0", "ctx:1"}
    store.add_document(encode("The Thames is tidal. Mills stood by it.", "mills", 1))  # replaced
    got = dict(lex.candidates("Thames", 10))
    assert set(got) == {"clubs:0", "mills:0", "mills:1", "ctx:0", "ctx:1"}
    assert got["mills:1"] == pytest.approx(0.5 * got["mills:0"])
    assert got["ctx:0"] > 0 and "ctx:2" not in got


def test_landmark_index_searches_with_its_model_lexical_context(tmp_path, tiny_encoder):
    from landmark_rag.index import LandmarkIndex

    encoder = tiny_encoder()
    encoder.config.fusion = {"mode": "hybrid", "method": "linear", "weight": 0.6, "lexical_context": 0.5}
    store = ChromaSentenceStore.open(tmp_path / "db", "ctx", identity=encoder.config.identity())
    index = LandmarkIndex(store, encoder)
    index.add_texts([DOC_CTX], ids=["ctx"])
    assert index.fusion.lexical_context == 0.5 and index.lexical.context == 0.5
    hits = index.hits("Thames Barrier", 3, mode="lexical")
    assert [h.sentence.text for h in hits] == [  # the second found through the sentence before it
        "The Thames Barrier spans the river at Woolwich.", "It was completed in 1982."]
    plain = LandmarkIndex(store, encoder, fusion={"lexical_context": 0.0, "bm25_b": 0.25})
    assert plain.lexical.context == 0.0 and (plain.lexical.k1, plain.lexical.b) == (1.5, 0.25)
    assert [h.sentence.text for h in plain.hits("Thames Barrier", 3, mode="lexical")] == [
        "The Thames Barrier spans the river at Woolwich."]
