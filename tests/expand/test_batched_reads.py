"""The expansion of a query's hits reads every neighbour in one store call (issue 14).

Whatever the number of documents the hits fall in and the strategy (adaptive also reads
stored vectors), ``expand_hits`` and ``cosine_rescore`` make one ``get`` on a real Chroma
collection, and give the same passages and scores as per-document reads from memory.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from landmark_rag.expand import Adaptive, InMemorySource, Surround, expand_hits
from landmark_rag.retrieve import cosine_rescore
from landmark_rag.segment import segment_sentences
from landmark_rag.store import ChromaSentenceStore
from landmark_rag.types import EncodedDocument


class CountingCollection:
    """The real Chroma collection, counting ``get`` calls (a spy: every call goes through)."""

    def __init__(self, collection) -> None:
        self._collection = collection
        self.gets = 0

    def get(self, *args, **kwargs):
        self.gets += 1
        return self._collection.get(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._collection, name)


TEXTS = {
    "a": "Cats purr when content. They sleep a lot. Kittens play with yarn. Old cats nap in the sun. Dogs bark.",
    "b": "Rockets need fuel. Orbits are curved paths. Satellites circle the Earth. Launches are loud. Mars is red.",
    "c": "Bread needs yeast. Dough rises overnight. Ovens bake loaves. Crusts turn brown. Butter melts on toast.",
}


@pytest.mark.parametrize("strategy", [Surround(2, 2), Adaptive(margin=1.0, max_tokens=1000)], ids=["surround", "adaptive"])
def test_expansion_reads_neighbours_in_one_store_call(tmp_path: Path, strategy) -> None:
    rng = np.random.default_rng(0)
    store = ChromaSentenceStore.open(tmp_path / "db", "unit", identity={"model_name": "m"})
    memory = InMemorySource()
    for doc_id, text in TEXTS.items():
        sents = segment_sentences(text, doc_id=doc_id)
        vecs = rng.normal(size=(len(sents), 8)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        store.add_document(EncodedDocument(text, sents, vecs, doc_id))
        memory.sentences[doc_id], memory.embeddings[doc_id] = sents, vecs
    query = rng.normal(size=8).astype(np.float32)
    query /= np.linalg.norm(query)
    hits = store.nearest(query, 9)
    assert len({h.sentence.doc_id for h in hits}) == 3  # hits in every document

    spy = CountingCollection(store.collection)
    counted = ChromaSentenceStore(spy, store.manifest)
    batched = expand_hits(hits, counted, strategy, query_vector=query)
    assert spy.gets == 1
    per_doc = expand_hits(hits, memory, strategy, query_vector=query)
    assert [(p.doc_id, p.first_index, p.last_index, p.text) for p in batched] == [
        (p.doc_id, p.first_index, p.last_index, p.text) for p in per_doc
    ]
    for p in batched:
        assert p.text == TEXTS[p.doc_id][p.start : p.end]

    spy.gets = 0
    rescored = cosine_rescore(batched, counted, query)
    assert spy.gets == 1
    assert [round(p.score, 5) for p in rescored] == [round(p.score, 5) for p in cosine_rescore(per_doc, memory, query)]
