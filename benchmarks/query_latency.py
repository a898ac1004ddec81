"""Warm query latency of ``LandmarkIndex.search`` (with expansion) at 5k, 100k, 1M stored sentences.

What a Python API / LangChain retriever user waits for per question once the model is
loaded: encode the query, the Chroma vector search, the manifest visibility check, the
expansion's neighbour reads (one ``read_documents`` call per query) and the exact passage text.

The stores are synthetic repeats of real ones: SQuAD articles are encoded once with the
default model, then copied under new document ids until a store holds ``size`` sentences;
each copy's vectors get Gaussian noise (``--noise`` per component, re-normalised) so the
HNSW index is not full of exact duplicates. Questions are the articles' SQuAD questions.
Stores are kept in ``--workdir`` and reused by later runs.

    PYTHONPATH=src python benchmarks/query_latency.py           # 5k and 100k
    python benchmarks/query_latency.py --sizes 5000 100000 1000000
    python benchmarks/query_latency.py --strategy adaptive      # reads stored vectors too

Prints one JSON object: per size, p50/p95/mean milliseconds of ``search`` (text in,
passages out), of the store + expansion part alone (query vector given), of query
encoding alone, and the Chroma calls one search makes.

``--filtered`` adds, per search mode (``--modes``), ``search`` with the query vector given over
the whole store and within part of it, timed side by side on the same questions
(``--filter-queries`` of them), each filter with its ratio to the unfiltered time: ``doc_id``
(the question's own article, one copy of it), ``doc_id_in`` (that document and four others)
and ``metadata`` (``{"copy": c}``, user metadata every document is written with: one copy of
each article). A table of the same figures goes to stderr.

    python benchmarks/query_latency.py --sizes 60000 --filtered --filter-queries 50

``--first-search N`` times, N times each in a fresh process, opening the store and its first
dense search filtered on user metadata (``{"copy": 0}``, after one unfiltered search that loads
the vector index): ``memory`` with the store's document table kept in memory only (as before it
was kept beside the store), ``cold`` with no file kept yet (the table is derived from every
sentence and saved), ``file`` starting from the kept file. ``--queries 0`` skips the rest.

    python benchmarks/query_latency.py --sizes 60000 --queries 0 --first-search 3

Data: data/squad-v1.1-dev-part-a.json (CC BY-SA 4.0).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from cli_squad import DEFAULT_DATA

from landmark_rag import LandmarkIndex
from landmark_rag.store import ChromaSentenceStore, make_client
from landmark_rag.types import EncodedDocument


def load_articles(path: Path, n: int) -> tuple[list[tuple[str, str]], list[str], list[str]]:
    """(title, text) of the first ``n`` articles, all their questions and each question's title."""
    data = json.loads(path.read_text(encoding="utf-8"))["data"][:n]
    docs = [(a["title"], "\n\n".join(p["context"] for p in a["paragraphs"])) for a in data]
    pairs = [(qa["question"].strip(), a["title"]) for a in data for p in a["paragraphs"] for qa in p["qas"]]
    return docs, [q for q, _ in pairs], [t for _, t in pairs]


def seed_store(work: Path, docs: list[tuple[str, str]]) -> ChromaSentenceStore:
    """The real articles, encoded once with the default model."""
    db = work / "seed"
    if db.is_dir():
        return LandmarkIndex.open(db, create=False).store
    index = LandmarkIndex.open(db)
    index.add_texts([t for _, t in docs], ids=[title for title, _ in docs], show_progress=True)
    return index.store


