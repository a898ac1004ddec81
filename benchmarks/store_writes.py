"""What the embedded Chroma store costs per sentence written, with no encoder in the way.

On a GPU the encoder runs at millions of tokens a second, so `landmark-rag index` is bound by
the store. This measures the store side alone, on any machine. SQuAD part A's articles are
segmented with the default segmenter, and each sentence gets a random unit vector (the
store's cost does not depend on the values). A new store is written each round, and the
best of ``--rounds`` is reported:

- ``store.add_document``: the package's write path per document, with the manifest's
  protocol around the sentence upserts (what `landmark-rag index` does after encoding);
- ``raw upsert``: one `collection.upsert` per document, of the same ids, vectors, metadata and
  text, with no manifest; then without the text, without the metadata, and the vectors alone;
- ``raw upsert, no full-text index``: the same, into a collection whose `Schema` switches off
  Chroma's full-text index on the text;
- ``one-record upserts``: milliseconds per write call, whatever its size;
- ``write_documents``: the package's write path itself (``ingest/write.py``: groups of up to 32
  documents or 16,384 tokens, each stored with ``store.add_documents``, the protocol run once
  per group), fed by an encoder that hands back the vectors above;
- the first two again with each paragraph a document of its own (short documents, where the
  protocol's cost per document weighs most); then the protocol's calls made once per group of
  ``--group`` documents by hand (the same reads and writes, each covering the whole group: the
  sizing that preceded the grouped write), ``store.add_documents`` per group of ``--group``
  documents, and ``write_documents``, on the same documents in the same run.

    python benchmarks/store_writes.py                 # 24 articles, 3 rounds
    python benchmarks/store_writes.py --articles 6 --rounds 1

Data: data/squad-v1.1-dev-part-a.json (CC BY-SA 4.0).
"""

from __future__ import annotations

import argparse
import atexit
import json
import platform
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from landmark_rag.segment.segment import sentence_spans
from landmark_rag.store import ChromaSentenceStore
from landmark_rag.store.schema import sentence_id, sentence_metadata
from landmark_rag.types import EncodedDocument

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data" / "squad-v1.1-dev-part-a.json"
DIM = 384


