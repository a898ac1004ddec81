"""Build the long-evidence files under data/long-evidence/ from local copies of the source sets.

Each source is read from a local copy of its public repository: a checkout folder, or a bare
git directory (read at ``--commit``-style ``PATH@COMMIT``, default ``HEAD``) so the exact
commit the file was built from is recorded. Nothing is downloaded here. Each named source goes
into the one ``--out`` file; the committed files hold one source each:

    python scripts/build_long_evidence.py --fairytaleqa /path/to/FairytaleQAData \
        --out data/long-evidence/long-evidence-v1.json
    python scripts/build_long_evidence.py --loogle /path/to/LooGLE \
        --out data/long-evidence/loogle-v1.json

Only the sources' evaluation splits are read (FairytaleQA ``val`` and ``test``; LooGLE has a
test set only), so the source sets' training splits stay free for training.
"""

from __future__ import annotations

import argparse
import ast
import csv
import io
import json
import re
import subprocess
import sys
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from landmark_rag.datasets.longevidence import (
    MIN_EVIDENCE_CHARS,
    EvidenceDocument,
    EvidenceQuestion,
    LongEvidenceSet,
    assign_split,
    convert_fairytaleqa_story,
    merge_spans,
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


# --- LooGLE ------------------------------------------------------------------------------

#: the LooGLE repository's test sample: long English Wikipedia articles, each line a document
#: with its question list (``S``: the annotators' evidence sentences)
LOOGLE_FILES = (
    ("longdep", "LooGLE-testdata/longdep_qa.jsonl"),
    ("shortdep", "LooGLE-testdata/shortdep_qa.jsonl"),
)
#: documents left out by title, and why: biomedical, legal and meeting texts are kept for an
#: outside transfer check, and an article that is mostly a court case's appeals is too near
#: the legal domain to be sure it stays out of it
LOOGLE_EXCLUDED = {
    "Execution of Nagaenthran K. Dharmalingam": "a court case and its appeals (near the reserved legal domain)",
}
#: an evidence piece shorter than this (letters and digits) cannot be placed unambiguously
MIN_PIECE_CHARS = 15

# Wikipedia citation marks ([12], [a]): the annotators copied some and left out others
_CITATION = re.compile(r"\[(?:\d+|[a-z])\]")
# an elision ("...") or an item number ("2." at the start of a line) inside an evidence string:
# the text on either side is two separate quotations
_PIECE_BREAK = re.compile(r"\.{3,}|…|(?:^|\n)\s*\d+\.(?!\d)\s*")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"“(])")
_OPENERS = "\"'(“‘«"
_CLOSERS = ".!?\"')”’»"


def _fold(text: str, *, wildcards: bool = False) -> tuple[str, list[int]]:
    """``text`` reduced to its lower-cased letters and digits, and each kept character's offset.

    The annotators' evidence strings differ from the article in whitespace, punctuation,
    case and citation marks, never (when a quotation is faithful) in its letters and digits,
    so matching on those alone finds a quotation exactly where it is. With ``wildcards`` a
    ``?`` between two letters is kept: the sample's encoding turned some letters (ğ, ı, ş, ï) of
    the evidence strings into ``?``, and it matches any one character.
    """
    skip: set[int] = set()
    for m in _CITATION.finditer(text):
        skip.update(range(m.start(), m.end()))
    chars: list[str] = []
    pos: list[int] = []
    for i, c in enumerate(text):
        if i in skip:
            continue
        if wildcards and c == "?" and 0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum():
            chars.append("?")
            pos.append(i)
            continue
        for f in unicodedata.normalize("NFKC", c).casefold():
            if f.isalnum():
                chars.append(f)
                pos.append(i)
    return "".join(chars), pos


