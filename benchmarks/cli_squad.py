"""Acceptance check of the CLI on SQuAD: is the answer inside the top passage?

Writes every article of a SQuAD-format file as one ``.txt`` file (paragraphs joined by a
blank line), runs ``landmark-rag index`` on that folder once, then one
``landmark-rag query --questions FILE --json -k K`` over a seeded sample of questions, all
as subprocesses of the installed console script: exactly what a user would run. Prints the
fraction of questions whose answer span lies inside the top passage (and inside any of the
K passages), plus timings.

    python benchmarks/cli_squad.py                      # all articles, 400 sampled questions
    python benchmarks/cli_squad.py --questions 0        # every question
    python benchmarks/cli_squad.py --strategy adaptive --k 3

Data: data/squad-v1.1-dev-part-a.json (CC BY-SA 4.0).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO / "data" / "squad-v1.1-dev-part-a.json"


@dataclass
class Question:
    text: str
    file: str  # document id: the article's file name
    spans: list[tuple[int, int]]  # every annotated answer, as offsets in the article file
    answers: list[str]


def write_articles(data: Path, folder: Path, limit: int | None) -> list[list[Question]]:
    """One file per article; answer offsets moved into the joined document. Questions per article."""
    articles = json.loads(data.read_text(encoding="utf-8"))["data"][:limit]
    per_article = []
    for art in articles:
        questions: list[Question] = []
        name = f"{art['title']}.txt"
        parts, offset = [], 0
        for para in art["paragraphs"]:
            for qa in para["qas"]:
                spans = [(offset + a["answer_start"], offset + a["answer_start"] + len(a["text"])) for a in qa["answers"]]
                questions.append(Question(qa["question"].strip(), name, spans, [a["text"] for a in qa["answers"]]))
            parts.append(para["context"])
            offset += len(para["context"]) + 2
        text = "\n\n".join(parts)
        (folder / name).write_text(text, encoding="utf-8")
        for q in questions:
            assert all(text[s:e] == a for (s, e), a in zip(q.spans, q.answers, strict=True))
        per_article.append(questions)
    return per_article


def cli() -> list[str]:
    exe = Path(sys.executable).parent / "landmark-rag"
    return [str(exe)] if exe.exists() else [sys.executable, "-c", "from landmark_rag.cli import main; main()"]


def run(args: list[str]) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.perf_counter()
    proc = subprocess.run([*cli(), *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"landmark-rag {' '.join(args[:1])} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc, time.perf_counter() - t0


def contains(passage: dict, q: Question) -> bool:
    """The passage is from the question's article and covers one annotated answer span."""
    return passage["doc_id"] == q.file and any(passage["start"] <= s and e <= passage["end"] for s, e in q.spans)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--articles", type=int, default=None, help="only the first N articles")
    ap.add_argument("--questions", type=int, default=400, help="sampled questions (0: all)")
    ap.add_argument(
        "--question-articles", default=None, metavar="A:B",
        help="ask only questions of articles A..B-1 (all articles are still indexed), e.g. 16:24 for "
        "the articles the packaged landmark-minilm never saw in training or validation",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--strategy", default="front")
    ap.add_argument("--model", default=None, help="index with this model (default: the package's)")
    ap.add_argument("--keep", type=Path, default=None, help="keep the files and store in this folder")
    args = ap.parse_args()

    work = args.keep or Path(tempfile.mkdtemp(prefix="cli-squad-"))
    docs, db = work / "articles", work / "db"
    docs.mkdir(parents=True, exist_ok=True)
    try:
        per_article = write_articles(args.data, docs, args.articles)
        if args.question_articles:
            a, b = (int(x) if x else None for x in args.question_articles.split(":"))
            per_article = per_article[a:b]
        questions = [q for qs in per_article for q in qs]
        if args.questions and args.questions < len(questions):
            questions = random.Random(args.seed).sample(questions, args.questions)
        qfile = work / "questions.txt"
        qfile.write_text("\n".join(q.text for q in questions) + "\n", encoding="utf-8")

        index_args = ["index", str(docs), "--db", str(db), "--quiet"]
        if args.model:
            index_args += ["--model", args.model]
        index_proc, index_s = run(index_args)
        query_proc, query_s = run(
            ["query", "--questions", str(qfile), "--db", str(db), "--json", "-k", str(args.k), "--strategy", args.strategy]
        )
        results = json.loads(query_proc.stdout)
        assert [r["question"] for r in results] == [q.text for q in questions]
        top = sum(bool(r["passages"]) and contains(r["passages"][0], q) for r, q in zip(results, questions, strict=True))
        any_k = sum(any(contains(p, q) for p in r["passages"]) for r, q in zip(results, questions, strict=True))
        top_text = sum(
            bool(r["passages"]) and any(a in r["passages"][0]["text"] for a in q.answers)
            for r, q in zip(results, questions, strict=True)
        )
        chars = [len(r["passages"][0]["text"]) for r in results if r["passages"]]
        n = len(questions)
        n_articles = len(list(docs.iterdir()))
        print(f"data: {args.data.name}, {n_articles} articles indexed, {n} questions (seed {args.seed}"
              + (f", from articles {args.question_articles})" if args.question_articles else ")"))
        print(f"index: {index_s:.1f} s wall (one process, model load included)")
        for line in index_proc.stdout.strip().splitlines():
            print("  " + line.rstrip())
        print(f"query: {query_s:.1f} s wall for {n} questions (one process, model load included)")
        print(f"k={args.k}, strategy={args.strategy}")
        print(f"answer span inside the top passage:    {top / n:.3f} ({top}/{n})")
        print(f"answer span inside any of the {args.k} passages: {any_k / n:.3f} ({any_k}/{n})")
        print(f"answer text inside the top passage:    {top_text / n:.3f}")
        print(f"top passage length: mean {sum(chars) / max(1, len(chars)):.0f} characters")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
