"""Distributed indexing on Ray vs the single-process path, and the Chroma server's write rate.

All on this machine, all into one real ``chroma run`` server on loopback (HttpClient), the
same articles of data/squad-v1.1-dev-part-a.json written out as files, the same model (default:
landmark-minilm, the package default). Each configuration indexes into a fresh collection:

- ``single``: the core path as ``landmark-rag index --db http://...`` runs it: load the
  model, open the store, ``LandmarkIndex.add_files`` (2 torch threads);
- ``ray-1``: ``ray_index`` with 1 worker (2 CPUs, 2 torch threads);
- ``ray-2``: ``ray_index`` with 2 workers (1 CPU, 1 torch thread each).

Times are end to end (the single path includes its model load; the Ray runs include starting
their actors and loading one model per actor, but not ``ray.init``, which is printed
separately); tokens are the articles' own tokens. Configurations run round-robin
(``--rounds``), each keeps its best time, so load drifting on a shared machine hits all alike;
the load average is printed. Ratios are against ``single`` from this one run.

Write rate: the vectors of the single run are read back and written again into fresh
collections (a) document by document through ``ChromaSentenceStore.add_document`` (the
manifest protocol every worker uses), (b) as raw ``collection.upsert`` batches and (c) by two
concurrent writers (threads, one HttpClient each) through ``add_document``; printed as
sentences/s.

CPU side: a worker's segmentation + tokenisation alone (1 thread), the ceiling one CPU core
puts on a GPU worker however fast its GPU.

Run:  nice -n 10 python benchmarks/ray_scaling.py                 (6 articles, 1 round)
      nice -n 10 python benchmarks/ray_scaling.py --articles 12 --rounds 2 --json out.json
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO / "data" / "squad-v1.1-dev-part-a.json"


def write_articles(path: Path, limit: int, out: Path) -> list[Path]:
    data = json.loads(path.read_text(encoding="utf-8"))["data"][:limit]
    files = []
    for i, art in enumerate(data):
        f = out / f"{i:02d}_{art['title']}.txt"
        f.write_text("\n\n".join(p["context"] for p in art["paragraphs"]), encoding="utf-8")
        files.append(f)
    return files


def start_chroma(data_dir: Path) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    exe = Path(sys.executable).parent / "chroma"
    proc = subprocess.Popen([str(exe), "run", "--host", "127.0.0.1", "--port", str(port), "--path", str(data_dir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1).close()
            return proc, url
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("chroma server did not start") from None
            time.sleep(0.2)


def run_single(docs: Path, url: str, collection: str, model: str | None) -> tuple[float, int, int]:
    import torch

    from landmark_rag import LandmarkIndex
    from landmark_rag.encode import LandmarkEncoder
    from landmark_rag.store import ChromaSentenceStore, make_client

    torch.set_num_threads(2)
    t0 = time.perf_counter()
    encoder = LandmarkEncoder.from_pretrained(model, device="cpu")
    store = ChromaSentenceStore.open(client=make_client(url), collection_name=collection,
                                     identity=encoder.config.identity())
    report = LandmarkIndex(store, encoder).add_files([docs], show_progress=False)
    return time.perf_counter() - t0, report.tokens, report.sentences


def run_ray(docs: Path, url: str, collection: str, model: str | None, workers: int) -> tuple[float, int, int]:
    from landmark_rag.distributed import ray_index

    t0 = time.perf_counter()
    report = ray_index([docs], url, model=model, collection=collection, workers=workers, show_progress=False)
    return time.perf_counter() - t0, report.tokens, report.sentences


def cpu_prep_rate(docs: Path, model: str | None) -> float:
    """Tokens/s of a worker's CPU side alone (segment + tokenize), one thread: the most a
    GPU worker can be fed by one CPU core, whatever the GPU's speed."""
    import torch

    from landmark_rag.encode import LandmarkEncoder

    torch.set_num_threads(1)
    encoder = LandmarkEncoder.from_pretrained(model, device="cpu")
    texts = [f.read_text(encoding="utf-8") for f in sorted(docs.iterdir())]
    tokens = sum(encoder.count_tokens(t) for t in texts)
    t0 = time.perf_counter()
    for text in texts:
        sents = encoder.segment(text)
        encoder.tokenizer([x.text for x in sents], add_special_tokens=False, verbose=False)
    return tokens / (time.perf_counter() - t0)


