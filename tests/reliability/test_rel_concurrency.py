"""One local store, two processes: a long-lived reader searching while ``landmark-rag index``
writes. The reader must never see a half-written or duplicated document, never fail, and
must see (and find by search) what the writer added without being restarted.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from reliability.faultkit import HERE, cli, corpus_versions, env, in_process, paragraphs, write_corpus


def run_reader_and_writer(tmp_path, model, *probe_args: str) -> tuple[dict, list[dict], dict, str]:
    """Index v1; start the reader; index v2 plus a new file; stop the reader; its report."""
    v1, v2 = corpus_versions(6)
    folder, db, stop = tmp_path / "corpus", tmp_path / "db", tmp_path / "stop"
    write_corpus(folder, v1)
    args = ["index", str(folder), "--db", str(db), "--model", str(model), "-q"]
    first = in_process(*args)  # in this process: only the writer that runs beside the reader is a process
    assert first.exit_code == 0, first.output

    reader = subprocess.Popen(
        [sys.executable, str(HERE / "reader_probe.py"), str(db), str(stop), "new.txt", *probe_args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(),
    )
    try:
        # the writer replaces every document and adds one while the reader searches
        new_text = paragraphs()[8]
        write_corpus(folder, {**v2, "new.txt": new_text})
        writer = cli(*args, "--batch-size", "1")
        assert writer.returncode == 0, writer.stderr
        stop.touch()
        out, err = reader.communicate(timeout=300)
    finally:
        if reader.poll() is None:
            reader.kill()
    assert reader.returncode == 0, err[-3000:]
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    return lines[-1], lines[:-1], {**v2, "new.txt": new_text}, v1


def test_reader_process_sees_writer_process_changes(tmp_path, tiny_bert_dir):
    final, views, expected, v1 = run_reader_and_writer(tmp_path, tiny_bert_dir)
    print(f"FAULT concurrent reader: {final['observations']} observations, {len(final['errors'])} errors, "
          f"new document found by search: {final['new_doc_found']}")
    assert final["errors"] == [], final["errors"][:5]
    assert final["observations"] >= 1
    for view in views:  # every intermediate view: each document in exactly one complete version
        for doc_id, text in view["texts"].items():
            assert text in (v1.get(doc_id), expected[doc_id]), doc_id
    assert final["final"] == expected
    assert final["new_doc_found"], "the reader's searches ran on a stale index"


@pytest.mark.slow
def test_reader_without_reopen_goes_stale(tmp_path, tiny_bert_dir):
    """Why the store reopens: the same reader without it (Chroma's behaviour, measured)."""
    final, _, expected, _ = run_reader_and_writer(tmp_path, tiny_bert_dir, "--no-refresh")
    print(f"FAULT reader without reopen: {final['observations']} observations, errors {final['errors'][:2]}, "
          f"final view == the writer's corpus: {final['final'] == expected}, "
          f"new document found by search: {final['new_doc_found']}")
    assert final["errors"] or not final["new_doc_found"] or final["final"] != expected
