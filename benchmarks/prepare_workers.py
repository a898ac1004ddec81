"""What one preparation worker and the calling process each cost per token (CPU only, no weights).

On a GPU host the default is bound by its host: preparation workers (``encode.runtime.process``)
segment, tokenise, lay out and pad groups of documents while the calling process rebuilds
sentence records, wraps the arrays and runs the device. This measures the two sides apart, on
any machine, so that a change to either can be judged without a GPU:

- ``worker``: ``process.prepare_group`` run in this process with the tokenizer held to one
  thread, over SQuAD part A joined per article (fresh texts each round: a tokenizer caches
  what it saw): tokens/s of one worker. A GPU host's pool prepares at most about its workers
  times this.
- ``calling``: ``encode_documents`` with ``--workers`` preparation workers and the device's
  work (forward, pooling) replaced by zeros of the pooled shape: the calling process's own CPU
  seconds (all its threads) per call, and tokens per CPU-second.

    RAYON_NUM_THREADS=1 python benchmarks/prepare_workers.py worker
    python benchmarks/prepare_workers.py calling --workers 2

The model is all-MiniLM-L6-v2's configuration and tokenizer from ``benchmarks/assets/``
(random weights, a 1-layer, 32-wide copy for ``calling``); nothing is downloaded.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import landmark_rag  # noqa: F401 - first: OpenMP's passive wait is set before torch loads

REPO = Path(__file__).resolve().parents[1]
ASSET = REPO / "benchmarks" / "assets" / "all-MiniLM-L6-v2"
DATA = REPO / "data" / "squad-v1.1-dev-part-a.json"


def articles(n: int, copies: int) -> list[str]:
    data = json.loads(DATA.read_text(encoding="utf-8"))["data"][:n]
    return ["\n\n".join(p["context"] for p in a["paragraphs"]) for a in data] * copies


def worker(args: argparse.Namespace) -> dict:
    from tokenizers import Tokenizer
    from transformers import AutoConfig, AutoTokenizer

    from landmark_rag.encode.config import LandmarkConfig
    from landmark_rag.encode.layout import Layout
    from landmark_rag.encode.runtime import process
    from landmark_rag.segment.tokens import TextTokenizer

    if os.environ.get("RAYON_NUM_THREADS") != "1":
        print("note: RAYON_NUM_THREADS is not 1: the tokenizer uses every core", file=sys.stderr)
    hf = AutoTokenizer.from_pretrained(ASSET)
    config = LandmarkConfig(model_name="random", pooling="mean", query_pooling="mean", max_length=256)
    layout = Layout.build(hf, config, AutoConfig.from_pretrained(ASSET)).portable()
    process._BACKENDS["bench"] = TextTokenizer.from_backend(Tokenizer.from_str(hf.backend_tokenizer.to_str()))
    texts = articles(args.articles, args.copies)
    best, tokens = float("inf"), 0
    for r in range(args.rounds):
        fresh = [f"{t} Round {r}." for t in texts]
        t0 = time.perf_counter()
        tokens = 0
        for i in range(0, len(fresh), args.group):
            docs, _, _ = process.prepare_group("bench", fresh[i : i + args.group], layout, 16, 1 << 18)
            tokens += sum(n for _, n in docs)
        best = min(best, time.perf_counter() - t0)
    return {"side": "worker", "tokens": tokens, "seconds": best, "tokens_per_s": tokens / best}


def calling(args: argparse.Namespace) -> dict:
    import torch
    from gpu_throughput import build_model_dir, workers_ready

    from landmark_rag.encode.encoder import LandmarkEncoder

    scratch = tempfile.mkdtemp(prefix="prepare-workers-")
    atexit.register(shutil.rmtree, scratch, True)
    enc = LandmarkEncoder.from_pretrained(build_model_dir("minilm", Path(scratch) / "m", tiny=True), device="cpu")
    dim = enc.dim
    # the device's work replaced by zeros of the pooled shape: what is left is the calling process's
    enc._forward_pool_device = lambda batch, *a, **k: torch.zeros((batch.gather.shape[1], dim))  # type: ignore[method-assign]
    enc.prepare_process, enc.prepare_workers = args.workers > 0, args.workers or None
    workers_ready(enc, args.workers)
    texts = articles(args.articles, args.copies)
    enc.encode_documents(texts)
    best, tokens = float("inf"), 0
    for r in range(args.rounds):
        fresh = [f"{t} Round {r}." for t in texts]
        c0 = time.process_time()
        tokens = sum(d.tokens or 0 for d in enc.encode_documents(fresh))
        best = min(best, time.process_time() - c0)
    return {"side": "calling", "workers": args.workers, "tokens": tokens, "cpu_seconds": best,
            "tokens_per_cpu_second": tokens / best}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("side", choices=["worker", "calling"])
    ap.add_argument("--articles", type=int, default=24)
    ap.add_argument("--copies", type=int, default=None, help="default: 1 (worker), 2 (calling)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--group", type=int, default=4, help="documents per prepare_group call (worker)")
    ap.add_argument("--workers", type=int, default=2, help="preparation workers (calling)")
    args = ap.parse_args()
    args.copies = args.copies or (1 if args.side == "worker" else 2)
    sys.path.insert(0, str(REPO / "benchmarks"))
    result = worker(args) if args.side == "worker" else calling(args)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
