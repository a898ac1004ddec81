"""The needle guard: a sentence planted in a long unrelated text must still rank first.

In-context vectors carry their surroundings; the risk is that a sentence unlike its context
is pulled towards the topic around it and lost. Each needle (a made-up fact) is planted at
several seeded positions in haystacks of 2k to 40k tokens made of held-out Wikipedia articles
(articles 16-23 of data/squad-v1.1-dev-part-a.json: text no shipped model was trained on),
the haystack is encoded as ONE document, and the needle's question is ranked against every
sentence of it (dense vectors only, no BM25 help). Printed: for each model and haystack size,
how often the needle is the top hit, and its worst rank.

    python benchmarks/needle.py --model landmark-minilm --model landmark-minilm-lmk --model landmark-mpnet
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "squad-v1.1-dev-part-a.json"

#: (planted sentence, question): facts that appear nowhere in the haystack.
NEEDLES = [
    ("The Brandt observatory first measured atmospheric oxygen on the summit of Mount Kessel in 1931.",
     "In what year was atmospheric oxygen first measured on Mount Kessel?"),
    ("Aunt Mirela's recipe for plum dumplings calls for exactly eleven grams of cinnamon.",
     "How much cinnamon goes into Aunt Mirela's plum dumplings?"),
    ("The access code for the west archive of the Halvorsen library is 7429.",
     "What is the access code of the Halvorsen library's west archive?"),
    ("Captain Ilse Moravec sailed the research ship Petrel around Cape Horn with a crew of nine.",
     "How many crew members sailed the Petrel around Cape Horn?"),
]
SIZES = (2_000, 5_000, 10_000, 20_000, 40_000)


def haystack_paragraphs() -> list[str]:
    from landmark_rag.datasets import read_squad

    return [a.text[s:e] for a in read_squad(DATA)[16:24] for s, e in a.paragraphs]


def build(paragraphs: list[str], tokens: int, needle: str, rng: random.Random, count) -> tuple[str, int]:
    """A haystack of about ``tokens`` tokens with ``needle`` as its own sentence at a random
    paragraph boundary; returns the text and the needle's character offset."""
    paras, total, i = [], 0, rng.randrange(len(paragraphs))
    while total < tokens:
        p = paragraphs[i % len(paragraphs)]
        paras.append(p)
        total += count(p)
        i += 1
    at = rng.randrange(len(paras) + 1)
    before = "\n\n".join(paras[:at])
    text = "\n\n".join([*paras[:at], needle, *paras[at:]])
    return text, len(before) + (2 if before else 0)


def needle_rank(encoder, text: str, offset: int, question: str) -> int:
    doc = encoder.encode_document(text, "haystack")
    hit = next(i for i, s in enumerate(doc.sentences) if s.start <= offset < s.end)
    scores = doc.embeddings @ encoder.encode_query(question)
    return int((scores > scores[hit]).sum()) + 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", action="append", help="model alias or directory (repeatable; default: the default)")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="haystack sizes in tokens")
    ap.add_argument("--positions", type=int, default=3, help="seeded positions per needle and size")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    from landmark_rag import LandmarkEncoder

    paragraphs = haystack_paragraphs()
    sizes = [int(s) for s in args.sizes.split(",")]
    print("| model | haystack tokens | needle first | worst rank |")
    print("|---|---:|---:|---:|")
    failed = False
    for name in args.model or [None]:
        encoder = LandmarkEncoder.from_pretrained(name) if name else LandmarkEncoder.from_pretrained()
        for size in sizes:
            rng = random.Random(args.seed * 1000 + size)
            ranks = []
            for needle, question in NEEDLES:
                for _ in range(args.positions):
                    text, offset = build(paragraphs, size, needle, rng, encoder.count_tokens)
                    ranks.append(needle_rank(encoder, text, offset, question))
            first = float(np.mean([r == 1 for r in ranks]))
            failed |= first < 1.0
            print(f"| {encoder.config.model_name} | {size:,} | {first:.0%} ({len(ranks)}) | {max(ranks)} |", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
