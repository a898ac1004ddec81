"""Build data/long-evidence/long-evidence-v1.json from local copies of the source sets.

Each source is read from a local copy of its public repository: a checkout folder, or a bare
git directory (read at ``--commit``-style ``PATH@COMMIT``, default ``HEAD``) so the exact
commit the file was built from is recorded. Nothing is downloaded here.

    python scripts/build_long_evidence.py --fairytaleqa /path/to/FairytaleQAData \
        --out data/long-evidence/long-evidence-v1.json

Only the sources' evaluation splits are read (FairytaleQA ``val`` and ``test``), so the
source sets' training splits stay free for training.
"""

from __future__ import annotations

import argparse
import csv
import io
import subprocess
import sys
from pathlib import Path

from landmark_rag.datasets.longevidence import (
    EvidenceDocument,
    LongEvidenceSet,
    convert_fairytaleqa_story,
    write_long_evidence,
)

#: a story shorter than this (characters) is not a long document; FairytaleQA's shortest run
#: to a few hundred tokens, which any system reads whole within the smallest budget
MIN_DOC_CHARS = 5000


class Tree:
    """Read files of a repository copy: a checkout folder, or a git directory at a commit."""

    def __init__(self, spec: str) -> None:
        path, _, commit = spec.partition("@")
        self.path = Path(path)
        self.git = not (self.path / ".git").exists() and (self.path / "HEAD").is_file()
        if self.git:
            self.commit = self._run("rev-parse", (commit or "HEAD") + "^{commit}").strip()
        else:
            self.commit = commit or self._checkout_commit()

    def _run(self, *args: str) -> str:
        return subprocess.run(["git", "--git-dir", str(self.path), *args], check=True, capture_output=True,
                              text=True).stdout

    def _checkout_commit(self) -> str:
        try:
            return subprocess.run(["git", "-C", str(self.path), "rev-parse", "HEAD"], check=True,
                                  capture_output=True, text=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return "unknown"

    def list(self, folder: str) -> list[str]:
        if self.git:
            return sorted(self._run("ls-tree", "--name-only", f"{self.commit}:{folder}").split())
        return sorted(p.name for p in (self.path / folder).iterdir())

    def read(self, path: str) -> str:
        if self.git:
            return self._run("show", f"{self.commit}:{path}")
        return (self.path / path).read_text(encoding="utf-8")


def build_fairytaleqa(tree: Tree) -> tuple[list[EvidenceDocument], dict[str, object]]:
    docs: list[EvidenceDocument] = []
    stats = {"stories_read": 0, "stories_too_short": 0, "questions_read": 0, "questions_dropped": 0}
    for split in ("val", "test"):
        folder = f"data-by-train-split/section-stories/{split}"
        for file in tree.list(folder):
            name = file.removesuffix("-story.csv")
            rows = list(csv.DictReader(io.StringIO(tree.read(f"{folder}/{file}"))))
            sections = [(int(r["section"]), r["text"]) for r in rows]
            qrows = list(csv.DictReader(io.StringIO(
                tree.read(f"data-by-train-split/questions/{split}/{name}-questions.csv"))))
            stats["stories_read"] += 1
            stats["questions_read"] += len(qrows)
            doc, dropped = convert_fairytaleqa_story(name, split, sections, qrows)
            if len(doc.text) < MIN_DOC_CHARS:
                stats["stories_too_short"] += 1
                stats["questions_dropped"] += len(qrows)
                continue
            stats["questions_dropped"] += dropped
            if doc.questions:
                docs.append(doc)
    meta: dict[str, object] = {
        "name": "fairytaleqa",
        "repository": "https://github.com/uci-soe/FairytaleQAData",
        "commit": tree.commit,
        "licence": "Apache-2.0 (dataset repository); story texts from Project Gutenberg, public domain",
        "source_splits": ["val", "test"],
        "evidence": "the story sections a question cites (cor_section)",
        "query": "the question",
        **stats,
    }
    return docs, meta


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fairytaleqa", required=True, help="uci-soe/FairytaleQAData copy (folder, or GITDIR[@COMMIT])")
    ap.add_argument("--out", default="data/long-evidence/long-evidence-v1.json")
    args = ap.parse_args(argv)

    documents: list[EvidenceDocument] = []
    sources: list[dict[str, object]] = []
    docs, meta = build_fairytaleqa(Tree(args.fairytaleqa))
    documents += docs
    sources.append(meta)
    data = LongEvidenceSet(documents, sources)
    write_long_evidence(args.out, data)
    print(f"wrote {args.out}: {len(documents)} documents, {data.n_questions} questions", file=sys.stderr)
    for source, by_split in data.counts().items():
        for split, c in sorted(by_split.items()):
            print(f"  {source:12s} {split:10s} {c['documents']:4d} documents {c['questions']:5d} questions",
                  file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
