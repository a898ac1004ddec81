"""One local store, two processes: a long-lived reader searching while ``landmark-rag index``
writes. The reader must never see a half-written or duplicated document, never fail, and
must see (and find by search) what the writer added without being restarted.
"""

from __future__ import annotations

import json
import subprocess
import sys

from faultkit import HERE, cli, corpus_versions, env, paragraphs, write_corpus


def test_reader_process_sees_writer_process_changes(tmp_path, tiny_bert_dir):
    v1, v2 = corpus_versions(6)
    folder, db, stop = tmp_path / "corpus", tmp_path / "db", tmp_path / "stop"
    write_corpus(folder, v1)
    args = ["index", str(folder), "--db", str(db), "--model", str(tiny_bert_dir), "-q"]
    assert cli(*args).returncode == 0

    reader = subprocess.Popen(
        [sys.executable, str(HERE / "reader_probe.py"), str(db), str(stop), "new.txt"],
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
    final = lines[-1]
    assert final["errors"] == [], final["errors"][:5]
    assert final["observations"] >= 1
    for view in lines[:-1]:  # every intermediate view: each document in exactly one complete version
        for doc_id, text in view["texts"].items():
            assert text in (v1.get(doc_id), v2.get(doc_id), new_text if doc_id == "new.txt" else None), doc_id
    assert final["final"] == {**v2, "new.txt": new_text}
    assert final["new_doc_found"], "the reader's searches ran on a stale index"
