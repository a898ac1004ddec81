"""Write ``encoder_reference.npz``: sentence and query vectors of fixed inputs, fp32 on CPU.

Run with the code whose vectors are the reference on ``PYTHONPATH`` (it was made with
commit 4e05c87, the encoder before its host pipeline was rewritten):

    PYTHONPATH=<checkout>/src python tests/data/make_encoder_reference.py tests/data/encoder_reference.npz

``tests/encode/test_reference_vectors.py`` encodes the same inputs with the current code
and compares (max abs difference 1e-5).
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

#: (name, model, from_pretrained overrides, add a [LMK] token)
CASES = [
    ("minilm_landmark_w64", "all-MiniLM-L6-v2", {"pooling": "landmark", "max_length": 64}, False),
    ("minilm_mean", "all-MiniLM-L6-v2", {"pooling": "mean"}, False),
    ("minilm_sentence", "all-MiniLM-L6-v2", {"pooling": "sentence"}, False),
    ("minilm_isolated_w96", "all-MiniLM-L6-v2", {"pooling": "landmark", "max_length": 96,
                                                   "landmark_attention": "isolated"}, True),
    ("smollm2_landmark_w128", "SmolLM2-135M-Instruct", {"pooling": "landmark", "max_length": 128}, False),
]

QUERIES = ["Who isolated oxygen?", "What is a prime number?", "When did the Black Death reach Europe?"]


def documents() -> list[str]:
    data = json.loads((HERE / "squad_excerpt.json").read_text(encoding="utf-8"))["data"]
    docs = ["\n\n".join(p["context"] for p in article["paragraphs"])[:1800] for article in data]
    # one sentence far longer than a 64-token window (cut by segmentation), and an empty document
    docs.append("Short opener. " + " ".join(f"word{i} and more" for i in range(90)) + ". Closing line.")
    docs.append("   ")
    return docs


def main(out: str) -> None:
    from landmark_rag.encode import LandmarkEncoder

    warnings.simplefilter("ignore")
    arrays: dict[str, np.ndarray] = {}
    docs = documents()
    for name, model, overrides, lmk in CASES:
        enc = LandmarkEncoder.from_pretrained(model, device="cpu", dtype="float32", **overrides)
        if lmk:
            enc.add_landmark_token("[LMK]")
        encoded = enc.encode_documents(docs, batch_size=4)
        arrays[f"{name}/vectors"] = np.concatenate([d.embeddings for d in encoded])
        arrays[f"{name}/spans"] = np.array(
            [(i, s.start, s.end) for i, d in enumerate(encoded) for s in d.sentences], dtype=np.int64
        )
        arrays[f"{name}/queries"] = enc.encode_queries(QUERIES)
    np.savez_compressed(out, **arrays)


if __name__ == "__main__":
    main(sys.argv[1])
