"""End to end through the real ``landmark-rag`` entry point on real SQuAD articles.

The fixture file holds three real articles from data/ (the repository's SQuAD file) cut to their first
paragraphs (CC BY-SA 4.0, SQuAD v1.1 dev, Rajpurkar et al. 2016), so the run uses the
real model and real questions while staying quick; ``--title`` picks two of them, the
held-out usage.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from landmark_rag.datasets import read_squad, select
from landmark_rag.evaluation import SYSTEMS
from landmark_rag.evaluation.report import markdown_table, metric_columns, render_tables

DATA = Path(__file__).resolve().parents[2] / "data" / "squad-v1.1-dev-part-a.json"
TITLES = ["Oxygen", "Prime_number"]
SENTENCE_SYSTEMS = {name for name, cls in SYSTEMS.items() if cls.sentence_units}
BUDGETS = [32, 64, 128]

NUMBER = {"type": "number", "minimum": 0}
RATE = {"type": "number", "minimum": 0, "maximum": 1}
SCHEMA = {
    "type": "object",
    "required": ["data", "questions", "systems"],
    "properties": {
        "data": {"type": "string"},
        "questions": {"type": "integer", "minimum": 1},
        "systems": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {
                "type": "object",
                "required": ["tokens_per_s", "index_bytes", "units"],
                "patternProperties": {"^(recall|coverage|mrr)@[0-9]+$": RATE},
                "additionalProperties": NUMBER,  # numbers only: absent metrics are omitted, never null
            },
        },
    },
}


def _cli(*args: str) -> subprocess.CompletedProcess:
    code = "from landmark_rag.cli import main; main()"  # the console script's target
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def squad_file(tmp_path_factory) -> Path:
    raw = json.loads(DATA.read_text())
    wanted = {"Super_Bowl_50", *TITLES}
    arts = [dict(a, paragraphs=a["paragraphs"][:3]) for a in raw["data"] if a["title"] in wanted]
    assert len(arts) == 3
    path = tmp_path_factory.mktemp("eval") / "small-squad.json"
    path.write_text(json.dumps({"version": "1.1", "data": arts}))
    return path


@pytest.fixture(scope="module")
def run(squad_file, tmp_path_factory) -> tuple[dict, subprocess.CompletedProcess, Path]:
    plot = tmp_path_factory.mktemp("plot") / "coverage.png"
    budgets = ",".join(str(b) for b in BUDGETS)
    proc = _cli(
        "eval", "--data", str(squad_file), "--title", TITLES[0], "--title", TITLES[1],
        "--budgets", budgets, "--json", "--plot", str(plot),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout), proc, plot


def test_stdout_is_exactly_one_json_object(run):
    result, proc, _ = run
    assert proc.stdout.count("\n") == 1 and proc.stdout.endswith("\n")
    assert isinstance(result, dict)
    assert proc.stderr  # progress went to stderr instead


def test_json_schema_and_absent_metrics(run, squad_file):
    jsonschema = pytest.importorskip("jsonschema")
    result, _, _ = run
    jsonschema.validate(result, SCHEMA)
    assert result["data"] == str(squad_file)
    assert set(result["systems"]) == set(SYSTEMS)  # default: every system
    expected = sum(len(a.questions) for a in select(read_squad(squad_file), TITLES))
    assert result["questions"] == expected and result["articles"] == 2
    for name, metrics in result["systems"].items():
        has_recall = {"recall@1", "recall@5", "recall@10", "mrr@10"} <= metrics.keys()
        assert has_recall == (name in SENTENCE_SYSTEMS), name
        assert {f"coverage@{b}" for b in BUDGETS} <= metrics.keys()
        assert ("vectors" in metrics) == (name != "bm25")


def test_metrics_behave(run):
    result, _, _ = run
    chance_at_10 = 10 / result["sentences"]
    for name, m in result["systems"].items():
        cov = [m[f"coverage@{b}"] for b in BUDGETS]
        assert cov == sorted(cov), f"{name}: coverage must grow with the budget"
        if name in SENTENCE_SYSTEMS:
            assert m["recall@1"] <= m["recall@5"] <= m["recall@10"]
            assert m["recall@1"] <= m["mrr@10"] <= m["recall@10"]
            assert m["recall@10"] > 2 * chance_at_10, f"{name} ranks no better than chance"
    # sentence and sentence-window rank the same vectors; only the expansion differs
    s, w = result["systems"]["sentence"], result["systems"]["sentence-window"]
    assert s["recall@1"] == w["recall@1"] and s["mrr@10"] == w["mrr@10"]
    assert w["units"] == result["sentences"]


def test_plot_is_a_png(run):
    _, _, plot = run
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_tables_render_every_system(run):
    from rich.console import Console

    result, _, _ = run
    console = Console(width=160, record=True)
    for table in render_tables(result):
        console.print(table)
    text = console.export_text()
    assert all(name in text for name in result["systems"])
    md = markdown_table(result, [c for c in metric_columns(result) if c.startswith("coverage@")])
    assert md.count("\n") == len(result["systems"]) + 1


def test_unknown_system_fails_cleanly(squad_file):
    proc = _cli("eval", "--data", str(squad_file), "--systems", "landmark,nope", "--json")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "unknown system 'nope'" in proc.stderr


def test_titles_file_with_unknown_title_fails_cleanly(squad_file, tmp_path):
    titles = tmp_path / "held-out.txt"
    titles.write_text("Oxygen\nJacksonville,_Florida\n")  # a real SQuAD title with a comma
    proc = _cli("eval", "--data", str(squad_file), "--titles-file", str(titles), "--json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "no article titled 'Jacksonville,_Florida'" in proc.stderr


def test_a_selection_naming_no_article_fails_cleanly(squad_file):
    # --select takes the spec of `landmark-rag train --val-articles`; the file has 3 articles
    proc = _cli("eval", "--data", str(squad_file), "--select", "0,9", "--json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "article 9 does not exist: the data has 3 articles" in proc.stderr
