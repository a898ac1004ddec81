"""Query latency of hybrid vs dense search at ~100k stored sentences, side by side.

Target (issue 11): hybrid within 1.5x of dense-only. The store is synthetic but real: the
three validation articles (13-15) of data/squad-v1.1-dev-part-a.json are encoded
once with the model and stored as ``--copies`` distinct documents (each copy's vectors
jittered by a little Gaussian noise and re-normalised, so the HNSW graph does not hold exact
duplicates), in a real Chroma PersistentClient; the lexical index is built from the stored
sentences like any store's. Queries are the articles' real questions.

Both modes run the whole search path (query encoding, candidate search, fusion, boundary
expansion with the model's strategy, exactly-k merging: ``LandmarkIndex.search``),
interleaved question by question so both see the same machine load; the script prints the
median and p90 per mode and their ratio, and the same for retrieval alone (the query vector
given to ``LandmarkIndex.search(query_vector=...)``, the encoder excluded).

Run:  nice -n 10 python benchmarks/hybrid_latency.py [--copies 200] [--questions 200] [--k 4]
"""

from __future__ import annotations

import argparse
import atexit
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from landmark_rag import LandmarkEncoder, LandmarkIndex
from landmark_rag.datasets import read_squad, select
from landmark_rag.store import ChromaSentenceStore
from landmark_rag.store.lexical import StoreLexicalIndex
from landmark_rag.types import EncodedDocument

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO / "data" / "squad-v1.1-dev-part-a.json"


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs), q))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--model", default=None)
    ap.add_argument("--copies", type=int, default=200, help="copies of the 3 articles (200 -> ~100k sentences)")
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--db", default=None, help="store folder (default: a temporary one; an existing one is reused)")
    args = ap.parse_args()

    arts = select(read_squad(args.data), "13:16")
    encoder = LandmarkEncoder.from_pretrained(args.model)
    db = args.db
    if db is None:
        db = tempfile.mkdtemp(prefix="hybrid-latency-")
        atexit.register(shutil.rmtree, db, True)
    store = ChromaSentenceStore.open(db, "bench", identity=encoder.config.identity())
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    if store.count_sentences() == 0:  # a --db from an earlier run is reused as it is
        docs = encoder.encode_documents([a.text for a in arts], [a.doc_id for a in arts], show_progress=True)
        for c in tqdm(range(args.copies), desc="storing copies", unit="copy"):
            for d in docs:
                vecs = d.embeddings + rng.normal(scale=0.02, size=d.embeddings.shape).astype(np.float32)
                vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
                doc_id = f"{d.doc_id}-{c}"
                sents = [s.with_doc_id(doc_id) for s in d.sentences]
                store.add_document(EncodedDocument(d.text, sents, vecs, doc_id), store_text=False)
    print(f"store: {store.count_sentences()} sentences ({time.perf_counter() - t0:.0f}s to write)")
    index = LandmarkIndex(store, encoder)  # the public core object: the model's fusion and expansion
    fusion, strategy = index.fusion, index.strategy
    t0 = time.perf_counter()
    cold = len(StoreLexicalIndex(store, language=fusion.language, cache_dir=False, show_progress=True))
    print(f"lexical index built from the store's sentences: {cold} sentences in {time.perf_counter() - t0:.1f}s")
    len(index.lexical)  # builds and persists its cache beside the store on a first run
    t0 = time.perf_counter()
    assert len(StoreLexicalIndex(store, language=fusion.language)) == cold
    print(f"lexical index reopened from its cache: {time.perf_counter() - t0:.1f}s")

    def search(q: str, mode: str, vec: np.ndarray | None = None) -> list:
        # vec None: the whole public path (LandmarkIndex.search encodes the query itself);
        # else the same path with the query vector given
        return index.search(q, args.k, mode=mode, query_vector=vec)

    questions = [q.question for a in arts for q in a.questions][: args.questions]
    for q in questions[:5]:  # warm-up: caches, lazy imports, HNSW pages
        search(q, "dense")
        search(q, "hybrid")
    vectors = encoder.encode_queries(questions)
    full: dict[str, list[float]] = {"dense": [], "hybrid": []}
    core: dict[str, list[float]] = {"dense": [], "hybrid": []}
    for i, (q, vec) in enumerate(tqdm(list(zip(questions, vectors, strict=True)), desc="queries", unit="q")):
        for mode in ("dense", "hybrid") if i % 2 == 0 else ("hybrid", "dense"):
            t = time.perf_counter()
            got = search(q, mode)
            full[mode].append(time.perf_counter() - t)
            assert len(got) == args.k
            t = time.perf_counter()
            search(q, mode, vec)
            core[mode].append(time.perf_counter() - t)
    print(f"\n{len(questions)} questions, k={args.k}, {store.count_sentences()} sentences, "
          f"fusion {fusion.method} w={fusion.weight} depth={fusion.depth}, expansion {type(strategy).__name__}")
    print("| path | dense median ms | hybrid median ms | ratio (median) | dense p90 | hybrid p90 | ratio (p90) |")
    print("|---|---|---|---|---|---|---|")
    for label, data in (("search (with query encoding)", full), ("retrieval only (query vector given)", core)):
        d50, h50 = statistics.median(data["dense"]) * 1e3, statistics.median(data["hybrid"]) * 1e3
        d90, h90 = pct(data["dense"], 90) * 1e3, pct(data["hybrid"], 90) * 1e3
        print(f"| {label} | {d50:.1f} | {h50:.1f} | {h50 / d50:.2f}x | {d90:.1f} | {h90:.1f} | {h90 / d90:.2f}x |")


if __name__ == "__main__":
    main()
