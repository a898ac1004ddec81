"""Where a model's top hit lands relative to the answer sentence (why Front-k or Surround wins).

Front-3 (hit and its two predecessors) contains the answer when the top hit is the answer
sentence or one of the two AFTER it; Surround 1/1 when it is the answer sentence or one
either side. So the share of top hits at offsets -1 vs +1/+2 decides which expansion covers
more. Per question: rank every sentence of its article (gold-sentence protocol of
``landmark_rag.train.validation``), record ``top hit index - gold index``.

    python benchmarks/hit_offsets.py --model landmark-minilm --articles 13:16
    python benchmarks/hit_offsets.py --model landmark-minilm-lmk --examples 10   # also print hits just before the answer
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from landmark_rag import LandmarkEncoder
from landmark_rag.train import TrainConfig, load_articles

DEFAULT_DATA = Path(__file__).resolve().parents[1] / "data" / "squad-v1.1-dev-part-a.json"


def offsets(encoder: LandmarkEncoder, articles: list, before: list | None = None) -> list[int]:
    """``top hit - answer sentence`` per question; questions whose hit is the sentence just
    before the answer are appended to ``before`` as (question, hit text, answer sentence)."""
    out = []
    for art in articles:  # train.SegmentedArticle: the record and the encoder's sentences of it
        doc = encoder.encode_document(art.article.text, art.article.title, sentences=list(art.sentences))
        scores = encoder.encode_queries([q.question for q in art.article.questions]) @ doc.embeddings.T
        for q, row in zip(art.article.questions, scores, strict=True):
            hit, gold = int(np.argmax(row)), art.answer_span(q)[-1]
            out.append(hit - gold)
            if before is not None and hit == gold - 1:
                before.append((q.question, art.sentences[hit].text, art.sentences[gold].text))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", action="append", required=True, help="model alias or directory (repeatable)")
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--articles", default="13:16", help="article slice (validation: 13:16)")
    ap.add_argument("--pooling", default=None, help="override the model's document pooling (e.g. sentence)")
    ap.add_argument("--examples", type=int, default=0, help="also print N questions whose top hit is just before the answer")
    args = ap.parse_args()
    rows = {}
    for name in args.model:
        kw = {"pooling": args.pooling} if args.pooling else {}
        enc = LandmarkEncoder.from_pretrained(name, **kw)
        _, arts = load_articles(TrainConfig(data=[args.data], train_articles="0:0", val_articles=args.articles), enc)
        before: list = []
        off = offsets(enc, arts, before)
        for question, hit, answer in before[: args.examples]:
            print(f"[{name}] Q: {question}\n  top hit : {hit}\n  answer  : {answer}", file=sys.stderr)
        c, n = Counter(off), len(off)
        rows[name] = {
            "questions": n,
            "hit=gold (R@1)": c[0] / n,
            "gold-2": c[-2] / n,
            "gold-1": c[-1] / n,
            "gold+1": c[1] / n,
            "gold+2": c[2] / n,
            "Front-3 top passage holds gold": (c[0] + c[1] + c[2]) / n,
            "Surround-1/1 top passage holds gold": (c[-1] + c[0] + c[1]) / n,
        }
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
