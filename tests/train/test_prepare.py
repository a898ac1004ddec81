"""Training-data preparation: the recipe, exclusions, the long-document format, and the loader.

Runs the real preparation on the repository's hand-written sample (tests/data/training-sample)
and checks the real recipe (data/training/general-v1.json) without its raw files.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import json
import math
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import landmark_rag.cli.train  # noqa: F401 - registers the train command
from landmark_rag.cli import app
from landmark_rag.datasets import LongDocFormatError, read_longdocs, read_squad
from landmark_rag.train.config import TrainConfig, TrainingInputError
from landmark_rag.train.documents import load_documents, select_documents, source_kind
from landmark_rag.train.prepare import DOCUMENTS_FILE, MANIFEST_FILE, PSEUDO_FILE, load_recipe, prepare
from landmark_rag.train.prepare.exclude import exclusion_reason
from landmark_rag.train.prepare.recipe import normalise_title

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "tests" / "data" / "training-sample"
RECIPE = ROOT / "data" / "training" / "general-v1.json"
EVAL_FILE = ROOT / "data" / "squad-v1.1-dev-part-a.json"


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("prepared")
    prepare(SAMPLE / "sample.json", SAMPLE / "raw", out, show_progress=False)
    return out


def test_sample_offsets_are_exact_and_excluded_titles_are_absent(prepared):
    docs = read_longdocs(prepared)
    titles = {normalise_title(d.title) for d in docs}
    assert titles >= {"lighthouse", "bicycle"}
    # the evaluation stand-ins (an article and a passage) and the reserved-domain article are gone
    assert not titles & {"prime number", "asthma", "black death"}
    assert not any("stand-in" in d.text for d in docs)
    for d in docs:
        for q in d.questions:
            assert d.text[q.answer_start : q.answer_end] == q.answer and q.answers == (q.answer,)
        for s, e in d.paragraphs:
            assert d.text[s:e].strip() == d.text[s:e]
    manifest = json.loads((prepared / MANIFEST_FILE).read_text())
    assert manifest["sources"]["sample-articles"]["excluded"] == {"evaluation article": 1, "reserved domain (listed)": 1}
    assert manifest["sources"]["sample-passages"]["excluded"] == {"evaluation article": 1}
    assert manifest["outputs"][DOCUMENTS_FILE]["questions"] == 12


def test_pseudo_documents_place_every_passage_question_once_among_distractors(prepared):
    pseudo = read_longdocs(prepared / PSEUDO_FILE)
    asked = [q.question for d in pseudo for q in d.questions]
    assert sorted(asked) == sorted(["when was the cutty sark launched", "why did tea clippers race each other",
                                    "what is the letter e in morse code"])
    # distractors are article paragraphs without their questions
    assert all(len(d.paragraphs) >= 2 for d in pseudo)
    assert any("Fresnel" in d.text or "Drais" in d.text for d in pseudo)


def test_preparation_is_byte_reproducible(prepared, tmp_path):
    again = tmp_path / "again"
    prepare(SAMPLE / "sample.json", SAMPLE / "raw", again, show_progress=False)
    for name in (DOCUMENTS_FILE, PSEUDO_FILE, MANIFEST_FILE):
        assert (again / name).read_bytes() == (prepared / name).read_bytes(), name


def test_missing_or_altered_raw_files_are_refused(tmp_path):
    with pytest.raises(TrainingInputError, match="2 raw file"):
        prepare(SAMPLE / "sample.json", tmp_path / "empty", tmp_path / "out", show_progress=False)
    raw = tmp_path / "raw"
    shutil.copytree(SAMPLE / "raw", raw)
    with (raw / "sample-articles" / "articles.json").open("a") as f:
        f.write(" ")
    with pytest.raises(TrainingInputError, match="sha256"):
        prepare(SAMPLE / "sample.json", raw, tmp_path / "out", show_progress=False)
    assert not (tmp_path / "out" / DOCUMENTS_FILE).exists()


def test_download_fetches_missing_files_from_the_pinned_address(tmp_path, monkeypatch):
    """--download: served from a loopback HTTP server standing in for GitHub's raw-file host."""
    served = tmp_path / "served" / "owner" / "repo" / ("0" * 40) / "data"
    served.mkdir(parents=True)
    shutil.copy(SAMPLE / "raw" / "sample-articles" / "articles.json", served / "articles.json")
    digest = hashlib.sha256((served / "articles.json").read_bytes()).hexdigest()
    (tmp_path / "r.sha256").write_text(f"{digest}  art/articles.json\n")
    (tmp_path / "titles.txt").write_text("Prime_number\n")
    (tmp_path / "r.json").write_text(json.dumps({
        "name": "r", "seed": 0, "checksums": "r.sha256",
        "sources": [{"name": "art", "format": "squad", "role": "documents", "repo": "owner/repo", "commit": "0" * 40,
                     "path": "data", "licence": "Apache-2.0", "domain": "general"}],
        "exclude": {"title_files": ["titles.txt"]},
    }))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / "served"))
    handler.log_message = lambda *a, **k: None  # type: ignore[method-assign]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host = f"http://127.0.0.1:{server.server_address[1]}"
    import landmark_rag.train.prepare.recipe as recipe_mod

    monkeypatch.setattr(recipe_mod.Source, "url", lambda self, name: f"{host}/{self.repo}/{self.commit}/{self.path}/{name}")
    try:
        manifest = prepare(tmp_path / "r.json", tmp_path / "raw", tmp_path / "out", download=True, show_progress=False)
    finally:
        server.shutdown()
    assert (tmp_path / "raw" / "art" / "articles.json").read_text() == (served / "articles.json").read_text()
    assert manifest["sources"]["art"]["documents"] == 3  # Lighthouse, Bicycle, Asthma (no domain list here)


