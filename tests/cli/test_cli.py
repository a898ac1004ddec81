"""``landmark-rag index / query / info`` end to end, through the real Typer app.

Real parts only: the real default model (all-MiniLM-L6-v2), real Chroma PersistentClients
in tmp dirs, a real ``chroma run`` server for server mode, and real prose (the SQuAD
excerpt of tests/data, CC BY-SA 4.0) written out as files the way a user's folder looks.
The app is driven in-process with Typer's CliRunner (one model load for the whole module);
one test runs the installed console script as a subprocess.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from servers import free_port, running_chroma
from typer.testing import CliRunner

from landmark_rag.cli import _register, app

_register()
RUNNER = CliRunner()

# Questions of the excerpt with the file and the answer the top passage must contain.
OXYGEN_Q = ("Who proved that air is necessary for combustion?", "oxygen.txt", "Robert Boyle")
SIEGE_Q = ("Who did the army siege belong to?", "history/black_death.txt", "Jani Beg")
EUCLID_Q = ("Who established the amount of prime numbers in existence?", "prime_number.md", "Euclid")
NEW_FACT = "The Brandt observatory first measured atmospheric oxygen on the summit of Mount Kessel in 1931."
NEW_FACT_Q = ("In what year was atmospheric oxygen first measured on Mount Kessel?", "1931")


def cli(*args: object, ok: bool = True):
    result = RUNNER.invoke(app, [str(a) for a in args])
    if ok and result.exit_code != 0:
        raise AssertionError(f"exit {result.exit_code}\n{result.output}\n{result.exception!r}")
    return result


def query_json(db: Path | str, question: str, *extra: object) -> list[dict]:
    return json.loads(cli("query", question, "--db", db, "--json", *extra).stdout)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory, excerpt_articles) -> Path:
    """The three excerpt articles as a folder of files (one nested, one Markdown)."""
    root = tmp_path_factory.mktemp("corpus")
    names = {"Oxygen": "oxygen.txt", "Black_Death": "history/black_death.txt", "Prime_number": "prime_number.md"}
    for art in excerpt_articles:
        path = root / names[art.title]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(art.text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def indexed(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with the corpus indexed once (read-only for the tests that use it)."""
    db = tmp_path_factory.mktemp("store") / "db"
    result = cli("index", corpus, "--db", db, "--quiet")
    assert "3 new" in result.stdout
    return db


def _copy_corpus(corpus: Path, dest: Path) -> Path:
    shutil.copytree(corpus, dest)
    return dest


# ---------------------------------------------------------------------------- index -> query
def test_query_json_schema_and_exact_spans(indexed: Path, corpus: Path) -> None:
    question, doc_id, answer = OXYGEN_Q
    rows = query_json(indexed, question, "-k", 3)
    assert len(rows) == 3
    for rank, row in enumerate(rows, start=1):
        assert {"source", "start", "end", "text", "score", "hit_sentences", "doc_id", "rank"} <= row.keys()
        assert row["rank"] == rank and isinstance(row["score"], float)
        src = Path(row["source"])
        assert src.is_absolute() and src.is_relative_to(corpus)
        assert src.read_text(encoding="utf-8")[row["start"] : row["end"]] == row["text"]  # exact slice of the file
        assert row["hit_sentences"], "every passage records the sentence(s) that were hit"
        for h in row["hit_sentences"]:
            assert row["start"] <= h["start"] < h["end"] <= row["end"]
            assert src.read_text(encoding="utf-8")[h["start"] : h["end"]] == h["text"]
    assert [r["score"] for r in rows] == sorted((r["score"] for r in rows), reverse=True)
    assert rows[0]["doc_id"] == doc_id and answer in rows[0]["text"]
    # Front-k: the hit closes the passage (position-aware expansion looks backwards)
    assert rows[0]["hit_sentences"][-1]["end"] == rows[0]["end"]


