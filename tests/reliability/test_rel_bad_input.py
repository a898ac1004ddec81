"""Hostile and odd input: escape sequences in documents, unusable paths, hidden binary, empty
documents, and a model whose weights differ under the same name.

The CLI is driven in-process through Typer's CliRunner on the tiny random BERT (structure,
not quality, is under test); stores are real Chroma PersistentClients.
"""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest
from reliability.faultkit import paragraphs
from typer.testing import CliRunner

from landmark_rag.cli import _register, app
from landmark_rag.ingest import BadFileError, decode_bytes, discover_files
from landmark_rag.render import sanitize
from landmark_rag.store import ChromaSentenceStore, StoreMismatchError

_register()
RUNNER = CliRunner()

#: What an attacker puts in a document: clipboard write (OSC 52), window title, screen clear,
#: colour, an 8-bit CSI, a carriage return that would overwrite the line, a bell.
HOSTILE = (
    "Payload one \x1b]52;c;cm0gLXJmIH4=\x07is here. Title \x1b]0;pwned\x1b\\changed. "
    "Screen \x1b[2J\x1b[Hcleared and \x1b[31mred\x1b[0m text. Eight-bit \x9b31m CSI. "
    "Overwrite\rfake line. Bell\x07 end."
)


def cli(*args: object):
    return RUNNER.invoke(app, [str(a) for a in args])


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("a\x1b]52;c;ZWNobyBoaQ==\x07b", "ab"),  # OSC 52 clipboard write, BEL-terminated
        ("x\x1b]0;title\x1b\\y", "xy"),  # window title, ST-terminated
        ("p\x1b[2J\x1b[1;31mred\x1b[0m q", "pred q"),  # CSI
        ("c\r\nd\re\x00f\x9b31mg", "c\ndefg"),  # CRLF kept as a line break; CR, NUL, 8-bit CSI gone
        ("x\x1b]0;no terminator", "x0;no terminator"),  # unterminated: only the introducer goes
        ("tab\tand\nnewline, é, 日本", "tab\tand\nnewline, é, 日本"),  # text untouched
    ],
)
def test_sanitize(raw: str, clean: str) -> None:
    assert sanitize(raw) == clean


@pytest.fixture()
def hostile_store(tmp_path, tiny_bert_dir):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "evil\x1b]0;name\x07.txt").write_text(HOSTILE + " " + paragraphs()[0], encoding="utf-8")
    db = tmp_path / "db"
    result = cli("index", folder, "--db", db, "--model", tiny_bert_dir, "-q")
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    return db


def test_query_prints_no_control_characters_but_json_keeps_them(hostile_store) -> None:
    shown = cli("query", "Payload title screen", "--db", hostile_store, "-k", "5")
    assert shown.exit_code == 0, shown.output
    assert not any(ch in shown.stdout for ch in "\x1b\x07\x9b\x00\r"), repr(shown.stdout[:300])
    expected = ("Payload one is here. Title changed. Screen cleared and red text. Eight-bit  CSI. "
                "Overwritefake line. Bell end.")
    assert expected in shown.stdout  # the text itself is kept, the sequences are gone whole
    assert "docs/evil.txt" in shown.stdout  # so is the file name, cleaned

    as_json = cli("query", "Payload title screen", "--db", hostile_store, "-k", "5", "--json")
    assert as_json.exit_code == 0
    raw = as_json.stdout
    assert not any(ord(ch) < 32 and ch != "\n" or 0x7F <= ord(ch) <= 0x9F for ch in raw)  # all escaped
    passages = json.loads(raw)
    texts = "".join(p["text"] for p in passages)
    assert "\x1b]52;c;cm0gLXJmIH4=\x07" in texts and "\x9b31m" in texts  # exact data round-trips


