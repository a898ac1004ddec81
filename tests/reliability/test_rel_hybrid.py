"""The BM25 half of hybrid search (``store/lexical.py``, a cache keyed by the manifest) during a
replace, after a write that stopped midway, and with a torn cache file: it shows exactly the
versions the vector half shows. (The server-restart case is in test_rel_server_restart.py.)

Vectors are random (the lexical half does not read them); the texts are real SQuAD paragraphs.
"""

from __future__ import annotations

import time

import numpy as np
from reliability.faultkit import paragraphs

from landmark_rag.segment import segment_sentences
from landmark_rag.store import ChromaSentenceStore
from landmark_rag.store.lexical import StoreLexicalIndex
from landmark_rag.store.schema import sentence_id, sentence_metadata
from landmark_rag.types import EncodedDocument


def encoded(text: str, doc_id: str, seed: int) -> EncodedDocument:
    sents = segment_sentences(text, doc_id=doc_id)
    vecs = np.random.default_rng(seed).normal(size=(len(sents), 16)).astype(np.float32)
    return EncodedDocument(text, sents, vecs / np.linalg.norm(vecs, axis=1, keepdims=True), doc_id)


def unique_word(paras: list[str], i: int) -> str:
    """A long word of paragraph ``i`` that no other paragraph has (a term only its document matches)."""
    others = " ".join(p for j, p in enumerate(paras) if j != i).lower()
    return next(w for w in paras[i].split() if w.isalpha() and len(w) >= 7 and w.lower() not in others)


def docs_found(lex: StoreLexicalIndex, query: str) -> set[str]:
    return {str(h.sentence.doc_id) for h in lex.query(query, 20)}


def writer_that_stops(store: ChromaSentenceStore, doc: EncodedDocument, during=None):
    """``write(version)`` storing ``doc``'s sentences as the store does, then calling ``during``."""

    def write(version: str) -> None:
        store.collection.upsert(
            ids=[sentence_id(doc.doc_id, s.index, version) for s in doc.sentences],
            embeddings=doc.embeddings, documents=[s.text for s in doc.sentences],
            metadatas=[sentence_metadata(s, "new-hash", None, version) for s in doc.sentences],
        )
        if during is not None:
            during()

    return write


def test_bm25_cache_during_a_replace_after_a_stopped_write_and_when_torn(tmp_path):
    db = tmp_path / "db"
    store = ChromaSentenceStore.open(db, "landmark", identity={"model_name": "random-16"})
    paras = paragraphs()
    for i in range(4):
        store.add_document(encoded(paras[i], f"p{i}", i))
    lex = StoreLexicalIndex(store)  # persisted beside the local store (landmark_lexical/)
    old_p1 = unique_word(paras, 1)
    assert "p1" in docs_found(lex, old_p1)
    new_p1 = encoded(paras[6] + " The quokka sentence closes version two.", "p1", 11)
    assert docs_found(lex, "quokka") == set()

    # during a replace: new sentences stored, manifest still on the old version
    seen: dict[str, object] = {}

    def observe() -> None:
        fresh = StoreLexicalIndex(ChromaSentenceStore.open(db, "landmark", create=False))  # another reader
        seen["same reader"] = docs_found(lex, "quokka"), "p1" in docs_found(lex, old_p1)
        lex.refresh()  # even a forced full re-read indexes only the committed version
        seen["after refresh"] = docs_found(lex, "quokka"), "p1" in docs_found(lex, old_p1)
        seen["fresh reader"] = docs_found(fresh, "quokka"), "p1" in docs_found(fresh, old_p1)

    store.write_document("p1", writer_that_stops(store, new_p1, observe), n_sentences=len(new_p1.sentences),
                         doc_hash="new-hash", text=new_p1.text)
    assert all(v == (set(), True) for v in seen.values()), seen
    t0 = time.perf_counter()
    after_commit = docs_found(lex, "quokka"), "p1" in docs_found(lex, old_p1)
    sync_s = time.perf_counter() - t0
    assert after_commit == ({"p1"}, old_p1 in new_p1.text)  # the next query re-syncs: the new version

    # a write that stopped after its sentences were stored (the state kill -9 leaves there)
    new_p2 = encoded(paras[7] + " A wombat sentence for version two.", "p2", 12)
    old_p2 = unique_word(paras, 2)

    def stop() -> None:
        raise KeyboardInterrupt

    try:
        store.write_document("p2", writer_that_stops(store, new_p2, stop), n_sentences=len(new_p2.sentences),
                             doc_hash="new-hash", text=new_p2.text)
    except KeyboardInterrupt:
        pass
    assert store.documents(include_incomplete=True)["p2"].get("dirty")
    fresh = StoreLexicalIndex(ChromaSentenceStore.open(db, "landmark", create=False))
    stopped = {name: (docs_found(x, "wombat"), "p2" in docs_found(x, old_p2)) for name, x in
               (("same", lex), ("fresh", fresh))}
    assert stopped == {"same": (set(), True), "fresh": (set(), True)}, stopped

    # a torn cache file (a reader killed while saving would leave the old one: rename is atomic)
    state = db / "landmark_lexical"
    files = list(state.rglob("state.json"))
    assert files
    files[0].write_text('{"signature": ')
    store.add_document(new_p2)  # the re-run finishes p2
    torn = StoreLexicalIndex(ChromaSentenceStore.open(db, "landmark", create=False))
    assert docs_found(torn, "wombat") == {"p2"} and docs_found(lex, "wombat") == {"p2"}
    assert docs_found(torn, "quokka") == {"p1"}
    print(f"FAULT hybrid: during replace {seen}; after commit {after_commit} (sync {sync_s * 1000:.0f} ms); "
          f"after a stopped write {stopped}; torn cache rebuilt: wombat -> {docs_found(torn, 'wombat')}")