@pytest.mark.parametrize("strategy", ["front", "surround", "adaptive", "evidence"])
def test_query_text_output_per_strategy(indexed: Path, strategy: str) -> None:
    question, doc_id, answer = SIEGE_Q
    out = cli("query", question, "--db", indexed, "-k", 2, "--strategy", strategy).stdout
    assert out.count("score ") == 2
    first = out.split("#2 ")[0]
    assert doc_id in first and answer in first and "chars " in first


def test_query_token_budget(indexed: Path) -> None:
    from landmark_rag import LandmarkIndex

    count = LandmarkIndex.open(indexed).count_tokens
    question, doc_id, answer = OXYGEN_Q
    for budget in (40, 150, 400):
        rows = query_json(indexed, question, "--max-tokens", budget)
        assert rows, "a budget always gets at least one passage"
        assert sum(count(r["text"]) for r in rows) <= budget or len(rows) == 1
        for r in rows:
            text = Path(r["source"]).read_text(encoding="utf-8")
            assert text[r["start"] : r["end"]] == r["text"]
            assert r["hit_sentences"]  # every passage, cut or not, keeps a hit
    assert rows[0]["doc_id"] == doc_id and answer in rows[0]["text"]  # the best passage, grown, holds it
    assert len(query_json(indexed, question, "--max-tokens", 400, "-k", 1)) == 1  # k caps the passages


@pytest.mark.parametrize("bad", ["0", "-5", "many", "1.5"])
def test_query_refuses_a_bad_budget(indexed: Path, bad: str) -> None:
    result = cli("query", "Who proved it?", "--db", indexed, "--max-tokens", bad, ok=False)
    assert result.exit_code == 2 and "--max-tokens" in result.output


def test_query_modes_on_an_existing_store(indexed: Path, tmp_path: Path) -> None:
    """--mode works on a store indexed before hybrid search existed: the lexical index is
    built from the stored sentences on first use; no vector is re-encoded or rewritten."""
    import chromadb

    from landmark_rag.store.lexical import LEXICAL_DIR

    db = tmp_path / "db"
    shutil.copytree(indexed, db)
    shutil.rmtree(db / LEXICAL_DIR, ignore_errors=True)
    collection = chromadb.PersistentClient(path=str(db)).get_collection("landmark")
    before = collection.get(include=["embeddings"])
    question, doc_id, answer = EUCLID_Q
    for mode in ("hybrid", "dense"):
        rows = query_json(db, question, "-k", 3, "--mode", mode)
        assert len(rows) == 3 and any(r["doc_id"] == doc_id and answer in r["text"] for r in rows), mode
    rows = query_json(db, "Euclid proved infinitely many primes", "-k", 2, "--mode", "lexical")
    assert len(rows) == 2 and "Euclid" in rows[0]["text"]
    assert (db / LEXICAL_DIR / "landmark" / "state.json").is_file()
    after = chromadb.PersistentClient(path=str(db)).get_collection("landmark").get(include=["embeddings"])
    assert after["ids"] == before["ids"]
    np.testing.assert_array_equal(np.asarray(after["embeddings"]), np.asarray(before["embeddings"]))
    default = query_json(db, question, "-k", 2)
    assert [r["start"] for r in default] == [r["start"] for r in query_json(db, question, "-k", 2, "--mode", "hybrid")]
    bad = cli("query", question, "--db", db, "--mode", "sparse", ok=False)
    assert bad.exit_code == 2 and "--mode" in bad.output
    blank = cli("query", "  ", "--db", db, ok=False)
    assert blank.exit_code == 2 and "blank" in blank.output
    none = cli("query", "xyzzy plugh", "--db", db, "--mode", "lexical")
    assert "no stored sentence matches" in none.stdout  # not "the store is empty": it is not


def test_demo_refuses_a_bad_strategy_before_indexing() -> None:
    result = cli("demo", "--strategy", "bogus", ok=False)
    assert result.exit_code == 2 and "--strategy" in result.output and "indexed" not in result.output


