"""``landmark-rag query --max-tokens N``: where the budget cuts, and many questions at once.

Real parts only, as in ``test_cli.py``: the shipped default model, a real Chroma store in a
tmp dir, the SQuAD excerpt written out as files, the Typer app driven in-process.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from landmark_rag.cli import _register, app

_register()
RUNNER = CliRunner()

QUESTIONS = (
    "Who proved that air is necessary for combustion?",
    "Who did the army siege belong to?",
    "Who established the amount of prime numbers in existence?",
)


def cli(*args: object, ok: bool = True):
    result = RUNNER.invoke(app, [str(a) for a in args])
    if ok and result.exit_code != 0:
        raise AssertionError(f"exit {result.exit_code}\n{result.output}\n{result.exception!r}")
    return result


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, excerpt_articles) -> Path:
    """The three excerpt articles as files, indexed once (read-only for these tests)."""
    root = tmp_path_factory.mktemp("corpus")
    for art in excerpt_articles:
        (root / f"{art.title}.txt").write_text(art.text, encoding="utf-8")
    db = tmp_path_factory.mktemp("store") / "db"
    cli("index", root, "--db", db, "--quiet")
    return db


@pytest.fixture(scope="module")
def index(indexed: Path):
    from landmark_rag import LandmarkIndex

    return LandmarkIndex.open(indexed)


def boundaries(index, source: str) -> tuple[set[int], set[int]]:
    """Where the stored sentences of ``source`` start and end."""
    sents = index.encoder.segment(Path(source).read_text(encoding="utf-8"))
    return {s.start for s in sents}, {s.end for s in sents}


@pytest.mark.parametrize("budget", [25, 60, 200])
def test_budgeted_passages_are_cut_between_sentences(indexed: Path, index, budget: int) -> None:
    for question in QUESTIONS:
        rows = json.loads(cli("query", question, "--db", indexed, "--json", "--max-tokens", budget).stdout)
        assert rows, "a budget always gets at least one passage"
        assert sum(index.count_tokens(r["text"]) for r in rows) <= budget or len(rows) == 1
        for r in rows:
            assert Path(r["source"]).read_text(encoding="utf-8")[r["start"] : r["end"]] == r["text"]
            starts, ends = boundaries(index, r["source"])
            assert r["start"] in starts and r["end"] in ends
            # a cut passage keeps its hit: every hit named lies inside it
            assert r["hit_sentences"]
            assert all(r["start"] <= h["start"] and h["end"] <= r["end"] for h in r["hit_sentences"])


def test_a_budget_smaller_than_any_sentence_gives_the_best_hit_alone(indexed: Path) -> None:
    rows = json.loads(cli("query", QUESTIONS[0], "--db", indexed, "--json", "--max-tokens", 1).stdout)
    assert len(rows) == 1
    (row,) = rows
    assert row["first_sentence"] == row["last_sentence"]
    assert [(h["start"], h["end"]) for h in row["hit_sentences"]] == [(row["start"], row["end"])]


def test_many_questions_share_the_budget_rule(indexed: Path, index, tmp_path: Path) -> None:
    questions = tmp_path / "questions.txt"
    questions.write_text("\n".join(QUESTIONS), encoding="utf-8")
    out = json.loads(
        cli("query", "--questions", questions, "--db", indexed, "--json", "--max-tokens", 120, "-k", 2).stdout
    )
    assert [o["question"] for o in out] == list(QUESTIONS)
    for o in out:
        assert 1 <= len(o["passages"]) <= 2  # -k caps the passages a budget fills
        assert sum(index.count_tokens(p["text"]) for p in o["passages"]) <= 120


def test_text_and_html_output_with_a_budget(indexed: Path, tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    out = cli("query", QUESTIONS[1], "--db", indexed, "--max-tokens", 80, "--html", page).stdout
    assert "#1 " in out and "chars " in out
    assert "80 tokens" in page.read_text(encoding="utf-8")  # the subtitle says what was asked


@pytest.mark.parametrize("bad", ["0", "-1", "", "ten", "2.5", "1e3"])
def test_a_bad_budget_is_a_usage_error(indexed: Path, bad: str) -> None:
    result = cli("query", QUESTIONS[0], "--db", indexed, "--max-tokens", bad, ok=False)
    assert result.exit_code == 2, result.output
    assert "--max-tokens" in result.output
