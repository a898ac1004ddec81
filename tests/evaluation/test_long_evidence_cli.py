"""``landmark-rag eval --data <long-evidence file>`` end to end on a tiny subset.

The fixture is cut from the committed benchmark file (data/long-evidence/, FairytaleQA
stories, Apache-2.0): the first two documents, each cut to its first few sections, with the
questions whose evidence lies inside what was kept.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from landmark_rag.datasets.longevidence import (
    EvidenceDocument,
    LongEvidenceSet,
    load_long_evidence,
    write_long_evidence,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "long-evidence" / "long-evidence-v1.json"
BUDGETS = (64, 128, 256)


def _cli(*args: str) -> subprocess.CompletedProcess:
    code = "from landmark_rag.cli import main; main()"  # the console script's target
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    data = load_long_evidence(DATA)
    docs = []
    for split in ("validation", "heldout"):
        d = next(d for d in data.documents if d.split == split)
        cut = d.text[:2500]
        qs = tuple(q for q in d.questions if q.evidence[-1][1] <= len(cut))[:4]
        assert qs
        docs.append(EvidenceDocument(d.doc_id, d.source, d.source_split, d.title, cut, d.split, qs))
    path = tmp_path_factory.mktemp("le") / "tiny.json"
    write_long_evidence(path, LongEvidenceSet(docs, data.sources))
    return path


@pytest.fixture(scope="module")
def run(tiny) -> dict:
    proc = _cli("eval", "--data", str(tiny), "--split", "all", "--systems", "landmark,bm25,chunk512",
                "--budgets", ",".join(map(str, BUDGETS)), "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("\n") == 1
    return json.loads(proc.stdout)


def test_json_result(run, tiny) -> None:
    assert run["benchmark"] == "long-evidence" and run["split"] == "all"
    assert run["questions"] == 8 and run["articles"] == 2
    assert run["budgets"] == list(BUDGETS)
    assert set(run["systems"]) == {"landmark", "bm25", "chunk512"}
    for name, m in run["systems"].items():
        assert ("recall@1" in m) == (name != "chunk512")  # R@1 is for sentence units
        found = [m[f"found@{b}"] for b in BUDGETS]
        recall = [m[f"evidence_recall@{b}"] for b in BUDGETS]
        assert found == sorted(found) and recall == sorted(recall), name  # more budget, more read
        assert all(0 <= r <= f <= 1 for r, f in zip(recall, found, strict=True))
    assert set(run["by_source"]) == {"fairytaleqa"}


def test_split_option_selects_documents(tiny) -> None:
    proc = _cli("eval", "--data", str(tiny), "--split", "validation", "--systems", "bm25", "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["articles"] == 1 and result["questions"] == 4
    assert result["budgets"] == [256, 512, 1024]  # the benchmark's default budgets


def test_table_and_unsupported_options(tiny) -> None:
    proc = _cli("eval", "--data", str(tiny), "--split", "all", "--systems", "bm25", "--quiet")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "found@256" in proc.stdout and "recall@1024" in proc.stdout and "bm25" in proc.stdout
    bad = _cli("eval", "--data", str(tiny), "--title", "x", "--json")
    assert bad.returncode == 2 and "--title" in bad.stderr and bad.stdout == ""


def test_expansion_option_gives_one_row_per_strategy(tiny) -> None:
    proc = _cli("eval", "--data", str(tiny), "--split", "all", "--systems", "hybrid,bm25",
                "--expansion", "surround,evidence", "--budgets", "64,256", "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(proc.stdout)["systems"]
    assert set(rows) == {"hybrid-surround", "hybrid-evidence", "bm25"}
    # the same hits: only the passages read from them differ
    assert rows["hybrid-surround"]["recall@1"] == rows["hybrid-evidence"]["recall@1"]
    for m in rows.values():
        assert all(0 <= m[f"evidence_recall@{b}"] <= m[f"found@{b}"] <= 1 for b in (64, 256))
