"""Plain-text training data (no questions): ``--data`` takes .txt/.md files or folders, and a
run without ``--stage`` trains a distillation-only stage, saying so; a contrastive (or
question-built) stage on such data is refused with a clear error."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tiny_models
from typer.testing import CliRunner

from landmark_rag import LandmarkEncoder
from landmark_rag.cli import _register, app
from landmark_rag.datasets import read_squad
from landmark_rag.train.documents import load_documents, load_text_documents, source_kind

_register()


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """Three real articles as plain-text files in a folder tree, plus things that are not documents."""
    root = tmp_path_factory.mktemp("notes")
    arts = read_squad(tiny_models.SQUAD, 11)[8:11]
    (root / "sub").mkdir()
    (root / "a.txt").write_text(arts[0].text, encoding="utf-8")
    (root / "sub" / "b.md").write_text(arts[1].text, encoding="utf-8")
    (root / "c.txt").write_text(arts[2].text, encoding="utf-8")
    (root / "empty.txt").write_text("  \n", encoding="utf-8")
    (root / "data.csv").write_text("x,y\n1,2\n", encoding="utf-8")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "secret.txt").write_text("not a document", encoding="utf-8")
    return root


def test_text_documents_are_question_less_articles_with_paragraphs(corpus):
    docs = load_text_documents(corpus)
    assert [d.title for d in docs] == ["a.txt", "c.txt", "sub/b.md"]  # sorted, hidden/empty/.csv skipped
    assert all(not d.questions for d in docs)
    for d in docs:
        assert len(d.paragraphs) > 1  # SQuAD paragraphs are joined by blank lines
        for s, e in d.paragraphs:
            chunk = d.text[s:e]
            assert chunk == chunk.strip() and "\n\n" not in chunk
        assert [d.text[s:e] for s, e in d.paragraphs] == [p.strip() for p in d.text.split("\n\n") if p.strip()]
    assert source_kind(corpus) == "text" and source_kind(tiny_models.SQUAD) == "squad"
    assert [d.title for d in load_documents(corpus / "c.txt")] == ["c.txt"]
    assert load_documents(tiny_models.SQUAD)[0].questions
    with pytest.raises(FileNotFoundError):
        load_documents(corpus / "missing")
    with pytest.raises(ValueError, match="no .txt"):
        load_documents(_empty_dir(corpus))
    with pytest.raises(ValueError, match="nor plain text"):
        load_documents(corpus / "data.csv")


def _empty_dir(corpus: Path) -> Path:
    path = corpus.parent / "nothing-here"
    path.mkdir(exist_ok=True)
    (path / "x.csv").write_text("1\n")
    return path


def test_plain_text_cli_trains_distillation_only_and_refuses_contrastive(corpus, tmp_path):
    base = tiny_models.build("bert", tmp_path / "base")
    out = tmp_path / "out"
    common = ["train", "--base", str(base), "--data", str(corpus), "--max-length", "64", "--threads", "1"]
    runner = CliRunner()

    refused = runner.invoke(app, [*common, "--stage", "longdoc:5", "-o", str(tmp_path / "x")])
    assert refused.exit_code == 2
    assert "no questions" in refused.output and "longdoc:STEPS:0" in refused.output
    for stage in ("pairwise:5:0", "pseudo:5:0"):
        # --base-model, the option's old name, still works
        args = ["--base-model" if a == "--base" else a for a in common]
        got = runner.invoke(app, [*args, "--stage", stage, "-o", str(tmp_path / "x")])
        assert got.exit_code == 2 and f"{stage} cannot run" in got.output.replace("stage(s) ", "")
    assert not (tmp_path / "x").exists()  # refused before anything was written

    args = [*common, "--pooling", "mean", "--query-pooling", "mean", "--lr", "0.005", "-o", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert "no questions" in result.output and "distillation-only" in result.output
    cfg = json.loads((out / "train_config.json").read_text())
    assert cfg["stages"] == [dict(cfg["stages"][0], kind="longdoc", contrastive_weight=0.0)]
    steps = [h for h in json.loads((out / "train_history.json").read_text()) if "loss" in h]
    assert len(steps) == cfg["stages"][0]["steps"] == 100
    assert all("contrastive" not in h and h["distill"] == h["loss"] for h in steps)
    # the self-supervised target is learnt: in-context vectors move towards the sentence-alone ones
    first, last = np.mean([h["distill"] for h in steps[:15]]), np.mean([h["distill"] for h in steps[-15:]])
    assert last < 0.8 * first, (first, last)

    enc = LandmarkEncoder.from_pretrained(out, device="cpu")
    doc = enc.encode_document((corpus / "a.txt").read_text(encoding="utf-8")[:600])
    assert len(doc) > 2 and np.isfinite(doc.embeddings).all()