def test_cli_prepare_writes_the_set_and_reports_bad_input(tmp_path):
    runner = CliRunner()
    ok = runner.invoke(app, ["train", "--prepare", str(SAMPLE / "sample.json"), "--raw", str(SAMPLE / "raw"),
                             "-o", str(tmp_path / "out")])
    assert ok.exit_code == 0, ok.output
    assert "2 documents, 12 questions" in ok.output and (tmp_path / "out" / MANIFEST_FILE).is_file()
    bad = runner.invoke(app, ["train", "--prepare", str(SAMPLE / "sample.json"), "--raw", str(tmp_path / "none")])
    assert bad.exit_code == 2 and "missing" in bad.output


def test_loader_reads_the_prepared_set_with_exact_answer_positions(prepared):
    assert source_kind(prepared) == "longdoc" and source_kind(prepared / DOCUMENTS_FILE) == "longdoc"
    arts = load_documents(prepared)
    assert len(arts) == 5
    for a in arts:
        for q in a.questions:
            p = a.paragraph_of(q.answer_start)
            assert p >= 0 and a.paragraphs[p][0] <= q.answer_start < a.paragraphs[p][1]
            assert a.text[q.answer_start : q.answer_end].strip()


def test_per_source_selection_validates_on_evaluation_articles_without_training_on_them(prepared):
    cfg = TrainConfig(data=[str(prepared), {"path": str(EVAL_FILE), "train": "", "val": "13:16"}])
    train, val = select_documents(cfg)
    assert len(train) == 5 and [a.title for a in val] == ["Immune_system", "Civil_disobedience", "Construction"]
    with pytest.raises(TrainingInputError, match="both training and validation"):
        select_documents(TrainConfig(data=[{"path": str(EVAL_FILE), "train": "13:14", "val": "13:16"}]))
    with pytest.raises(TrainingInputError, match="path"):
        select_documents(TrainConfig(data=[{"file": str(EVAL_FILE)}]))


def test_a_broken_line_names_its_file_and_line(tmp_path, prepared):
    bad = tmp_path / "bad.jsonl.gz"
    rows = gzip.decompress((prepared / DOCUMENTS_FILE).read_bytes()).decode().splitlines()
    row = json.loads(rows[0])
    row["questions"][0]["start"] += 1
    with gzip.open(bad, "wt", encoding="utf-8") as f:
        f.write(rows[1] + "\n" + json.dumps(row) + "\n")
    with pytest.raises(LongDocFormatError, match=r"bad.jsonl.gz:2: question"):
        read_longdocs(bad)
    with pytest.raises(TrainingInputError, match="bad.jsonl.gz:2"):
        load_documents(bad)