def build_store(work: Path, seed: ChromaSentenceStore, size: int, noise: float) -> ChromaSentenceStore:
    """A store of about ``size`` sentences: noisy copies of the seed's documents."""
    db = work / f"store_{size}"
    stored = seed.read_documents(dict.fromkeys(sorted(seed.documents())), embeddings=True)
    originals = [(d, doc.sentences, doc.embeddings) for d, doc in stored.items()]
    per_round = sum(len(s) for _, s, _ in originals)
    if db.is_dir():
        store = ChromaSentenceStore.open(collection_name="landmark", client=make_client(db), create=False)
        if store.count_sentences() >= size:
            return store
    client = make_client(db)
    store = ChromaSentenceStore.open(collection_name="landmark", client=client, identity=seed.identity(), create=True)
    md = dict(seed.collection.metadata or {})
    store.collection.modify(metadata={k: v for k, v in md.items() if not k.startswith("hnsw:")})
    rng = np.random.default_rng(size)
    copies = -(-size // per_round)
    have = set(store.documents())
    bar = tqdm(total=copies * len(originals), desc=f"store {size:,}", unit="doc")
    for c in range(copies):
        for doc_id, sents, vecs in originals:
            new_id = f"{doc_id}#{c}"
            bar.update(1)
            if new_id in have:
                continue
            v = vecs if c == 0 else vecs + rng.normal(scale=noise, size=vecs.shape).astype(np.float32)
            v = v / np.linalg.norm(v, axis=1, keepdims=True)
            text = seed.document_text(doc_id) or ""
            # {"copy": c}: what the benchmark's metadata filter selects (one copy of each article)
            store.add_document(EncodedDocument(text, [s.with_doc_id(new_id) for s in sents], v, new_id),
                               metadata={"copy": c}, store_text=False)
    bar.close()
    return store


class CountingCollection:
    """Wraps a Chroma collection and counts the calls one search makes (every call goes through)."""

    def __init__(self, inner) -> None:
        self._inner, self.calls = inner, Counter()

    def __getattr__(self, name):
        attr = getattr(self._inner, name)
        if name in ("get", "query", "count"):
            def counted(*a, **k):
                self.calls[name] += 1
                return attr(*a, **k)
            return counted
        return attr


def percentiles(ms: list[float]) -> dict[str, float]:
    a = np.asarray(ms)
    return {"p50_ms": round(float(np.percentile(a, 50)), 2), "p95_ms": round(float(np.percentile(a, 95)), 2),
            "mean_ms": round(float(a.mean()), 2)}


def measure(store: ChromaSentenceStore, encoder, questions: list[str], k: int, strategy: str | None) -> dict:
    spy = CountingCollection(store.collection)
    manifest_spy = CountingCollection(store.manifest)
    index = LandmarkIndex(ChromaSentenceStore(spy, manifest_spy), encoder, strategy=strategy)
    vectors = encoder.encode_queries(questions)
    for q in questions[:5]:  # warm-up: HNSW pages, tokenizer caches
        index.search(q, k)
    full, store_only, enc = [], [], []
    for q, v in zip(questions, vectors, strict=True):
        t0 = time.perf_counter()
        encoder.encode_query(q)
        enc.append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        index.search(q, k, query_vector=v)
        store_only.append((time.perf_counter() - t0) * 1e3)
    spy.calls.clear()
    manifest_spy.calls.clear()
    for q in questions:
        t0 = time.perf_counter()
        passages = index.search(q, k)
        full.append((time.perf_counter() - t0) * 1e3)
        assert len(passages) == k
    n = len(questions)
    calls = {f"sentences.{k_}": round(v / n, 2) for k_, v in spy.calls.items()}
    calls.update({f"manifest.{k_}": round(v / n, 2) for k_, v in manifest_spy.calls.items()})
    return {"sentences": store.count_sentences(), "queries": n, "search": percentiles(full),
            "store_and_expand": percentiles(store_only), "encode_query": percentiles(enc),
            "chroma_calls_per_search": calls, "strategy": type(index.strategy).__name__}


def measure_filtered(
    store: ChromaSentenceStore, encoder, questions: list[str], titles: list[str], k: int, modes: list[str], seed: int
) -> dict:
    """Per mode, ``search`` (query vector given) over the whole store and with each filter, in
    one loop over the questions so that load on the machine falls on both alike; each filter's
    p50 and mean as ratios of the unfiltered ones."""
    index = LandmarkIndex(store, encoder)
    vectors = encoder.encode_queries(questions)
    docs = sorted(store.documents())
    copies = sorted({d.rsplit("#", 1)[1] for d in docs}, key=int)
    rng = np.random.default_rng(seed)
    filters: list[dict[str, dict]] = []
    for t in titles:
        c = str(rng.choice(copies))
        own = f"{t}#{c}"
        others = [str(d) for d in rng.choice(docs, size=4, replace=False) if d != own]
        filters.append({
            "doc_id": {"doc_id": own},
            "doc_id_in": {"doc_id": {"$in": [own, *others]}},
            "metadata": {"copy": int(c)},
        })
    out: dict[str, dict] = {}
    for label in modes:
        mode = label.removesuffix("-before")
        with store_paths_off(label.endswith("-before")):
            out[label] = _measure_mode(index, questions, vectors, filters, k, mode)
    return out


@contextlib.contextmanager
def store_paths_off(off: bool):
    """``off``: the store as before its table of document metadata (a metadata filter goes to
    Chroma's ``where``) and before a read by ids skipped the second manifest read, so that
    ``dense-before`` measures the earlier state in the same run."""
    if not off:
        yield
        return
    from landmark_rag.store.doc_metadata import DocumentTable
    from landmark_rag.store.reads import SentenceReads

    table, visible = DocumentTable.sentence_ids, SentenceReads.visible_hits
    DocumentTable.sentence_ids = lambda self, where, most: None
    SentenceReads.visible_hits = lambda self, hits: visible(self, list(hits))
    try:
        yield
    finally:
        DocumentTable.sentence_ids, SentenceReads.visible_hits = table, visible


def _measure_mode(index, questions, vectors, filters, k: int, mode: str) -> dict:
    """One mode's unfiltered and filtered times, each filter's ratio to unfiltered."""
    for q, v in list(zip(questions, vectors, strict=True))[:3]:  # warm-up (the lexical index builds here)
        index.search(q, k, query_vector=v, mode=mode)
        for where in filters[0].values():  # every filter: the store's document table builds here
            index.search(q, k, query_vector=v, mode=mode, where=where)
    times: dict[str, list[float]] = {"unfiltered": [], **{name: [] for name in filters[0]}}
    for q, v, wheres in zip(questions, vectors, filters, strict=True):
        t0 = time.perf_counter()
        index.search(q, k, query_vector=v, mode=mode)
        times["unfiltered"].append((time.perf_counter() - t0) * 1e3)
        for name, where in wheres.items():
            t0 = time.perf_counter()
            found = index.search(q, k, query_vector=v, mode=mode, where=where)
            times[name].append((time.perf_counter() - t0) * 1e3)
            if name != "metadata":
                allowed = where["doc_id"] if name == "doc_id" else where["doc_id"]["$in"]
                assert all(p.doc_id in allowed for p in found), (mode, name)
    base = percentiles(times["unfiltered"])
    row: dict[str, dict] = {"unfiltered": base}
    for name in filters[0]:
        got = percentiles(times[name])
        got["ratio_p50"] = round(got["p50_ms"] / base["p50_ms"], 2)
        got["ratio_mean"] = round(got["mean_ms"] / base["mean_ms"], 2)
        row[name] = got
    return row


def first_search(db: str, mode: str, vector: list[float]) -> dict[str, float]:
    """In a fresh process: open the store, one unfiltered search (loads the HNSW index), then
    the first metadata-filtered one; ms each. ``mode``: ``memory`` keeps no file (the table as
    before it was kept), ``cold`` / ``file`` use the file (the caller removed it for ``cold``)."""
    from landmark_rag.store.doc_metadata_cache import DocTableCache

    if mode == "memory":
        DocTableCache.beside = classmethod(lambda cls, *a: cls(None, {}))  # type: ignore[method-assign]
    vec = np.asarray(vector, dtype=np.float32)
    t0 = time.perf_counter()
    store = ChromaSentenceStore.open(collection_name="landmark", client=make_client(db), create=False)
    t1 = time.perf_counter()
    store.nearest(vec, 3)
    t2 = time.perf_counter()
    hits = store.nearest(vec, 3, where={"copy": 0})
    t3 = time.perf_counter()
    assert len(hits) == 3 and all(h.metadata.get("copy") == 0 for h in hits)
    return {"open_ms": (t1 - t0) * 1e3, "unfiltered_ms": (t2 - t1) * 1e3, "filtered_ms": (t3 - t2) * 1e3}


def measure_first_search(work: Path, store: ChromaSentenceStore, size: int, repeats: int) -> dict:
    """:func:`first_search` ``repeats`` times per mode, modes interleaved so that load on the
    machine falls on each alike; median ms per mode."""
    import multiprocessing

    from landmark_rag.store.doc_metadata_cache import DOC_TABLE_DIR

    db = work / f"store_{size}"
    kept = db / DOC_TABLE_DIR / "landmark.json"
    vector = np.asarray(store.collection.get(limit=1, include=["embeddings"])["embeddings"][0]).tolist()
    runs: dict[str, list[dict[str, float]]] = {"memory": [], "cold": [], "file": []}
    ctx = multiprocessing.get_context("spawn")  # a fresh interpreter: nothing of this process's state
    for _ in range(repeats):
        for mode, got in runs.items():
            if mode == "cold":
                kept.unlink(missing_ok=True)
            with ctx.Pool(1) as pool:
                got.append(pool.apply(first_search, (str(db), mode, vector)))
    out = {mode: {k: round(float(np.median([r[k] for r in got])), 1) for k in got[0]} for mode, got in runs.items()}
    out["file_bytes"] = kept.stat().st_size if kept.exists() else 0
    print(f"\n{size:,} sentences, first search of a fresh process, median of {repeats} (ms)", file=sys.stderr)
    for mode in runs:
        row = out[mode]
        print(f"{mode:<7} open {row['open_ms']:>8.1f}  unfiltered {row['unfiltered_ms']:>8.1f}  "
              f"filtered {row['filtered_ms']:>8.1f}", file=sys.stderr)
    return out


def print_filtered(size: int, table: dict) -> None:
    """The filtered figures side by side (stderr): p50 ms, and the ratio to unfiltered."""
    names = [n for n in next(iter(table.values())) if n != "unfiltered"]
    print(f"\n{size:,} sentences, p50 ms (ratio to unfiltered)", file=sys.stderr)
    print(f"{'mode':<8} {'unfiltered':>10} " + " ".join(f"{n:>18}" for n in names), file=sys.stderr)
    for mode, row in table.items():
        cells = " ".join(f"{row[n]['p50_ms']:>10.1f} ({row[n]['ratio_p50']:>4.2f}x)" for n in names)
        print(f"{mode:<8} {row['unfiltered']['p50_ms']:>10.1f} {cells}", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[5000, 100000])
    ap.add_argument("--articles", type=int, default=5)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--strategy", choices=["front", "surround", "adaptive"], default=None,
                    help="default: the model's own expansion")
    ap.add_argument("--filtered", action="store_true", help="also: filtered vs unfiltered search, per mode")
    ap.add_argument("--modes", nargs="+", choices=["dense", "lexical", "hybrid", "dense-before", "hybrid-before"],
                    default=["dense", "lexical", "hybrid"],
                    help="MODE-before: the store without its document table and manifest-read saving")
    ap.add_argument("--filter-queries", type=int, default=50, help="questions of the filtered comparison")
    ap.add_argument("--first-search", type=int, default=0, metavar="N",
                    help="also: a fresh process's first metadata-filtered dense search, N times per mode")
    ap.add_argument("--noise", type=float, default=0.01)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/landmark_query_latency"))
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    docs, questions, titles = load_articles(args.data, args.articles)
    rng = np.random.default_rng(0)
    picked = rng.permutation(len(questions))[: args.queries]
    questions, titles = [questions[i] for i in picked], [titles[i] for i in picked]
    seed = seed_store(args.workdir, docs)
    # the model is loaded only for what encodes questions (not for --first-search alone)
    encoder = LandmarkIndex.open(args.workdir / "seed", create=False).encoder if args.queries else None
    model = encoder.model_name if encoder is not None else seed.identity().get("model_name")
    out = {"model": model, "cores": os.cpu_count(), "load_avg_before": [round(x, 1) for x in os.getloadavg()],
           "sizes": {}}
    for size in args.sizes:
        t0 = time.perf_counter()
        store = build_store(args.workdir, seed, size, args.noise)
        built = time.perf_counter() - t0
        res = measure(store, encoder, questions, args.k, args.strategy) if encoder is not None else {}
        res["build_s"] = round(built, 1)
        if args.first_search:
            res["first_search"] = measure_first_search(args.workdir, store, size, args.first_search)
        if args.filtered and encoder is not None:
            n = args.filter_queries
            res["filtered"] = measure_filtered(store, encoder, questions[:n], titles[:n], args.k, args.modes, size)
            print_filtered(size, res["filtered"])
        out["sizes"][str(size)] = res
        print(json.dumps({size: res}), file=sys.stderr)
    out["load_avg_after"] = [round(x, 1) for x in os.getloadavg()]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
