"""Slow CLI checks (``pytest -m slow``): the README's demo, and a run killed for real.

The default suite stages an interruption in-process; here a real ``landmark-rag index``
process is SIGKILLed in the middle of its work on real SQuAD articles, which is the
failure a user actually meets (a closed laptop, an OOM kill).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from landmark_rag.cli import _register, app

pytestmark = pytest.mark.slow
_register()


def _console() -> list[str]:
    exe = Path(sys.executable).parent / "landmark-rag"
    return [str(exe)] if exe.exists() else [sys.executable, "-c", "from landmark_rag.cli import main; main()"]


def test_demo_answers_its_sample_questions() -> None:
    result = CliRunner().invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    m = re.search(r"top passage for (\d+) of (\d+) questions, in the top 3 for (\d+) of", result.stdout)
    found, total, found_k = map(int, m.groups())
    # the corpus is held-out text: the figure is what it is, but it must be the one measured
    assert "never saw" in result.stdout and "not from SQuAD" in result.stdout
    assert total >= 5 and found * 2 > total and found <= found_k <= total
    assert len(re.findall(r"#1 .*contains '", result.stdout)) == found  # the printed figure counts the marks


def test_killed_index_run_hides_partial_work_and_next_run_completes(squad_articles, tmp_path: Path) -> None:
    from landmark_rag.store import ChromaSentenceStore

    docs = tmp_path / "articles"
    docs.mkdir()
    chosen = squad_articles[:6]
    for art in chosen:
        (docs / f"{art.title}.txt").write_text(art.text, encoding="utf-8")
    db = tmp_path / "db"
    proc = subprocess.Popen([*_console(), "index", str(docs), "--db", str(db)], stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True, bufsize=1)
    # the progress bar (stderr) reports each stored document; kill once the first is done
    buf = ""
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        ch = proc.stderr.read(1)
        if not ch:
            break
        buf += ch
        if re.search(r"\b[1-5]/6\b", buf):
            break
    assert proc.poll() is None, f"index finished before it could be killed:\n{buf[-2000:]}"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    store = ChromaSentenceStore.open(db, create=False)
    complete = store.documents()
    assert 1 <= len(complete) < len(chosen)
    for doc_id, md in complete.items():  # every visible document is whole
        assert len(store.read_document(doc_id).sentences) == md["n_sentences"]
    runner = CliRunner()
    got = runner.invoke(app, ["query", "When was it founded?", "--db", str(db), "--json", "-k", "20"])
    assert got.exit_code == 0, got.output
    assert {row["doc_id"] for row in json.loads(got.stdout)} <= set(complete)
    del store

    again = subprocess.run([*_console(), "index", str(docs), "--db", str(db), "-q"], capture_output=True, text=True,
                           check=False)
    assert again.returncode == 0, again.stderr
    redone = len(chosen) - len(complete)
    updated = int(re.search(r"(\d+) updated", again.stdout).group(1))
    assert f"{redone - updated} new" in again.stdout
    assert re.search(r"unchanged\s+" + str(len(complete)), again.stdout)
    info = json.loads(runner.invoke(app, ["info", "--db", str(db), "--json"]).stdout)
    assert info["documents"] == len(chosen) and info["incomplete_documents"] == 0