def test_query_batch_answers_most_excerpt_questions(indexed: Path, excerpt_articles, tmp_path: Path) -> None:
    """The acceptance measure in small: answer inside the top passage for most questions."""
    qa = [(q.text, q.answer) for art in excerpt_articles for q in art.questions]
    qfile = tmp_path / "questions.txt"
    qfile.write_text("\n".join(q for q, _ in qa) + "\n\n", encoding="utf-8")
    got = json.loads(cli("query", "--questions", qfile, "--db", indexed, "--json", "-k", 3).stdout)
    assert [g["question"] for g in got] == [q.strip() for q, _ in qa]
    assert all(len(g["passages"]) == 3 for g in got)
    top = sum(ans in g["passages"][0]["text"] for g, (_, ans) in zip(got, qa, strict=True)) / len(qa)
    assert top >= 0.8, f"answer in the top passage for only {top:.0%} of {len(qa)} questions"


def test_query_html_page(indexed: Path, tmp_path: Path) -> None:
    question, doc_id, _ = EUCLID_Q
    page = tmp_path / "out" / "page.html"
    rows = query_json(indexed, question, "-k", 3, "--html", page)
    html = page.read_text(encoding="utf-8")
    import html as html_lib

    assert html.startswith("<!doctype html>") and html_lib.escape(question) in html
    unmarked = re.sub(r"</?mark[^>]*>", "", html)
    for rank, row in enumerate(rows, start=1):
        assert html_lib.escape(row["text"]) in unmarked  # each passage is shown in full
        assert f'id="p{rank}"' in html  # ... and marked in its source document
    assert f">{doc_id}</h2>" in html
    assert "background:rgba(255,170,0," in html and 'class="s hit"' in html


def test_info(indexed: Path) -> None:
    info = json.loads(cli("info", "--db", indexed, "--json").stdout)
    from landmark_rag.encode.models.registry import default_model
    from landmark_rag.store import model_source

    assert info["model"] and info["model_source"] == model_source(None, default_model())
    assert info["dimension"] == 384 and info["documents"] == 3 and info["incomplete_documents"] == 0
    assert info["sentences"] > 30 and info["store"] == str(indexed.resolve())
    assert info["gguf_cache"].endswith("gguf")
    text = cli("info", "--db", indexed).stdout
    assert info["model"] in text and "384" in text and "gguf" in text
    assert "incomplete" not in text  # no row for none
    runtime = json.loads(cli("info", "--db", indexed, "--runtime", "--json").stdout)
    assert runtime["model"] == info["model"] and runtime["device"] == "cpu"  # the store's model, loaded


def test_missing_store_is_a_clear_error(tmp_path: Path) -> None:
    result = cli("query", "anything", "--db", tmp_path / "nothing", ok=False)
    assert result.exit_code == 1 and "no store" in result.stderr
    assert not (tmp_path / "nothing").exists()  # querying never creates a store
    result = cli("info", "--db", tmp_path / "nothing", ok=False)
    assert result.exit_code == 1
    result = cli("index", tmp_path / "missing-folder", "--db", tmp_path / "db", ok=False)
    assert result.exit_code == 1 and "no such file" in result.stderr
    (tmp_path / "empty-folder").mkdir()
    result = cli("index", tmp_path / "empty-folder", "--db", tmp_path / "db", ok=False)
    assert result.exit_code == 1 and "no files to index" in result.stderr
    assert not (tmp_path / "db").exists()  # refused before a store was made


