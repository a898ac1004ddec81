"""``LandmarkEncoder.compile`` / ``from_pretrained(compile=True)``: document windows go through
the compiled model, queries stay eager, and the vectors do not change.

The wiring is tested with torch.compile's ``eager`` backend (no code generation, so it runs
in a second); what inductor buys is measured by ``benchmarks/peers.py --levers``.
"""

from __future__ import annotations

import numpy as np
from typer.testing import CliRunner

from landmark_rag.cli import _register, app

_register()

TEXT = " ".join(f"Sentence number {i} talks about the weather in town {i % 7}." for i in range(60))


def test_documents_use_the_compiled_model_and_vectors_match(tiny_encoder) -> None:
    enc = tiny_encoder(pooling="mean", max_length=64)
    before = enc.encode_document(TEXT)
    q_before = enc.encode_queries(["weather in town 3?"])
    calls = {"documents": 0}
    enc.compile(backend="eager")
    compiled = enc.document_model
    assert compiled is not None

    def counting(*args, **kwargs):
        calls["documents"] += 1
        return compiled(*args, **kwargs)

    enc.document_model = counting
    after = enc.encode_document(TEXT)
    n_windows = calls["documents"]
    assert n_windows > 0  # a multi-window document ran through it
    np.testing.assert_allclose(after.embeddings, before.embeddings, atol=1e-5)
    np.testing.assert_allclose(enc.encode_queries(["weather in town 3?"]), q_before, atol=1e-6)
    assert calls["documents"] == n_windows  # queries stayed on the eager model


def test_a_failing_compile_falls_back_to_eager(tiny_encoder, caplog) -> None:
    enc = tiny_encoder(pooling="mean", max_length=64)
    before = enc.encode_document(TEXT)

    def broken(*args, **kwargs):
        raise RuntimeError("InductorError: no C++ compiler found")

    enc.document_model = broken
    with caplog.at_level("WARNING", logger="landmark_rag.encode.encoder"):
        after = enc.encode_document(TEXT)
    assert enc.document_model is None
    assert "torch.compile failed" in caplog.text
    np.testing.assert_allclose(after.embeddings, before.embeddings, atol=1e-6)


def test_cli_index_compile_flag(tmp_path, tiny_bert_dir) -> None:
    """The real thing (inductor), on the tiny model so compiling takes seconds."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text(TEXT, encoding="utf-8")
    db = str(tmp_path / "db")
    # on the CPU, as the eager vectors below: on a GPU the CLI's default is bf16 weights
    args = ["index", str(folder), "--db", db, "--quiet", "--model", str(tiny_bert_dir), "--pooling", "mean",
            "--device", "cpu"]
    result = CliRunner().invoke(app, [*args, "--compile"])
    assert result.exit_code == 0, result.output
    assert "1 new" in " ".join(result.output.split())
    from landmark_rag.store import ChromaSentenceStore

    store = ChromaSentenceStore.open(db, create=False)
    compiled = store.read_document("a.txt", embeddings=True).embeddings
    from landmark_rag import LandmarkEncoder

    eager = LandmarkEncoder.from_pretrained(tiny_bert_dir, device="cpu", pooling="mean").encode_document(TEXT)
    np.testing.assert_allclose(compiled, eager.embeddings, atol=1e-5)