def test_unusable_paths_are_reported_not_dropped(tmp_path, tiny_bert_dir) -> None:
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "good.txt").write_text(paragraphs()[1], encoding="utf-8")
    os.symlink("loop", folder / "loop")
    os.symlink("nowhere.txt", folder / "dangling.txt")
    os.mkfifo(folder / "pipe.txt")
    os.symlink(folder / "sub", folder / "linked-folder")
    skipped: list = []
    files = discover_files([folder], skipped=skipped)
    assert [f.doc_id for f in files] == ["good.txt"]
    reasons = {s.path.name: s.reason for s in skipped}
    assert reasons == {
        "dangling.txt": "dangling symbolic link (to nowhere.txt)",
        "linked-folder": "symbolic link to a folder (not followed)",
        "loop": "symbolic link loop",
        "pipe.txt": "not a regular file (named pipe)",
    }
    db = tmp_path / "db"
    result = cli("index", folder, "--db", db, "--model", tiny_bert_dir, "-q")  # the FIFO is never opened
    assert result.exit_code == 0, result.output
    for name, reason in reasons.items():
        assert f"skipped {folder / name}: {reason}" in result.stdout
    loop = cli("index", folder / "loop", "--db", db, "--model", tiny_bert_dir)
    assert loop.exit_code == 1 and loop.exception is None or isinstance(loop.exception, SystemExit)
    assert f"{folder / 'loop'}: symbolic link loop" in loop.output
    fifo = cli("index", folder / "pipe.txt", "--db", db, "--model", tiny_bert_dir)
    assert fifo.exit_code == 1 and "not a regular file (named pipe)" in fifo.output


def test_nul_byte_after_the_sniffed_head_is_binary() -> None:
    data = ("plain text line\n" * 1000).encode() + b"\x00\x01\x02" + b"more text"
    assert len(data) > 8192
    with pytest.raises(BadFileError, match="binary"):
        decode_bytes(data)


def test_empty_langchain_document_is_refused_and_blank_text_embeds(tmp_path, tiny_bert_dir) -> None:
    from langchain_core.documents import Document

    from landmark_rag.langchain import LandmarkEmbeddings, LandmarkRetriever

    emb = LandmarkEmbeddings(model_name=str(tiny_bert_dir))
    retriever = LandmarkRetriever(embeddings=emb, persist_directory=str(tmp_path / "db"))
    docs = [Document(page_content=paragraphs()[2], id="fine"), Document(page_content="  \n", id="blank")]
    with pytest.raises(ValueError, match=r"document 1 \(id 'blank'\) has no text"):
        retriever.add_documents(docs)
    assert retriever.store.documents(include_incomplete=True) == {}  # nothing was written
    vecs = np.asarray(emb.embed_documents(["", "   ", "A real sentence."]))
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)  # no zero vector
    np.testing.assert_allclose(vecs[0], vecs[1], atol=1e-6)


def test_same_name_other_weights_is_refused(tmp_path, tiny_bert_dir, tiny_encoder) -> None:
    from landmark_rag.encode import LandmarkEncoder

    original = tiny_encoder(pooling="landmark")
    # a "fine-tune" saved under the same model name: one weight changed
    tuned_dir = tmp_path / "tuned"
    shutil.copytree(tiny_bert_dir, tuned_dir)
    from safetensors.torch import load_file, save_file

    weights = load_file(tuned_dir / "model.safetensors")
    first = next(iter(weights))
    weights[first] = weights[first] + 0.01
    save_file(weights, tuned_dir / "model.safetensors", metadata={"format": "pt"})
    tuned = LandmarkEncoder.from_pretrained(tuned_dir, device="cpu", pooling="landmark",
                                            model_name=original.config.model_name)
    assert tuned.config.model_name == original.config.model_name
    assert tuned.config.weights_fingerprint != original.config.weights_fingerprint

    db = tmp_path / "db"
    ChromaSentenceStore.open(db, "tuned", identity=original.config.identity())
    with pytest.raises(StoreMismatchError, match="weights_fingerprint"):
        ChromaSentenceStore.open(db, "tuned", identity=tuned.config.identity())

    # the same weights elsewhere (a moved directory, a reinstalled package) are the same model
    moved = tmp_path / "moved"
    shutil.copytree(tiny_bert_dir, moved)
    again = LandmarkEncoder.from_pretrained(moved, device="cpu", pooling="landmark",
                                            model_name=original.config.model_name)
    ChromaSentenceStore.open(db, "tuned", identity=again.config.identity())

    # a store written before fingerprints existed still opens with any weights of that name
    legacy = {k: v for k, v in original.config.identity().items() if k != "weights_fingerprint"}
    ChromaSentenceStore.open(db, "legacy", identity=legacy)
    ChromaSentenceStore.open(db, "legacy", identity=tuned.config.identity())