# ---------------------------------------------------------------------------- change -> re-index
def test_change_reindex_and_query(corpus: Path, tmp_path: Path) -> None:
    docs = _copy_corpus(corpus, tmp_path / "docs")
    db = tmp_path / "db"
    cli("index", docs, "--db", db, "-q")
    before = json.loads(cli("info", "--db", db, "--json").stdout)["sentences"]
    assert query_json(db, NEW_FACT_Q[0])[0]["text"].count(NEW_FACT_Q[1]) == 0

    # Edit one file: drop its last paragraph, add a new fact.
    oxygen = docs / "oxygen.txt"
    paragraphs = oxygen.read_text(encoding="utf-8").split("\n\n")
    dropped = paragraphs.pop()
    oxygen.write_text("\n\n".join(paragraphs) + "\n\n" + NEW_FACT, encoding="utf-8")
    out = cli("index", docs, "--db", db, "-q").stdout
    assert "0 new, 1 updated" in out and "unchanged  2" in " ".join(out.split("\n")).replace("│", "")

    top = query_json(db, NEW_FACT_Q[0])[0]
    assert top["doc_id"] == "oxygen.txt" and NEW_FACT_Q[1] in top["text"]
    assert oxygen.read_text(encoding="utf-8")[top["start"] : top["end"]] == top["text"]
    # the dropped paragraph's sentences are gone from the store, not merely outranked
    rows = query_json(db, dropped[:200], "-k", 5)
    assert all(dropped[:60] not in r["text"] for r in rows if r["doc_id"] == "oxygen.txt")
    after = json.loads(cli("info", "--db", db, "--json").stdout)
    assert after["documents"] == 3 and after["sentences"] < before

    # nothing changed: nothing is encoded again
    out = cli("index", docs, "--db", db, "-q").stdout
    assert "0 new, 0 updated" in out
    assert "nothing to encode" in out and "tok/s" not in out  # no "0 tok/s" for a run that encoded nothing
    # a deleted file is removed with --prune
    (docs / "prime_number.md").unlink()
    cli("index", docs, "--db", db, "-q", "--prune")
    assert json.loads(cli("info", "--db", db, "--json").stdout)["documents"] == 2
    assert all(r["doc_id"] != "prime_number.md" for r in query_json(db, EUCLID_Q[0], "-k", 3))
    # a file emptied in place is skipped, and without --prune its last version stays searchable;
    # with --prune it goes too (its stored text no longer exists in the file)
    oxygen.write_bytes(b"")
    out = " ".join(cli("index", docs, "--db", db, "-q").stdout.split())
    assert f"{oxygen}: empty" in out
    assert json.loads(cli("info", "--db", db, "--json").stdout)["documents"] == 2
    cli("index", docs, "--db", db, "-q", "--prune")
    assert json.loads(cli("info", "--db", db, "--json").stdout)["documents"] == 1
    assert all(r["doc_id"] != "oxygen.txt" for r in query_json(db, NEW_FACT_Q[0], "-k", 3))


def test_a_file_indexed_from_two_folders_is_stored_once(excerpt_articles, tmp_path: Path) -> None:
    nest = tmp_path / "nest"
    (nest / "sub").mkdir(parents=True)
    (nest / "sub" / "a.txt").write_text(excerpt_articles[0].text.split("\n\n")[0], encoding="utf-8")
    (nest / "b.txt").write_text(excerpt_articles[1].text.split("\n\n")[0], encoding="utf-8")
    db = tmp_path / "db"
    cli("index", nest, "--db", db, "-q")
    out = " ".join(cli("index", nest / "sub", "--db", db, "-q").stdout.split())
    assert "already indexed as 'sub/a.txt'" in out and "0 new" in out
    info = json.loads(cli("info", "--db", db, "--json").stdout)
    assert info["documents"] == 2
    first = excerpt_articles[0].text.split(". ")[0]
    rows = query_json(db, first, "-k", 2)
    assert len({(r["source"], r["start"], r["end"]) for r in rows}) == len(rows)  # no passage twice