class FoldedText:
    """A document prepared for :meth:`find`: quotations located by letters and digits."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.folded, self.pos = _fold(text)

    def find(self, quotation: str, *, near: int = 0) -> tuple[int, int] | None:
        """The character span of ``quotation`` (first at or after ``near``, else the first
        anywhere), widened to its opening and closing punctuation; ``None`` when its letters
        and digits are not in the text in that order, or are too few to place."""
        q, _ = _fold(quotation, wildcards=True)
        if len(q) < MIN_PIECE_CHARS:
            return None
        pattern = re.compile(re.escape(q).replace(r"\?", "."))
        start_at = next((i for i, p in enumerate(self.pos) if p >= near), len(self.pos))
        m = pattern.search(self.folded, start_at) or pattern.search(self.folded)
        if m is None:
            return None
        s, e = self.pos[m.start()], self.pos[m.end() - 1] + 1
        while s > 0 and self.text[s - 1] in _OPENERS:
            s -= 1
        while e < len(self.text) and self.text[e] in _CLOSERS:
            e += 1
        return s, e


def _evidence_pieces(evidence: str | Sequence[str]) -> list[str]:
    items = [evidence] if isinstance(evidence, str) else list(evidence)
    return [p.strip() for item in items for p in _PIECE_BREAK.split(str(item)) if p.strip()]


def locate_loogle_evidence(doc: FoldedText, evidence: str | Sequence[str]) -> tuple[tuple[int, int], ...] | None:
    """The spans of a LooGLE question's evidence sentences in its document, or ``None`` when
    one of them is not there.

    A piece is located whole, else sentence by sentence; a piece (or sentence) too short to
    place is passed over. One sentence that cannot be found drops the whole question: gold
    evidence with a part missing would count a reader who found that part as wrong.
    """
    spans: list[tuple[int, int]] = []
    near = 0
    for piece in _evidence_pieces(evidence):
        if len(_fold(piece, wildcards=True)[0]) < MIN_PIECE_CHARS:
            continue
        found = doc.find(piece, near=near)
        if found is not None:
            spans.append(found)
            near = found[1]
            continue
        for sentence in _SENTENCE_BREAK.split(piece):
            if len(_fold(sentence, wildcards=True)[0]) < MIN_PIECE_CHARS:
                continue
            found = doc.find(sentence, near=near)
            if found is None:
                return None
            spans.append(found)
            near = found[1]
    return merge_spans(spans) if spans else None


def loogle_doc_id(title: str) -> str:
    """``loogle:`` and the title in lower-case ASCII, accents dropped, other marks as ``-``."""
    bare = "".join(c for c in unicodedata.normalize("NFKD", title) if not unicodedata.combining(c))
    return "loogle:" + re.sub(r"[^a-z0-9]+", "-", bare.lower()).strip("-")


def convert_loogle_document(
    title: str,
    text: str,
    qa_by_task: Sequence[tuple[str, Sequence[dict[str, Any]]]],
    *,
    min_evidence_chars: int = MIN_EVIDENCE_CHARS,
) -> tuple[EvidenceDocument, dict[str, int]]:
    """One LooGLE article with the questions of each task (``longdep``, ``shortdep``), and
    how many questions were dropped and why (``unlocated``: an evidence sentence not in the
    text; ``short``: evidence under ``min_evidence_chars``)."""
    doc_id = loogle_doc_id(title)
    folded = FoldedText(text)
    kept: list[EvidenceQuestion] = []
    dropped = {"unlocated": 0, "short": 0}
    for task, pairs in qa_by_task:
        for i, pair in enumerate(pairs):
            spans = locate_loogle_evidence(folded, pair.get("S") or [])
            if spans is None:
                dropped["unlocated"] += 1
                continue
            answer = str(pair.get("A") or "").strip()
            q = EvidenceQuestion(f"{doc_id}:{task}-{i}", str(pair["Q"]).strip(), spans, (answer,) if answer else ())
            if q.evidence_chars < min_evidence_chars:
                dropped["short"] += 1
                continue
            kept.append(q)
    doc = EvidenceDocument(doc_id, "loogle", "test", title, text, assign_split(doc_id), tuple(kept))
    return doc, dropped


def build_loogle(tree: Tree) -> tuple[list[EvidenceDocument], dict[str, object]]:
    texts: dict[str, str] = {}
    tasks: dict[str, list[tuple[str, list[dict[str, Any]]]]] = {}
    questions_read = 0
    for task, path in LOOGLE_FILES:
        for line in tree.read(path).splitlines():
            if not line.strip():
                continue
            record = json.loads(line)
            title = str(record["title"]).strip()
            text = str(record["input"]).strip()
            if texts.setdefault(title, text) != text:
                raise ValueError(f"LooGLE: two different texts titled {title!r}")
            pairs = record["qa_pairs"]
            # the sample stores each question list as a Python literal, not as JSON
            pairs = ast.literal_eval(pairs) if isinstance(pairs, str) else pairs
            questions_read += len(pairs)
            tasks.setdefault(title, []).append((task, pairs))
    docs: list[EvidenceDocument] = []
    stats = {"documents_read": len(texts), "documents_excluded": 0, "questions_read": questions_read,
             "questions_excluded_with_document": 0, "questions_unlocated": 0, "questions_short_evidence": 0}
    for title, text in texts.items():
        if title in LOOGLE_EXCLUDED:
            stats["documents_excluded"] += 1
            stats["questions_excluded_with_document"] += sum(len(p) for _, p in tasks[title])
            continue
        doc, dropped = convert_loogle_document(title, text, tasks[title])
        stats["questions_unlocated"] += dropped["unlocated"]
        stats["questions_short_evidence"] += dropped["short"]
        if doc.questions:
            docs.append(doc)
    meta: dict[str, object] = {
        "name": "loogle",
        "repository": "https://github.com/bigai-nlco/LooGLE",
        "commit": tree.commit,
        "files": [path for _, path in LOOGLE_FILES],
        "licence": "MIT (LooGLE repository); article texts from English Wikipedia, CC BY-SA 4.0",
        "paper": "Li, Wang, Zheng, Zhang: LooGLE: Can Long-Context Language Models Understand Long Contexts? (2023)",
        "source_splits": ["test"],
        "evidence": "the annotators' evidence sentences (S), each located in the article by its letters and digits",
        "query": "the question (Q), as written, options included",
        "excluded_documents": dict(LOOGLE_EXCLUDED),
        **stats,
    }
    return docs, meta


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fairytaleqa", help="uci-soe/FairytaleQAData copy (folder, or GITDIR[@COMMIT])")
    ap.add_argument("--loogle", help="bigai-nlco/LooGLE copy (folder, or GITDIR[@COMMIT])")
    ap.add_argument("--out", required=True, help="the file to write, e.g. data/long-evidence/long-evidence-v1.json")
    args = ap.parse_args(argv)
    if not (args.fairytaleqa or args.loogle):
        ap.error("name at least one source (--fairytaleqa, --loogle)")

    documents: list[EvidenceDocument] = []
    sources: list[dict[str, object]] = []
    for spec, build in ((args.fairytaleqa, build_fairytaleqa), (args.loogle, build_loogle)):
        if spec:
            docs, meta = build(Tree(spec))
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
