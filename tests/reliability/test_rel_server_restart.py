"""A Chroma server (``chroma run`` on 127.0.0.1) stopped and restarted under a reader.

While the server is down every query fails with an exception (never a wrong or partial
answer) and the CLI says so in one line (exit 1); once it is back on the same data, the same
store object answers exactly as before, with no reopening, and sees later writes.
"""

from __future__ import annotations

import signal
import threading
import time

import numpy as np
from reliability.faultkit import ChromaServer, cli, free_port, paragraphs

from landmark_rag.segment import segment_sentences
from landmark_rag.store import ChromaSentenceStore, make_client
from landmark_rag.store.lexical import StoreLexicalIndex
from landmark_rag.types import EncodedDocument


def encoded(text: str, doc_id: str, seed: int) -> EncodedDocument:
    sents = segment_sentences(text, doc_id=doc_id)
    vecs = np.random.default_rng(seed).normal(size=(len(sents), 16)).astype(np.float32)
    return EncodedDocument(text, sents, vecs / np.linalg.norm(vecs, axis=1, keepdims=True), doc_id)


def test_server_stopped_and_restarted_during_queries(tmp_path):
    server = ChromaServer(tmp_path / "data", free_port())
    server.start()
    try:
        writer = ChromaSentenceStore.open(server.url, "landmark", identity={"model_name": "random-16"})
        docs = [encoded(p, f"p{i}", i) for i, p in enumerate(paragraphs()[:4])]
        for d in docs:
            writer.add_document(d)
        reader = ChromaSentenceStore.open(collection_name="landmark", client=make_client(server.url), create=False)
        probe = docs[1].embeddings[2]
        expected = [(h.sentence.doc_id, h.sentence.index) for h in reader.nearest(probe, 10)]
        assert expected[0] == ("p1", 2)
        # the BM25 half of hybrid search: its cache lives in this process (server store)
        lex = StoreLexicalIndex(reader)
        words = docs[2].sentences[0].text
        lexical = [(h.sentence.doc_id, h.sentence.index) for h in lex.query(words, 10)]
        assert lexical[0] == ("p2", 0)

        outcomes: list[str] = []
        lexical_outcomes: list[str] = []
        done = threading.Event()

        def query_loop() -> None:
            while not done.is_set():
                try:
                    got = [(h.sentence.doc_id, h.sentence.index) for h in reader.nearest(probe, 10)]
                    outcomes.append("ok" if got == expected else f"WRONG {got}")
                except Exception as exc:  # noqa: BLE001 - counted: a failure must be an exception
                    outcomes.append(f"error {type(exc).__name__}")
                try:
                    got = [(h.sentence.doc_id, h.sentence.index) for h in lex.query(words, 10)]
                    lexical_outcomes.append("ok" if got == lexical else f"WRONG {got}")
                except Exception as exc:  # noqa: BLE001 - counted: a failure must be an exception
                    lexical_outcomes.append(f"error {type(exc).__name__}")
                time.sleep(0.05)

        thread = threading.Thread(target=query_loop)
        thread.start()
        time.sleep(0.5)
        server.stop(signal.SIGKILL)
        time.sleep(1.0)
        down_cli = cli("info", "--db", server.url, timeout=120)
        server.start()
        time.sleep(1.0)
        done.set()
        thread.join(timeout=60)

        from collections import Counter

        print(f"FAULT server restart: {len(outcomes)} queries, {dict(Counter(outcomes))}; "
              f"BM25 queries {dict(Counter(lexical_outcomes))}; info while down: exit {down_cli.returncode}")
        for seen in (outcomes, lexical_outcomes):
            assert not [o for o in seen if o.startswith("WRONG")]
            first_error = next(i for i, o in enumerate(seen) if o.startswith("error"))
            assert "ok" in seen[:first_error]  # answered before the stop
            assert seen[-1] == "ok"  # and again after the restart, same object, no reopening
        assert down_cli.returncode == 1
        lines = [line for line in down_cli.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: cannot open the store"), down_cli.stderr

        # the restarted server has everything that was committed, and takes new writes
        assert [(h.sentence.doc_id, h.sentence.index) for h in reader.nearest(probe, 10)] == expected
        late = encoded(paragraphs()[5], "late", 99)
        writer.add_document(late)
        assert reader.nearest(late.embeddings[0], 1)[0].sentence.doc_id == "late"
        assert lex.query(late.sentences[0].text, 1)[0].sentence.doc_id == "late"  # the cache re-synced
        assert reader.count_sentences() == sum(len(d.sentences) for d in [*docs, late])
    finally:
        server.stop()
