"""Narrow a prepared ``longspan-v1`` set's spans to the sentences that carry each answer.

``longspan-v1`` trains each FairytaleQA question on the whole story section it cites, so
``z`` (the span's last sentence, the one the position-aware loss weighs most) is the
section's end whatever the question asks. This writes a copy whose span for a question is
the run of sentences inside its cited section(s) that share the most words with its
annotators' answers (and its question), grown to an adjacent sentence only while that adds
answer words not yet covered (at most four sentences): the place the information actually
ends. Summary questions (``local-or-sum`` = ``summary``) and questions no sentence aligns
with are left out. The runs that use it are in docs/experiments/longspan.md.

    python scripts/align_longspan.py PREPARED_DIR RAW_DIR OUT_DIR

PREPARED_DIR: the folder `landmark-rag train --prepare data/training/longspan-v1.json` wrote
(its ``documents.jsonl.gz``); RAW_DIR: the FairytaleQA copy it read
(``.../fairytaleqa-train``, with ``questions/train/*-questions.csv``). OUT_DIR gets a
``documents.jsonl.gz`` in the same format, to be named in a training config's ``data``.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from landmark_rag.segment.segment import sentence_spans

_STOP = frozenset({
    "a", "an", "the", "of", "to", "in", "on", "and", "or", "but", "is", "was", "were", "are",
    "be", "been", "he", "she", "it", "they", "his", "her", "their", "its", "them", "him", "i",
    "you", "we", "that", "this", "what", "who", "whom", "why", "how", "when", "where", "which",
    "did", "do", "does", "had", "has", "have", "for", "with", "at", "by", "from", "as", "into",
    "not", "no", "so", "if", "then", "than", "there", "here", "up", "out", "about",
})
_ANSWERS = ("answer1", "answer2", "answer3", "answer4", "answer5", "answer6")


def content_words(text: str) -> set[str]:
    """Lower-cased words of ``text`` without function words: what an answer and a sentence share."""
    return {w for w in re.findall(r"[a-z0-9']+", text.lower()) if w not in _STOP}


def aligned_span(
    sentences: list[tuple[int, int]], inside: list[int], words: Callable[[int], set[str]],
    answer: set[str], question: set[str], *, max_sentences: int = 4,
) -> list[int] | None:
    """Indices (into ``sentences``) of the aligned run, or None when no sentence of ``inside``
    shares enough with the answer: the best sentence must score 0.5, where a sentence scores
    twice its share of the answer's words plus its share of the question's."""

    def score(i: int) -> float:
        w = words(i)
        return 2 * len(answer & w) / len(answer) + len(question & w) / max(len(question), 1)

    best = max(inside, key=score)
    if score(best) < 0.5:
        return None
    span, covered = [best], answer & words(best)
    while len(span) < max_sentences:
        gains = {i: len((answer & words(i)) - covered) for i in (span[0] - 1, span[-1] + 1) if i in inside}
        if not gains or max(gains.values()) == 0:
            break
        nxt = max(gains, key=lambda i: gains[i])
        covered |= answer & words(nxt)
        span = sorted([*span, nxt])
    return span


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prepared", type=Path)
    parser.add_argument("raw", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    rows: dict[str, dict[str, str]] = {}
    for f in sorted((args.raw / "questions" / "train").glob("*-questions.csv")):
        story = f.name[: -len("-questions.csv")]
        with f.open(encoding="utf-8", newline="") as fh:
            rows.update({f"{story}:{r['question_id']}": r for r in csv.DictReader(fh)})
    stats: Counter[str] = Counter()
    lengths: Counter[int] = Counter()
    args.out.mkdir(parents=True, exist_ok=True)
    with gzip.open(args.prepared / "documents.jsonl.gz", "rt", encoding="utf-8") as src, gzip.open(
        args.out / "documents.jsonl.gz", "wt", encoding="utf-8"
    ) as dst:
        for line in src:
            doc = json.loads(line)
            text = doc["text"]
            sents = [(s.start, s.end) for s in sentence_spans(text)]
            cache: dict[int, set[str]] = {}

            def words(i: int, text: str = text, sents: list[tuple[int, int]] = sents,
                      cache: dict[int, set[str]] = cache) -> set[str]:
                if i not in cache:
                    cache[i] = content_words(text[sents[i][0] : sents[i][1]])
                return cache[i]

            kept = []
            for q in doc["questions"]:
                row = rows.get(q["id"])
                if row is None or row["local-or-sum"].strip() != "local":
                    stats["summary or unknown, left out"] += 1
                    continue
                lo, hi = q["start"], q["start"] + len(q["answer"])
                inside = [i for i, (s, e) in enumerate(sents) if s < hi and e > lo]
                answer = set().union(*(content_words(row[k]) for k in _ANSWERS if (row.get(k) or "").strip()))
                span = aligned_span(sents, inside, words, answer, content_words(row["question"])) if answer else None
                if span is None:
                    stats["not aligned, left out"] += 1
                    continue
                start, end = sents[span[0]][0], sents[span[-1]][1]
                kept.append({**q, "answer": text[start:end], "start": start})
                stats["kept"] += 1
                lengths[len(span)] += 1
            if kept:
                dst.write(json.dumps({**doc, "questions": kept}, ensure_ascii=False) + "\n")
    print(json.dumps({"questions": dict(stats), "span_sentences": dict(sorted(lengths.items()))}))


if __name__ == "__main__":
    main()
