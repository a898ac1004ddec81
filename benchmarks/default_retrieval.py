"""Gold-sentence retrieval of a plain model per sentence and of untrained in-context pooling.

For every question of the SQuAD file, rank the sentences of the question's own article
(one long document: paragraphs joined by a blank line) and check where the gold sentence
lands; the gold sentence is the one that holds the first answer's ``answer_start``.
Configurations, all on all-MiniLM-L6-v2 and all through ``LandmarkEncoder``:

- ``sentence`` (what a plain model without ``landmark_config.json`` gets): each sentence
  embedded alone, mean-pooled;
- ``mean``: one pass over the whole document (512-token windows), mean of the sentence's
  own tokens in context ("late chunking"), queries mean-pooled;
- ``landmark``: the hidden state at a landmark ([SEP]) after each sentence, queries
  ``query + [SEP]`` - the paper's scheme, but with a model never trained for it;
- ``sentence-regex`` (``--regex``): the default with a naive regex splitter, the setup of
  the figure in data/README.md, to show how the splitter moves the number.

This is why an untrained model is used with ``sentence`` pooling: untrained in-context
pooling is far worse. ``--model`` evaluates another model (e.g. a trained landmark model).

Run:  python benchmarks/default_retrieval.py            (all 24 articles, ~15 min on 2 busy cores)
      python benchmarks/default_retrieval.py --quick    (4 articles)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from landmark_rag import LandmarkEncoder

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO / "data" / "squad-v1.1-dev-part-a.json"


@dataclass
class Article:
    title: str
    text: str
    questions: list[str]
    answer_starts: list[int]  # offsets in ``text``


def load_articles(path: Path, limit: int | None = None) -> list[Article]:
    data = json.loads(path.read_text(encoding="utf-8"))["data"][:limit]
    out = []
    for art in data:
        parts, questions, starts, offset = [], [], [], 0
        for para in art["paragraphs"]:
            for qa in para["qas"]:
                questions.append(qa["question"])
                starts.append(offset + qa["answers"][0]["answer_start"])
            parts.append(para["context"])
            offset += len(para["context"]) + 2
        out.append(Article(art["title"], "\n\n".join(parts), questions, starts))
    return out


def regex_spans(text: str) -> list[tuple[int, int]]:
    """A naive splitter: after . ! ? followed by whitespace and a capital, and at blank lines."""
    spans, start = [], 0
    for m in re.finditer(r"(?<=[.!?])\s+(?=[A-Z\"'(])|\n\s*\n", text):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(text)))
    return spans


def gold_index(sentences, offset: int) -> int:
    """The sentence holding ``offset`` (or the next one, if it falls between sentences)."""
    for i, s in enumerate(sentences):
        if offset < s.end:
            return i
    return len(sentences) - 1


def evaluate(
    enc: LandmarkEncoder, articles: list[Article], segmenter=None, query_encoder: LandmarkEncoder | None = None
) -> dict[str, float]:
    t0 = time.perf_counter()
    docs = enc.encode_documents([a.text for a in articles], show_progress=True, segmenter=segmenter)
    t_docs = time.perf_counter() - t0
    questions = [q for a in articles for q in a.questions]
    t0 = time.perf_counter()
    qvecs = (query_encoder or enc).encode_queries(questions, show_progress=True)
    t_q = time.perf_counter() - t0
    ranks = []
    k = 0
    for art, doc in zip(articles, docs, strict=True):
        q = qvecs[k : k + len(art.questions)]
        k += len(art.questions)
        scores = q @ doc.embeddings.T
        for row, start in zip(scores, art.answer_starts, strict=True):
            gold = gold_index(doc.sentences, start)
            ranks.append(int((row > row[gold]).sum()))  # 0 = ranked first
    r = np.asarray(ranks)
    return {
        "questions": len(r),
        "sentences": sum(len(d) for d in docs),
        "R@1": float((r < 1).mean()),
        "R@5": float((r < 5).mean()),
        "MRR": float((1.0 / (r + 1)).mean()),
        "docs_s": t_docs,
        "queries_s": t_q,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--quick", action="store_true", help="first 4 articles only")
    ap.add_argument("--articles", type=int, default=None, help="first N articles")
    ap.add_argument("--poolings", default="sentence,mean,landmark")
    ap.add_argument("--regex", action="store_true", help="also run the default with a regex splitter")
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    args = ap.parse_args()
    limit = 4 if args.quick else args.articles
    articles = load_articles(args.data, limit)
    print(f"{len(articles)} articles, {sum(len(a.questions) for a in articles)} questions, "
          f"{sum(len(a.text) for a in articles):,} characters; model {args.model}; "
          f"torch threads {__import__('torch').get_num_threads()}, load average {os.getloadavg()[0]:.1f}")
    rows = []
    runs = [(p, None) for p in args.poolings.split(",") if p]
    if args.regex:
        runs.append(("sentence", regex_spans))
    for pooling, segmenter in runs:
        overrides = {} if pooling == "sentence" else {"pooling": pooling, "query_pooling": pooling}
        enc = LandmarkEncoder.from_pretrained(args.model, device="cpu", **overrides)
        name = pooling + ("-regex" if segmenter else "")
        res = evaluate(enc, articles, segmenter)
        rows.append((name, res))
        print(f"  {name}: R@1 {res['R@1']:.3f}  R@5 {res['R@5']:.3f}  ({res['docs_s']:.0f} s documents)", flush=True)
    print()
    print("| pooling | sentences | questions | R@1 | R@5 | MRR | encode docs (s) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, r in rows:
        print(f"| {name} | {r['sentences']} | {r['questions']} | {r['R@1']:.3f} | {r['R@5']:.3f} | "
              f"{r['MRR']:.3f} | {r['docs_s']:.0f} |")


if __name__ == "__main__":
    main()