def test_bad_files_are_reported_and_skipped(excerpt_articles, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.txt").write_text(excerpt_articles[0].text.split("\n\n")[0], encoding="utf-8")
    (docs / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(200))
    (docs / "latin1.txt").write_bytes("Caf\xe9 cr\xe8me br\xfbl\xe9e.".encode("latin-1"))
    (docs / "empty.md").write_bytes(b"")
    (docs / "blank.txt").write_text("   \n\n  ")
    db = tmp_path / "db"
    result = cli("index", docs, "--db", db, "-q")
    out = " ".join(result.stdout.split())
    assert "1 new" in out and "skipped 4" in out.replace("│", "")
    for name, reason in [("image.png", "binary"), ("latin1.txt", "undecodable"), ("empty.md", "empty"),
                         ("blank.txt", "empty")]:
        assert f"{docs / name}: {reason}" in out
    info = json.loads(cli("info", "--db", db, "--json").stdout)
    assert info["documents"] == 1
    # --glob narrows the run; the bad files are then not even looked at
    out = cli("index", docs, "--db", db, "-q", "--glob", "*.txt").stdout
    assert "image.png" not in out and "empty.md" not in out and "latin1.txt" in out


# ---------------------------------------------------------------------------- interruption
def test_interrupted_write_stays_invisible_and_next_run_completes(corpus: Path, tmp_path: Path, monkeypatch) -> None:
    """Simulate a crash in the middle of one document's write: half of its sentences are
    stored, then Ctrl-C. Real Chroma throughout; only the moment of the crash is staged."""
    from chromadb.api.models.Collection import Collection

    docs = _copy_corpus(corpus, tmp_path / "docs")
    db = tmp_path / "db"
    real_upsert = Collection.upsert

    def crashing_upsert(self, ids, *args, **kwargs):
        if ids and ids[0].startswith("oxygen.txt:"):
            half = len(ids) // 2
            real_upsert(self, ids[:half], *args, **{k: v[:half] for k, v in kwargs.items()})
            raise KeyboardInterrupt  # what Ctrl-C raises
        return real_upsert(self, ids, *args, **kwargs)

    # one document per write (the index writes a group of documents at once): the crash lands
    # inside oxygen.txt's own write, the files before it are done
    monkeypatch.setattr("landmark_rag.ingest.write.GROUP_DOCS", 1)
    monkeypatch.setattr(Collection, "upsert", crashing_upsert)
    result = cli("index", docs, "--db", db, "-q", ok=False)
    monkeypatch.setattr(Collection, "upsert", real_upsert)
    assert result.exit_code == 130 and "Run the same command again" in result.stderr

    info = json.loads(cli("info", "--db", db, "--json").stdout)
    assert info["incomplete_documents"] == 1  # oxygen's sentences are stored ...
    table = cli("info", "--db", db).stdout  # the label wraps on an 80-column terminal
    assert "incomplete documents (interrupted;" in table and "re-run index)" in table
    rows = query_json(db, OXYGEN_Q[0], "-k", 3)  # ... but no query can see them
    assert rows and all(r["doc_id"] != "oxygen.txt" for r in rows)

    out = cli("index", docs, "--db", db, "-q").stdout
    assert "new" in out and "updated" in out
    info = json.loads(cli("info", "--db", db, "--json").stdout)
    assert info["documents"] == 3 and info["incomplete_documents"] == 0
    assert query_json(db, OXYGEN_Q[0])[0]["doc_id"] == "oxygen.txt"


# ---------------------------------------------------------------------------- model identity
def test_other_model_is_refused(indexed: Path, corpus: Path, tiny_bert_dir: Path) -> None:
    result = cli("index", corpus, "--db", indexed, "--model", tiny_bert_dir, "-q", ok=False)
    assert result.exit_code == 3 and "different model" in result.stderr
    result = cli("index", corpus, "--db", indexed, "--pooling", "landmark", "-q", ok=False)
    assert result.exit_code == 3 and "pooling" in result.stderr
    result = cli("query", "what is oxygen?", "--db", indexed, "--model", tiny_bert_dir, ok=False)
    assert result.exit_code == 3 and "different model" in result.stderr
    # the refusals changed nothing
    assert json.loads(cli("info", "--db", indexed, "--json").stdout)["documents"] == 3


def test_query_loads_the_recorded_model(tiny_bert_dir: Path, excerpt_articles, tmp_path: Path) -> None:
    """A store built with a local model directory is queried without --model, from elsewhere."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text(excerpt_articles[1].text, encoding="utf-8")
    db = tmp_path / "db"
    cli("index", docs, "--db", db, "--model", os.path.relpath(tiny_bert_dir), "--pooling", "landmark", "-q")
    info = json.loads(cli("info", "--db", db, "--json").stdout)
    assert info["model_source"] == str(tiny_bert_dir.resolve()) and info["pooling"] == "landmark"
    assert info["dimension"] == 32
    rows = query_json(db, "plague", "-k", 2)
    assert len(rows) == 2 and all(r["doc_id"] == "a.txt" for r in rows)
    # re-indexing without --model uses the store's model too (no mismatch, nothing to redo)
    assert "0 new, 0 updated" in cli("index", docs, "--db", db, "-q").stdout


def test_moved_model_directory(tiny_bert_dir: Path, excerpt_articles, tmp_path: Path) -> None:
    """A store whose model directory was moved says so, and accepts the new location."""
    from landmark_rag import LandmarkConfig

    model = shutil.copytree(tiny_bert_dir, tmp_path / "model")
    # a named model (landmark_config.json), so its identity does not depend on where it lies
    LandmarkConfig(pooling="landmark", query_pooling="landmark", model_name="tiny-test").save(model)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text(excerpt_articles[2].text, encoding="utf-8")
    db = tmp_path / "db"
    cli("index", docs, "--db", db, "--model", model, "-q")
    moved = model.rename(tmp_path / "moved")
    result = cli("query", "prime", "--db", db, ok=False)
    assert result.exit_code == 1 and "no longer at" in result.stderr
    assert len(query_json(db, "prime", "--model", moved, "-k", 1)) == 1


# ---------------------------------------------------------------------------- server mode
@pytest.fixture
def chroma_server(tmp_path: Path):
    with running_chroma(tmp_path / "server-data") as url:
        yield url


def test_server_mode(chroma_server: str, corpus: Path) -> None:
    doc = corpus / "history" / "black_death.txt"
    out = cli("index", doc, "--db", chroma_server, "-q").stdout
    assert "1 new" in out
    question, _, answer = SIEGE_Q
    rows = query_json(chroma_server, question, "-k", 2)
    assert rows[0]["doc_id"] == "black_death.txt" and answer in rows[0]["text"]
    assert doc.read_text(encoding="utf-8")[rows[0]["start"] : rows[0]["end"]] == rows[0]["text"]
    for mode in ("hybrid", "lexical"):  # the lexical index is built in memory from the server's sentences
        rows = query_json(chroma_server, question, "-k", 2, "--mode", mode)
        assert rows[0]["doc_id"] == "black_death.txt" and answer in rows[0]["text"], mode
    info = json.loads(cli("info", "--db", chroma_server, "--json").stdout)
    assert info["store"] == chroma_server and info["documents"] == 1
    assert "0 new, 0 updated" in cli("index", doc, "--db", chroma_server, "-q").stdout


def test_unreachable_server_is_a_clear_error() -> None:
    result = cli("query", "x", "--db", f"http://127.0.0.1:{free_port()}", ok=False)
    assert result.exit_code == 1 and "cannot open the store" in result.stderr


# ---------------------------------------------------------------------------- console script
def test_console_script_query(indexed: Path) -> None:
    """The installed ``landmark-rag`` entry point, as a user runs it."""
    exe = Path(sys.executable).parent / "landmark-rag"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-c", "from landmark_rag.cli import main; main()"]
    question, doc_id, answer = OXYGEN_Q
    proc = subprocess.run([*cmd, "query", question, "--db", str(indexed), "--json", "-k", "1"],
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)
    assert row["doc_id"] == doc_id and answer in row["text"]


@pytest.mark.parametrize("command", [[], ["index"], ["query"], ["info"], ["demo"], ["eval"], ["train"]])
def test_help_uses_plain_value_labels(command: list[str]) -> None:
    """Values read TEXT/INTEGER/PATH as in other click tools; flags (and --help) carry no label."""
    got = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert got.exit_code == 0, got.output
    assert not re.search(r"<(bool|str|int|float|path|file|dir|list\[)", got.output, flags=re.IGNORECASE), got.output
    for line in got.output.splitlines():
        if re.search(r"--(help|quiet|json|prune)\b", line):
            assert not re.search(r"\b(BOOLEAN|TEXT|INTEGER)\b", line), line
    if command == ["index"]:
        assert re.search(r"paths\.\.\.\s+PATH\b", got.output) and re.search(r"--batch-size\s+INTEGER", got.output)


def test_version() -> None:
    import tomllib

    from landmark_rag import __version__

    declared = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]["version"]
    assert __version__ == declared
    assert cli("--version").stdout.strip() == f"landmark-rag {declared}"


def test_missing_collection_lists_the_ones_there(indexed: Path) -> None:
    for command in (["query", "anything"], ["info"]):
        result = cli(*command, "--db", indexed, "--collection", "notes", ok=False)
        assert result.exit_code == 1
        assert "no collection 'notes'" in result.stderr and "it has: landmark" in result.stderr
        assert "--collection NAME" in result.stderr and "__documents" not in result.stderr


def test_cosine_is_one_quantity_in_every_mode_and_adapter(indexed: Path) -> None:
    """``score`` ranks one question's passages (the fused score: the top is always 1 under
    normalised linear fusion); ``cosine`` is the query's cosine with the best hit sentence's
    stored vector, the same number from the CLI, LangChain and LlamaIndex."""
    import chromadb
    from llama_index.core.schema import NodeWithScore, QueryBundle
    from llama_index.vector_stores.chroma import ChromaVectorStore

    from landmark_rag.langchain import LandmarkRetriever
    from landmark_rag.llama_index import BoundaryExpansionPostprocessor, LandmarkEmbedding, LandmarkHybridRetriever

    question = OXYGEN_Q[0]
    hybrid = query_json(indexed, question, "-k", 3, "--mode", "hybrid")
    dense = query_json(indexed, question, "-k", 3, "--mode", "dense")
    assert hybrid[0]["score"] == 1.0 and 0 < hybrid[0]["cosine"] < 1
    assert [r["score"] for r in dense] == [r["cosine"] for r in dense]  # dense: the score is the cosine
    by_span = {(r["doc_id"], r["first_sentence"], r["last_sentence"]): r["cosine"] for r in dense}
    for row in hybrid:
        key = (row["doc_id"], row["first_sentence"], row["last_sentence"])
        if key in by_span:
            assert row["cosine"] == pytest.approx(by_span[key], abs=1e-5)
    assert query_json(indexed, "Boyle combustion", "-k", 1, "--mode", "lexical")[0]["cosine"] is None
    text = cli("query", question, "--db", indexed, "-k", 1).stdout
    assert f"cosine {hybrid[0]['cosine']:.3f}" in text

    lc = LandmarkRetriever(persist_directory=str(indexed), k=3).invoke(question)
    assert [round(d.metadata["cosine"], 6) for d in lc] == pytest.approx([r["cosine"] for r in hybrid], abs=1e-5)

    store = ChromaVectorStore(chroma_collection=chromadb.PersistentClient(path=str(indexed)).get_collection("landmark"))
    embed = LandmarkEmbedding.for_vector_store(store)
    hits = LandmarkHybridRetriever(store, embed, similarity_top_k=8).retrieve(question)
    passages = BoundaryExpansionPostprocessor(vector_store=store, embed_model=embed, top_n=3).postprocess_nodes(
        [NodeWithScore(node=h.node, score=h.score) for h in hits], QueryBundle(question)
    )
    assert passages[0].node.metadata["cosine"] == pytest.approx(hybrid[0]["cosine"], abs=1e-5)
    assert "cosine" in passages[0].node.excluded_llm_metadata_keys
