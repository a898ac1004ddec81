"""Boundary expansion strategies: how often the answer is inside the passages, at what cost.

For every SQuAD question the top-``k`` sentence hits (exact inner-product search over all
sentences of all articles) are expanded with each strategy (``landmark_rag.expand``, the
same code the LlamaIndex/LangChain adapters and the CLI use) and merged into passages. Two
figures per strategy:

- answer coverage: the fraction of questions whose gold answer span lies entirely inside one
  of the passages (of the right article);
- tokens: the passages' total length in model tokens per question (what they cost in a
  prompt), and the number of passages.

Run (CPU; about a minute per article on 2 busy cores with the default model):

    python benchmarks/expansion_strategies.py --articles 6
    python benchmarks/expansion_strategies.py --articles 6 --pooling mean   # in-context vectors
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from landmark_rag import LandmarkEncoder
from landmark_rag.expand import Adaptive, Front, InMemorySource, Strategy, Surround, expand_hits
from landmark_rag.types import Hit

DEFAULT_DATA = Path(__file__).resolve().parents[1] / "data" / "squad-v1.1-dev-part-a.json"

STRATEGIES: dict[str, Strategy] = {
    "hit only (Front k=1)": Front(k=1),
    "Front k=2": Front(k=2),
    "Front k=3 (default)": Front(k=3),
    "Front k=5": Front(k=5),
    "Surround 1/1": Surround(before=1, after=1),
    "Surround 0/2 (after only)": Surround(before=0, after=2),
    "Adaptive 128 tok": Adaptive(max_tokens=128),
    "Adaptive 256 tok (default)": Adaptive(max_tokens=256),
}


@dataclass
class Question:
    text: str
    doc_id: str
    spans: list[tuple[int, int]]  # gold answer spans in the article document


def load(path: Path, articles: int | None) -> tuple[list[str], list[str], list[Question]]:
    """Articles as documents (paragraphs joined by a blank line) and their questions."""
    data = json.loads(path.read_text(encoding="utf-8"))["data"][:articles]
    ids, texts, questions = [], [], []
    for art in data:
        doc_id, offset, parts = art["title"], 0, []
        for para in art["paragraphs"]:
            for qa in para["qas"]:
                spans = sorted(
                    {(offset + a["answer_start"], offset + a["answer_start"] + len(a["text"])) for a in qa["answers"]}
                )
                questions.append(Question(qa["question"], doc_id, spans))
            parts.append(para["context"])
            offset += len(para["context"]) + 2
        ids.append(doc_id)
        texts.append("\n\n".join(parts))
    return ids, texts, questions


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--articles", type=int, default=None, help="first N articles (default: all)")
    ap.add_argument("--model", default=None, help="model alias or path (default: the package default)")
    ap.add_argument("--pooling", default=None, choices=["landmark", "mean", "sentence"])
    ap.add_argument("--top-k", type=int, default=5, help="sentence hits per question")
    args = ap.parse_args()

    overrides = {"pooling": args.pooling} if args.pooling else {}
    encoder = LandmarkEncoder.from_pretrained(args.model, device="cpu", **overrides)
    ids, texts, questions = load(args.data, args.articles)
    t0 = time.perf_counter()
    docs = encoder.encode_documents(texts, ids, show_progress=True)
    t_docs = time.perf_counter() - t0
    source = InMemorySource({d.doc_id: d.sentences for d in docs}, {d.doc_id: d.embeddings for d in docs})
    table = [s for d in docs for s in d.sentences]
    matrix = np.concatenate([d.embeddings for d in docs])
    queries = encoder.encode_queries([q.text for q in questions], show_progress=True)

    @cache
    def count(text: str) -> int:
        return encoder.count_tokens(text)

    covered = {name: 0 for name in STRATEGIES}
    tokens = {name: 0 for name in STRATEGIES}
    n_passages = {name: 0 for name in STRATEGIES}
    for q, qv in zip(tqdm(questions, desc="expanding", unit="q"), queries, strict=True):
        scores = matrix @ qv
        top = np.argsort(-scores)[: args.top_k]
        hits = [Hit(table[i], float(scores[i])) for i in top]
        for name, strat in STRATEGIES.items():
            passages = expand_hits(hits, source, strat, query_vector=qv, count_tokens=count)
            n_passages[name] += len(passages)
            tokens[name] += sum(count(p.text) for p in passages)
            covered[name] += any(
                p.doc_id == q.doc_id and any(p.start <= a and b <= p.end for a, b in q.spans) for p in passages
            )

    n = len(questions)
    print(
        f"\nmodel {encoder.model_name} (pooling {encoder.config.pooling}), {len(ids)} articles, "
        f"{len(table)} sentences, {n} questions, top-{args.top_k} sentence hits; documents encoded in {t_docs:.0f}s\n"
    )
    print("| strategy | answer inside passages | tokens / question | passages / question | answers per 1k tokens |")
    print("|---|---:|---:|---:|---:|")
    for name in STRATEGIES:
        cov, tok = covered[name] / n, tokens[name] / n
        print(f"| {name} | {cov:.3f} | {tok:.0f} | {n_passages[name] / n:.2f} | {1000 * cov / tok:.2f} |")


if __name__ == "__main__":
    main()