def write_rate(url: str, source: str, rounds: int) -> dict[str, float]:
    """Sentences/s re-writing the ``source`` collection's vectors through HttpClient."""
    import numpy as np

    from landmark_rag.store import ChromaSentenceStore, make_client
    from landmark_rag.types import EncodedDocument

    client = make_client(url)
    src = ChromaSentenceStore.open(client=client, collection_name=source, create=False)
    docs = []
    for doc_id in sorted(src.documents()):
        stored = src.read_document(doc_id, embeddings=True)
        docs.append(EncodedDocument(doc_id=doc_id, text=src.document_text(doc_id) or "", sentences=stored.sentences,
                                    embeddings=stored.embeddings))
    n = sum(len(d.sentences) for d in docs)
    best: dict[str, float] = {}
    for r in range(rounds):
        dst = ChromaSentenceStore.open(client=client, collection_name=f"w-manifest-{r}", identity=src.identity())
        t0 = time.perf_counter()
        for d in docs:
            dst.add_document(d)
        best["manifest"] = max(best.get("manifest", 0.0), n / (time.perf_counter() - t0))
        raw = client.get_or_create_collection(f"w-raw-{r}", metadata={"hnsw:space": "cosine"},
                                              embedding_function=None)
        got = src.collection.get(include=["documents", "metadatas", "embeddings"])
        t0 = time.perf_counter()
        step = 1000
        for i in range(0, len(got["ids"]), step):
            raw.upsert(ids=got["ids"][i:i + step], documents=got["documents"][i:i + step],
                       metadatas=got["metadatas"][i:i + step],
                       embeddings=np.asarray(got["embeddings"][i:i + step], dtype=np.float32))
        best["raw_upsert"] = max(best.get("raw_upsert", 0.0), n / (time.perf_counter() - t0))
        # (c) two writers at once (one HttpClient each, half the documents each), as two workers do
        stores = [ChromaSentenceStore.open(client=make_client(url), collection_name=f"w-two-{r}",
                                           identity=src.identity()) for _ in range(2)]
        t0 = time.perf_counter()
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda i, two=stores: [two[i].add_document(d) for d in docs[i::2]], range(2)))
        best["manifest_2_writers"] = max(best.get("manifest_2_writers", 0.0), n / (time.perf_counter() - t0))
    best["sentences"] = n
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--articles", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--model", default=None, help="model (default: the package default, landmark-minilm)")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args()

    import ray

    tmp = Path(tempfile.mkdtemp(prefix="ray-scaling-"))
    atexit.register(shutil.rmtree, tmp, True)
    docs = tmp / "docs"
    docs.mkdir()
    write_articles(args.data, args.articles, docs)
    proc, url = start_chroma(tmp / "chroma")
    src = str(REPO / "src")
    os.environ["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [os.environ.get("PYTHONPATH")])])
    try:
        t0 = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING", log_to_driver=False)
        ray_start = time.perf_counter() - t0
        configs = {"single": lambda c: run_single(docs, url, c, args.model),
                   "ray-1": lambda c: run_ray(docs, url, c, args.model, 1),
                   "ray-2": lambda c: run_ray(docs, url, c, args.model, 2)}
        best: dict[str, tuple[float, int, int]] = {}
        loads = []
        for r in range(args.rounds):
            for name, fn in configs.items():
                loads.append(os.getloadavg()[0])
                secs, tokens, sents = fn(f"{name}-{r}")
                print(f"round {r} {name}: {secs:.1f} s, {tokens:,} tokens, {sents:,} sentences", flush=True)
                if name not in best or secs < best[name][0]:
                    best[name] = (secs, tokens, sents)
        tokens = {n: b[1] for n, b in best.items()}
        assert len(set(tokens.values())) == 1, f"configurations indexed different token counts: {tokens}"
        writes = write_rate(url, "single-0", args.rounds)
        prep = max(cpu_prep_rate(docs, args.model) for _ in range(args.rounds))
    finally:
        ray.shutdown()
        proc.terminate()
        proc.wait(timeout=30)

    base = best["single"][1] / best["single"][0]
    print(f"\n{args.articles} articles, {best['single'][1]:,} tokens, {best['single'][2]:,} sentences; "
          f"ray.init {ray_start:.1f} s; load average during runs {min(loads):.1f}-{max(loads):.1f} on "
          f"{os.cpu_count()} CPUs")
    print(f"{'config':8} {'seconds':>8} {'tok/s':>8} {'vs single':>9}")
    result = {"articles": args.articles, "tokens": best["single"][1], "sentences": best["single"][2],
              "ray_init_s": ray_start, "load": [min(loads), max(loads)], "configs": {}, "writes": writes}
    for name, (secs, tok, _) in best.items():
        rate = tok / secs
        print(f"{name:8} {secs:8.1f} {rate:8,.0f} {rate / base:9.2f}")
        result["configs"][name] = {"seconds": secs, "tokens_per_s": rate, "vs_single": rate / base}
    print(f"chroma server writes ({writes['sentences']:,} sentences, HttpClient): "
          f"{writes['manifest']:,.0f} sentences/s through add_document (manifest protocol), "
          f"{writes['manifest_2_writers']:,.0f} with 2 writers at once, "
          f"{writes['raw_upsert']:,.0f} sentences/s as raw upsert batches")
    print(f"worker CPU side alone (segment + tokenize, 1 thread): {prep:,.0f} tokens/s; "
          f"{best['single'][1] / best['single'][2]:.1f} tokens per sentence")
    result["cpu_prep_tokens_per_s"] = prep
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
