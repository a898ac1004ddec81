"""Build ``release_store.zip`` and ``release_store.json`` with a released landmark-rag.

Run it with the release's code on the path (not this checkout's), e.g. for commit 64e6a1b:

    git archive 64e6a1b src | tar -x -C /tmp/release
    LANDMARK_RAG_CPU_BF16=0 LANDMARK_RAG_ONNX=0 PYTHONPATH=/tmp/release/src \
        python tests/data/make_release_store.py

It writes a small store (three SQuAD excerpt articles through ``LandmarkIndex.add_texts``,
one of them replaced by a longer version, and the lexical cache a hybrid search leaves in the
store folder), zips it, and records what that release answers: the searches of a few
questions in every mode, the manifest records and what ``landmark-rag info`` reads. The test
``tests/store/test_release_store.py`` checks that the current code reads the same.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
QUESTIONS = (
    "What is the most abundant element in the Earth's crust?",
    "Who proved that there are infinitely many primes?",
    "How many people died of the Black Death in Europe?",
    "What is a Mersenne prime?",
)


def main() -> None:
    from landmark_rag import LandmarkIndex
    from landmark_rag.datasets import read_squad

    articles = read_squad(HERE / "squad_excerpt.json")
    work = Path(tempfile.mkdtemp())
    db = work / "store"
    index = LandmarkIndex.open(db)
    first = articles[0].text.split("\n\n")[0]
    index.add_texts([first], ids=[articles[0].title], metadatas=[{"title": articles[0].title, "part": 1}])
    index.add_texts(
        [a.text for a in articles], ids=[a.title for a in articles],
        metadatas=[{"title": a.title, "tags": ["squad", "excerpt"]} for a in articles],
    )
    expected = {
        "texts": {a.title: a.text for a in articles},
        "metadatas": {a.title: {"title": a.title, "tags": ["squad", "excerpt"]} for a in articles},
        "searches": {
            mode: {q: [_passage(p) for p in index.search(q, k=3, mode=mode)] for q in QUESTIONS}
            for mode in ("hybrid", "dense", "lexical")
        },
        "documents": index.store.documents(include_incomplete=True),
        "sentences": index.store.count_sentences(),
        "identity": index.store.identity(),
    }
    info = subprocess.run(
        [sys.executable, "-c", "from landmark_rag.cli import main; main()", "info", "--db", str(db), "--json"],
        check=True, capture_output=True, text=True,
    )
    expected["info"] = {k: v for k, v in json.loads(info.stdout).items() if k not in ("store", "gguf_cache")}
    with zipfile.ZipFile(HERE / "release_store.zip", "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for path in sorted(db.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(db).as_posix())
    (HERE / "release_store.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
    shutil.rmtree(work)


def _passage(p) -> dict:
    return {"id": p.id, "doc_id": p.doc_id, "start": p.start, "end": p.end, "score": p.score, "text": p.text}


if __name__ == "__main__":
    main()