def documents(n: int, paragraphs: bool = False) -> list[EncodedDocument]:
    """The first ``n`` articles joined per article (or each paragraph a document of its own),
    segmented, with random unit vectors."""
    rng = np.random.default_rng(0)
    out = []
    arts = json.loads(DATA.read_text(encoding="utf-8"))["data"][:n]
    texts = (
        [p["context"] for a in arts for p in a["paragraphs"]]
        if paragraphs
        else ["\n\n".join(p["context"] for p in a["paragraphs"]) for a in arts]
    )
    for i, text in enumerate(texts):
        doc_id = f"doc-{i}"
        sents = sentence_spans(text, None, doc_id)
        vecs = rng.standard_normal((len(sents), DIM)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        out.append(EncodedDocument(text=text, sentences=sents, embeddings=vecs, doc_id=doc_id))
    return out


def _collection(root: Path, fts: bool = True) -> Any:
    import chromadb

    client = chromadb.PersistentClient(path=tempfile.mkdtemp(dir=root))
    if fts:
        return client.get_or_create_collection("raw", metadata={"hnsw:space": "cosine"}, embedding_function=None)
    from chromadb import FtsIndexConfig, K, Schema, VectorIndexConfig

    schema = Schema()
    schema.create_index(config=VectorIndexConfig(space="cosine", embedding_function=None))
    schema.delete_index(config=FtsIndexConfig(), key=K.DOCUMENT)
    return client.get_or_create_collection("raw", embedding_function=None, schema=schema)


def raw_run(docs: list[EncodedDocument], root: Path, *, text: bool, metadata: bool, fts: bool = True) -> Callable[[], None]:
    rows = [
        (
            [sentence_id(d.doc_id or "", s.index) for s in d.sentences],
            d.embeddings,
            [sentence_metadata(s) for s in d.sentences],
            [s.text for s in d.sentences],
        )
        for d in docs
    ]

    def run() -> None:
        col = _collection(root, fts)
        for ids, vecs, mds, texts in rows:
            kwargs: dict[str, Any] = {"ids": ids, "embeddings": vecs}
            if metadata:
                kwargs["metadatas"] = mds
            if text:
                kwargs["documents"] = texts
            col.upsert(**kwargs)

    return run


def grouped_protocol_run(docs: list[EncodedDocument], root: Path, group: int) -> Callable[[], None]:
    """The manifest protocol's calls (``store/manifest.py``: read the records and any sentences
    without one, announce, write the sentences, commit with the text, move the generation,
    read again, clean up) made once per group of documents, with the same record shapes."""
    import chromadb

    from landmark_rag.store.schema import COMPLETE, DIRTY, DOC_HASH, DOC_ID, N_SENTENCES, STATE, VERSION, WRITING

    def run() -> None:
        client = chromadb.PersistentClient(path=tempfile.mkdtemp(dir=root))
        col = client.get_or_create_collection("sentences", metadata={"hnsw:space": "cosine"}, embedding_function=None)
        manifest = client.get_or_create_collection("sentences-manifest", embedding_function=None)
        for g in range(0, len(docs), group):
            part = docs[g : g + group]
            ids = [d.doc_id or "" for d in part]
            zero = [[0.0]] * len(part)
            manifest.get(ids=ids)
            col.get(where={DOC_ID: {"$in": ids}}, include=["metadatas"])
            records = [{DOC_HASH: "h", STATE: WRITING, N_SENTENCES: len(d.sentences), VERSION: "v", DIRTY: True}
                       for d in part]
            manifest.upsert(ids=ids, embeddings=zero, metadatas=records, documents=[""] * len(part))
            col.upsert(
                ids=[sentence_id(d.doc_id or "", s.index, "v") for d in part for s in d.sentences],
                embeddings=np.concatenate([d.embeddings for d in part]),
                metadatas=[sentence_metadata(s, "h", None, "v") for d in part for s in d.sentences],
                documents=[s.text for d in part for s in d.sentences],
            )
            manifest.upsert(ids=ids, embeddings=zero, metadatas=[{**r, STATE: COMPLETE} for r in records],
                            documents=[d.text for d in part])
            col.modify(metadata={"generation": f"{g}"})
            manifest.get(ids=ids)
            col.get(where={DOC_ID: {"$in": ids}}, include=["metadatas"])
            manifest.update(ids=ids, metadatas=[{DIRTY: None}] * len(part))

    return run


def store_run(docs: list[EncodedDocument], root: Path) -> Callable[[], None]:
    def run() -> None:
        store = ChromaSentenceStore.open(Path(tempfile.mkdtemp(dir=root)))
        for d in docs:
            store.add_document(d)

    return run


def grouped_store_run(docs: list[EncodedDocument], root: Path, group: int) -> Callable[[], None]:
    """``store.add_documents`` for each ``group`` documents: the protocol once per group."""

    def run() -> None:
        store = ChromaSentenceStore.open(Path(tempfile.mkdtemp(dir=root)))
        for g in range(0, len(docs), group):
            store.add_documents(docs[g : g + group])

    return run


def write_path_run(docs: list[EncodedDocument], root: Path) -> Callable[[], None]:
    """The package's write path (``write_documents``: its own groups, skip decisions, report),
    with an encoder that hands back the prepared vectors, so only storing costs time."""
    from landmark_rag.ingest import DocumentEncoder, SourceDocument, write_documents

    by_id = {d.doc_id: d for d in docs}
    sources = [SourceDocument(d.doc_id or "", d.text) for d in docs]
    encoder = DocumentEncoder(lambda texts, ids: [by_id[i] for i in ids])
    sentences = sum(len(d.sentences) for d in docs)

    def run() -> None:
        store = ChromaSentenceStore.open(Path(tempfile.mkdtemp(dir=root)))
        report = write_documents(store, sources, lambda: encoder, errors="raise")
        if report.sentences != sentences or store.count_sentences() != sentences:
            raise RuntimeError(f"wrote {store.count_sentences()} of {sentences} sentences")

    return run


def per_call_ms(root: Path, calls: int = 50) -> float:
    """Milliseconds per one-record upsert (vector, metadata, text) into a fresh collection."""
    col = _collection(root)
    vec = np.ones((1, DIM), dtype=np.float32) / np.sqrt(DIM)
    t0 = time.perf_counter()
    for i in range(calls):
        col.upsert(ids=[f"r{i}"], embeddings=vec, metadatas=[{"i": i}], documents=[f"record {i}"])
    return (time.perf_counter() - t0) / calls * 1000


def best(fn: Callable[[], None], rounds: int) -> float:
    out = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--articles", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--group", type=int, default=32, help="documents per group in the grouped-protocol and store.add_documents rows")
    args = ap.parse_args()
    import chromadb

    docs = documents(args.articles)
    paras = documents(args.articles, paragraphs=True)
    n = sum(len(d.sentences) for d in docs)
    root = Path(tempfile.mkdtemp(prefix="store-writes-"))
    atexit.register(shutil.rmtree, root, True)
    runs: dict[str, Callable[[], None]] = {
        "store.add_document (manifest protocol + upserts)": store_run(docs, root),
        "raw upsert: vectors, metadata, text": raw_run(docs, root, text=True, metadata=True),
        "raw upsert: vectors, metadata": raw_run(docs, root, text=False, metadata=True),
        "raw upsert: vectors, text": raw_run(docs, root, text=True, metadata=False),
        "raw upsert: vectors alone": raw_run(docs, root, text=False, metadata=False),
        "raw upsert: vectors, metadata, text, no full-text index": raw_run(
            docs, root, text=True, metadata=True, fts=False
        ),
        "write_documents (store.add_documents per group)": write_path_run(docs, root),
    }
    short = {
        "store.add_document, each paragraph a document": store_run(paras, root),
        "raw upsert: vectors, metadata, text, each paragraph a document": raw_run(paras, root, text=True, metadata=True),
        f"the protocol's calls once per {args.group} paragraphs": grouped_protocol_run(paras, root, args.group),
        f"store.add_documents per {args.group} paragraphs": grouped_store_run(paras, root, args.group),
        "write_documents (store.add_documents per group), each paragraph a document": write_path_run(paras, root),
    }
    rates, protocol = {}, []
    print(f"{platform.machine()}, chromadb {chromadb.__version__}, {len(docs)} documents ({len(paras)} paragraphs), "
          f"{n} sentences, best of {args.rounds}")
    print("| write | documents | seconds | sentences/s |\n|---|---:|---:|---:|")
    for group, written in ((runs, docs), (short, paras)):
        sentences = sum(len(d.sentences) for d in written)
        seconds = []
        for label, fn in group.items():
            seconds.append(best(fn, args.rounds))
            rates[label] = sentences / seconds[-1]
            print(f"| {label} | {len(written)} | {seconds[-1]:.2f} | {rates[label]:,.0f} |", flush=True)
        # each group's first two rows: the store's write path, then the same upserts without the protocol
        protocol.append((seconds[0] - seconds[1]) / len(written) * 1000)
    ms = per_call_ms(root)
    print(f"the protocol, per document: {protocol[0]:.1f} ms (articles), {protocol[1]:.1f} ms (paragraphs); "
          f"one-record upserts: {ms:.1f} ms a call")
    # the grouped write path (each set's last row) against one document at a time (its first row)
    gain = {}
    for which, group in (("articles", runs), ("paragraphs", short)):
        labels = list(group)
        gain[which] = rates[labels[-1]] / rates[labels[0]]
    print(f"write_documents / store.add_document: {gain['articles']:.2f}x (articles), "
          f"{gain['paragraphs']:.2f}x (paragraphs)")
    print(json.dumps({"sentences": n, "documents": len(docs), "paragraphs": len(paras), "chromadb": chromadb.__version__,
                      "sentences_per_s": rates, "protocol_ms_per_document": protocol, "ms_per_call": ms,
                      "write_path_gain": gain}))


if __name__ == "__main__":
    main()
