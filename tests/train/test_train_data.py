"""Training config files and the stage data builders on the real SQuAD file (no model runs)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from landmark_rag.datasets import read_squad, select
from landmark_rag.train import StageConfig, TrainConfig
from landmark_rag.train.data_longdoc import LongDocBuilder
from landmark_rag.train.data_pairwise import PairwiseBuilder
from landmark_rag.train.data_pseudo import PseudoDocBuilder
from landmark_rag.train.documents import segment_articles

DATA = Path(__file__).resolve().parents[2] / "data" / "squad-v1.1-dev-part-a.json"


def test_config_files_roundtrip(tmp_path):
    cfg = TrainConfig(output_dir="x", lr=1e-4, stages=[StageConfig("longdoc", 5, contrastive_weight=0.0), StageConfig("pairwise", 7)])
    cfg.save(tmp_path / "c.json")
    assert TrainConfig.load(tmp_path / "c.json") == cfg
    (tmp_path / "c.yaml").write_text("output_dir: y\nstages:\n  - {kind: pseudo, steps: 3}\n")
    y = TrainConfig.load(tmp_path / "c.yaml")
    assert y.output_dir == "y" and y.stages == [StageConfig("pseudo", 3)] and y.total_steps == 3
    (tmp_path / "c.toml").write_text('pooling = "landmark"\n[[stages]]\nkind = "longdoc"\nsteps = 4\n')
    assert TrainConfig.load(tmp_path / "c.toml").stages[0].steps == 4
    (tmp_path / "bad.json").write_text(json.dumps({"learning_rate": 1}))
    with pytest.raises(ValueError, match="learning_rate"):
        TrainConfig.load(tmp_path / "bad.json")
    with pytest.raises(ValueError):
        StageConfig("nonsense", 1)


def test_cli_stage_spec():
    from landmark_rag.cli.train import _parse_stage

    assert _parse_stage("longdoc:100:0:1") == {"kind": "longdoc", "steps": 100, "contrastive_weight": 0.0, "distill_weight": 1.0}
    assert _parse_stage("pairwise:5") == {"kind": "pairwise", "steps": 5}


def _articles(spec: str):
    from landmark_rag.segment import segment_sentences

    return segment_articles(select(read_squad(DATA), spec), lambda text, title: segment_sentences(text, doc_id=title))


def test_answer_spans_hold_the_answer():
    for art in _articles("0:3"):
        for q in art.article.questions:
            span = art.answer_span(q)
            first, last = art.sentences[span[0]], art.sentences[span[-1]]
            assert first.start <= q.answer_start and q.answer_end <= last.end + 1


def test_longdoc_windows_fit_and_point_at_the_answers():
    arts = _articles("3:5")
    lengths = [[len(s.text.split()) + 1 for s in a.sentences] for a in arts]
    builder = LongDocBuilder(arts, lengths, 120, examples_per_batch=2, queries_per_example=4, landmark_tokens=1)
    by_title = {a.article.title: a.article for a in arts}
    rng = random.Random(0)
    stream = builder.batches(rng)
    for _ in range(20):
        batch = next(stream)
        assert len({ex.doc_id.split("[")[0] for ex in batch}) == 2  # distinct articles: in-batch negatives
        for ex in batch:
            art = by_title[ex.doc_id.split("[")[0]]
            assert sum(len(u.split()) + 2 for u in ex.units) <= 120 or len(ex.units) == 1
            assert 1 <= len(ex.queries) <= 4
            for qtext, span in zip(ex.queries, ex.spans):
                q = next(x for x in art.questions if x.question == qtext)
                answer = art.text[q.answer_start : q.answer_end]
                assert answer.split()[-1] in ex.units[span[-1]]


def test_longdoc_inference_windows_are_the_ones_inference_plans():
    from landmark_rag.encode.windows import plan_windows

    arts = _articles("3:5")
    lengths = [[len(s.text.split()) + 1 for s in a.sentences] for a in arts]
    builder = LongDocBuilder(
        arts, lengths, 120, examples_per_batch=2, queries_per_example=4, landmark_tokens=0, inference_overlap=0
    )
    plans = {a.article.title: plan_windows(n, 120, 0, False) for a, n in zip(arts, lengths)}
    by_title = {a.article.title: a.article for a in arts}
    stream = builder.batches(random.Random(0))
    seen_edges = 0
    for _ in range(30):
        for ex in next(stream):
            title, rest = ex.doc_id.split("[")
            lo, hi = (int(x) for x in rest.rstrip("]").split(":"))
            windows, assigned = plans[title]
            assert (lo, hi) in windows  # exactly an inference window, not one grown around the answer
            art = by_title[title]
            for qtext, span in zip(ex.queries, ex.spans):
                assert span and 0 <= span[0] and span[-1] < hi - lo
                assert windows[assigned[lo + span[-1]]] == (lo, hi)  # trained where inference pools it
                q = next(x for x in art.questions if x.question == qtext)
                assert art.text[q.answer_start : q.answer_end].split()[-1] in ex.units[span[-1]]
                seen_edges += span[-1] == 0
    assert seen_edges  # answers at a window's first sentence occur, as they do at inference


def test_pairwise_and_pseudo_builders():
    arts = _articles("5:8")
    rng = random.Random(1)
    batch = next(PairwiseBuilder(arts, examples_per_batch=6, queries_per_example=2, hard_negatives=2).batches(rng))
    assert len(batch) == 6 and all(len(ex.units) == 1 and ex.spans == [[0]] * len(ex.queries) for ex in batch)
    ex = next(PseudoDocBuilder(arts, passages_per_document=4, examples_per_batch=1).batches(rng))[0]
    assert len(ex.units) == 4
    (pos,) = {s[0] for s in ex.spans}
    para = next(
        (a, p) for a in (d.article for d in arts) for p, (s, e) in enumerate(a.paragraphs) if a.text[s:e] == ex.units[pos]
    )
    questions = {q.question for q in para[0].questions if para[0].paragraph_of(q.answer_start) == para[1]}
    assert set(ex.queries) <= questions


def test_training_names_the_source_of_a_bad_selection():
    from landmark_rag.train.config import TrainingInputError
    from landmark_rag.train.documents import select_documents

    cfg = TrainConfig(data=[str(DATA)], train_articles="0:2", val_articles="Nope")
    with pytest.raises(TrainingInputError, match=r"squad-v1.1-dev-part-a.json: no article titled 'Nope'"):
        select_documents(cfg)
    train, val = select_documents(TrainConfig(data=[str(DATA)], train_articles="0:2", val_articles="Oxygen, 3"))
    assert [a.title for a in train] == ["Super_Bowl_50", "Warsaw"]
    assert [a.title for a in val] == ["Oxygen", "Victoria_(Australia)"]  # the spec's order


def test_cli_reports_input_errors_in_one_line_and_keeps_bug_tracebacks(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import landmark_rag.cli.train  # noqa: F401 - registers the command when this test runs alone
    from landmark_rag.cli import app

    runner = CliRunner()
    bad = runner.invoke(app, ["train", "-o", str(tmp_path / "m"), "--train-articles", "Nope", "--val-articles", ""])
    assert bad.exit_code == 2
    assert "no article titled 'Nope'" in bad.output and "Traceback" not in bad.output

    import landmark_rag.train as train_pkg

    def broken(config, **_):  # an internal ValueError is a bug: it must not become a one-line message
        raise ValueError("one span per query")

    monkeypatch.setattr(train_pkg, "train", broken)
    crash = runner.invoke(app, ["train", "-o", str(tmp_path / "m2")])
    assert isinstance(crash.exception, ValueError) and crash.exit_code != 2


def test_cli_refuses_bad_configs_in_one_line_before_training(tmp_path):
    """A missing or unreadable config, a bad option in it, a bad --stage or a flag value
    outside its choices: exit 2 with a message, no traceback, and nothing written."""
    from typer.testing import CliRunner

    import landmark_rag.cli.train  # noqa: F401 - registers the command when this test runs alone
    from landmark_rag.cli import app

    runner = CliRunner()
    out = tmp_path / "never"
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    typo = tmp_path / "typo.yaml"
    typo.write_text("expansion: fron\n")
    listed = tmp_path / "list.yaml"
    listed.write_text("- 1\n- 2\n")
    cases = [
        (["-c", str(tmp_path / "missing.json")], "no training config at"),
        (["-c", str(broken)], "not a readable training config"),
        (["-c", str(typo)], "unknown expansion strategy 'fron'"),
        (["-c", str(listed)], "one table of training options"),
        (["--stage", "longdoc:abc"], "steps is a whole number"),
        (["--stage", "longdoc:1.5"], "steps is a whole number"),
        (["--pooling", "landmarks"], "pooling must be one of"),
        (["--mixed-precision", "bf-16"], "mixed_precision must be one of"),
        (["--resume", str(tmp_path / "nowhere")], "is not a training checkpoint"),
    ]
    for args, message in cases:
        got = runner.invoke(app, ["train", "-o", str(out), *args])
        assert got.exit_code == 2, (args, got.output, got.exception)
        assert message in " ".join(got.output.split()) and "Traceback" not in got.output, (args, got.output)
    assert not out.exists()


def test_cli_refuses_an_output_folder_that_holds_files_unless_told(tmp_path, monkeypatch):
    """Training into a folder with an earlier model or checkpoints would mix the two (an old
    adapter beside new full weights loads as neither run); the CLI refuses it unless
    ``--overwrite`` is given or the run resumes one of its checkpoints."""
    from typer.testing import CliRunner

    import landmark_rag.cli.train  # noqa: F401
    import landmark_rag.train as train_pkg
    from landmark_rag.cli import app

    ran: list = []

    def fake_train(config, **_):
        ran.append(config.output_dir)
        return None, []

    monkeypatch.setattr(train_pkg, "train", fake_train)
    runner = CliRunner()
    out = tmp_path / "model"
    assert runner.invoke(app, ["train", "-o", str(out)]).exit_code == 0  # absent: fine
    out.mkdir()
    assert runner.invoke(app, ["train", "-o", str(out)]).exit_code == 0  # empty: fine
    (out / "adapter_model.safetensors").write_bytes(b"old")
    refused = runner.invoke(app, ["train", "-o", str(out)])
    assert refused.exit_code == 2 and "already holds files (adapter_model.safetensors)" in refused.output
    assert "--overwrite" in refused.output and len(ran) == 2
    assert runner.invoke(app, ["train", "-o", str(out), "--overwrite"]).exit_code == 0 and len(ran) == 3
    (tmp_path / "file").write_text("x")
    not_a_folder = runner.invoke(app, ["train", "-o", str(tmp_path / "file"), "--overwrite"])
    assert not_a_folder.exit_code == 2 and "is a file" in not_a_folder.output and len(ran) == 3
