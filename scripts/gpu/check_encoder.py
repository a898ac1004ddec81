"""The encoder's CUDA path against its CPU fp32 path, on a GPU host
(scripts/gpu/README.md).

Encodes SQuAD articles (and queries) with all-MiniLM-L6-v2 on CUDA with every default (bf16
weights, SDPA, batches sized from free memory, the producer thread, pinned copies, pooling on
the device) and on the CPU in fp32, and checks that the same sentences come out with nearly
the same vectors (cosine per sentence); prints the CUDA run's tokens/s and ``batch_tokens``.

    python scripts/gpu/check_encoder.py [--articles 24] [--model all-MiniLM-L6-v2]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import landmark_rag  # noqa: F401 - before torch: OpenMP's passive wait is set before torch loads

REPO = Path(__file__).resolve().parents[2]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--articles", type=int, default=24)
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--pooling", default="mean")
    args = ap.parse_args()
    import torch

    from landmark_rag.encode import LandmarkEncoder

    data = json.loads((REPO / "data" / "squad-v1.1-dev-part-a.json").read_text(encoding="utf-8"))["data"]
    texts = ["\n\n".join(p["context"] for p in a["paragraphs"]) for a in data[: args.articles]]
    queries = [q["question"] for a in data[:2] for p in a["paragraphs"] for q in p["qas"]][:64]

    gpu = LandmarkEncoder.from_pretrained(args.model, device="cuda", pooling=args.pooling)
    cpu = LandmarkEncoder.from_pretrained(args.model, device="cpu", dtype="float32", pooling=args.pooling)
    print("cuda dtype", next(gpu.model.parameters()).dtype, "attention", gpu.model.config._attn_implementation,
          "auto batch_tokens", gpu.auto_batch_tokens())
    gpu.encode_documents(texts[:2])  # warm-up
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    a = gpu.encode_documents(texts)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    tokens = sum(d.tokens for d in a)
    print(f"cuda: {len(texts)} documents, {tokens:,} tokens in {seconds:.2f} s: {tokens / seconds:,.0f} tokens/s")
    b = cpu.encode_documents(texts)
    assert [[(s.start, s.end) for s in d.sentences] for d in a] == [[(s.start, s.end) for s in d.sentences] for d in b]
    cos = np.concatenate([(x.embeddings * y.embeddings).sum(1) for x, y in zip(a, b, strict=True)])
    print(f"sentences {len(cos)}, cosine cuda bf16 vs cpu fp32: min {cos.min():.5f} mean {cos.mean():.5f}")
    qa, qb = gpu.encode_queries(queries), cpu.encode_queries(queries)
    qcos = (qa * qb).sum(1)
    print(f"queries {len(qcos)}, cosine: min {qcos.min():.5f}")
    assert cos.min() > 0.99 and qcos.min() > 0.99, "CUDA vectors differ from the CPU's"
    print("OK")


if __name__ == "__main__":
    main()