def test_the_shipped_recipe_keeps_every_evaluation_article_out():
    recipe = load_recipe(RECIPE)
    squad_dev_part_a = [a.title for a in read_squad(EVAL_FILE)]
    assert len(recipe.excluded_titles) == 48
    for title in squad_dev_part_a:
        assert exclusion_reason(recipe, title) == "evaluation article"
        assert exclusion_reason(recipe, title.replace("_", " ").upper()) == "evaluation article"
    assert exclusion_reason(recipe, "Beyoncé") is None
    assert exclusion_reason(recipe, "First Amendment to the United States Constitution") == "reserved domain (title pattern)"
    assert exclusion_reason(recipe, "Tuberculosis") == "reserved domain (listed)"
    # every raw file is pinned: a commit, a licence and a checksum for each source
    for s in recipe.sources:
        assert len(s.commit) == 40 and s.licence and recipe.files[s.name]
        assert all(len(recipe.checksums[f"{s.name}/{f}"]) == 64 for f in recipe.files[s.name])
        assert s.url(recipe.files[s.name][0]).startswith(f"https://raw.githubusercontent.com/{s.repo}/{s.commit}/")


def _short_training(prepared: Path, out: Path, *extra: str):
    """Three seeded LoRA steps of the real base model on the prepared sample, through the CLI."""
    return CliRunner().invoke(app, [
        "train", "--base", "all-MiniLM-L6-v2", "-o", str(out), "--data", str(prepared), "--val-articles", "",
        "--pooling", "mean", "--query-pooling", "mean", "--max-length", "128", "--stage", "longdoc:3",
        "--seed", "5", *extra,
    ])


@pytest.mark.usefixtures("one_thread")
def test_seeded_training_on_the_prepared_sample_reproduces_and_loads(prepared, tmp_path):
    """The real base model, a few LoRA steps on the prepared sample, twice: the same adapter bytes.

    On the CPU, named: a seed fixes a run to the byte only there. On a GPU (the default device
    where there is one) mean pooling's ``index_add_`` and attention's backward add in whatever
    order the device's threads finish, so two seeded runs differ in the last bits."""
    from landmark_rag import LandmarkEncoder

    outs = []
    for name in ("a", "b"):
        out = tmp_path / name
        result = _short_training(prepared, out, "--threads", "1", "--device", "cpu")
        assert result.exit_code == 0, result.output
        outs.append(out)
    adapter = [(o / "adapter_model.safetensors").read_bytes() for o in outs]
    assert adapter[0] == adapter[1]
    history = json.loads((outs[0] / "train_history.json").read_text())
    assert [h["step"] for h in history if "loss" in h] == [1, 2, 3]
    encoder = LandmarkEncoder.from_pretrained(outs[0], device="cpu")
    doc = encoder.encode_document(read_longdocs(prepared / DOCUMENTS_FILE)[0].text)
    assert len(doc) > 3 and doc.embeddings.shape[1] == 384


@pytest.mark.usefixtures("one_thread")
def test_training_on_the_default_device_trains_and_loads(prepared, tmp_path):
    """The same short run on the machine's default device (a GPU where there is one), with the
    trained model loaded and encoding there too: the seeded test above names the CPU."""
    from landmark_rag import LandmarkEncoder

    out = tmp_path / "default-device"
    result = _short_training(prepared, out)
    assert result.exit_code == 0, result.output
    history = json.loads((out / "train_history.json").read_text())
    losses = [h["loss"] for h in history if "loss" in h]
    assert len(losses) == 3 and all(math.isfinite(x) for x in losses)
    doc = LandmarkEncoder.from_pretrained(out).encode_document(read_longdocs(prepared / DOCUMENTS_FILE)[0].text)
    assert len(doc) > 3 and bool(np.isfinite(doc.embeddings).all())


def test_prepared_name_resolves_to_the_cache_and_names_the_command_when_missing(prepared, tmp_path, monkeypatch):
    from landmark_rag.train.documents import resolve_data_path

    monkeypatch.setenv("LANDMARK_RAG_CACHE", str(tmp_path))
    with pytest.raises(TrainingInputError, match="--prepare data/training/sample.json"):
        resolve_data_path("prepared:sample")
    shutil.copytree(prepared, tmp_path / "data" / "sample")
    config = TrainConfig(data=["prepared:sample"])
    train, _ = select_documents(config)
    assert {a.title for a in train} == {d.title for d in read_longdocs(prepared)}
    assert resolve_data_path("data/x.json") == "data/x.json"  # any other path is left alone
