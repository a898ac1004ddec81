"""The broadcast key-padding mask (encode/runtime/padding.py): used only where a probe shows the
model reads it as the 2-D mask, and then the vectors are those of the 2-D mask."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tiny_models
import torch

from landmark_rag.encode import encoder as encoder_module
from landmark_rag.encode.encoder import LandmarkEncoder, _pack
from landmark_rag.encode.pooling import last_hidden, pad_batch
from landmark_rag.encode.runtime import padding

DOCS = [
    "The castle was built in 1221 by the count. It burned down twice.",
    " ".join(f"Line {i} of the chronicle records the harbour wall of {1200 + i}." for i in range(40)),
    "Short one.",
    "",
    "Its library now holds four thousand books on local history. Visitors may read them on Sundays.",
]


@pytest.fixture(scope="module")
def family_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("families")
    return {arch: tiny_models.build(arch, root / arch) for arch in ("bert", "mpnet", "xlm-roberta", "mistral")}


def _without_broadcast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(encoder_module, "broadcast_padding_dtype", lambda model, layout: None)


@pytest.mark.parametrize("arch", ["bert", "mpnet", "xlm-roberta"])
@pytest.mark.parametrize("attn", [None, "eager"])  # None: SDPA where the family has it
def test_vectors_are_those_of_the_2d_mask(family_dirs, monkeypatch, arch: str, attn: str | None) -> None:
    enc = LandmarkEncoder.from_pretrained(family_dirs[arch], device="cpu", attn_implementation=attn, max_length=64)
    with_broadcast = enc.encode_documents(DOCS, batch_size=4)
    if arch == "bert" and attn is None:  # the default's family: the probe must accept it, or the speed-up is gone
        assert padding.broadcast_padding_dtype(enc.model, enc.layout) is not None
    _without_broadcast(monkeypatch)
    plain = enc.encode_documents(DOCS, batch_size=4)
    for a, b in zip(with_broadcast, plain, strict=True):
        assert [s.text for s in a.sentences] == [s.text for s in b.sentences]
        np.testing.assert_allclose(a.embeddings, b.embeddings, atol=1e-6, rtol=0)
    queries = ["when was the castle built", "a much longer query about the harbour wall of the old town"]
    q = enc.encode_queries(queries)
    monkeypatch.undo()
    np.testing.assert_allclose(enc.encode_queries(queries), q, atol=1e-6, rtol=0)


def test_the_broadcast_mask_gives_the_same_hidden_states(tiny_encoder) -> None:
    enc = tiny_encoder(max_length=64)
    jobs = enc.layout.document_jobs(enc.layout.tokenize_sentences(["One short sentence.", "Two."]))
    jobs += enc.layout.document_jobs(enc.layout.tokenize_sentences(["A third sentence, longer than the rest by far."]))
    ids, mask = pad_batch(jobs, enc.pad_id)
    assert not bool(mask.all())  # the batch is padded
    with torch.inference_mode():
        a = last_hidden(enc.model, ids, mask, enc.layout)
        b = last_hidden(enc.model, ids, mask, enc.layout, key_padding=torch.float32)
    keep = mask.bool()
    assert torch.equal(a[keep], b[keep])


def test_causal_and_isolated_layouts_keep_the_2d_mask(family_dirs, tiny_encoder) -> None:
    causal = LandmarkEncoder.from_pretrained(family_dirs["mistral"], device="cpu", max_length=64)
    assert causal.causal and padding.broadcast_padding_dtype(causal.model, causal.layout) is None
    isolated = tiny_encoder(max_length=64, landmark_attention="isolated")
    isolated.add_landmark_token("[LMK]")
    assert padding.broadcast_padding_dtype(isolated.model, isolated.layout) is None


class _Misreads(torch.nn.Module):
    """A model that takes a 4-D mask but reads it wrongly (here: ignores it)."""

    def __init__(self, inner: torch.nn.Module, fail: bool = False) -> None:
        super().__init__()
        self.inner, self.config, self.fail = inner, inner.config, fail

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, **kw):
        if attention_mask is not None and attention_mask.dim() == 4:
            if self.fail:
                raise ValueError("Wrong shape for attention_mask")
            attention_mask = torch.ones_like(input_ids)
        return self.inner(input_ids=input_ids, attention_mask=attention_mask, **kw)


@pytest.mark.parametrize("fail", [False, True])
def test_a_model_that_misreads_or_rejects_it_keeps_the_2d_mask(tiny_encoder, fail: bool) -> None:
    enc = tiny_encoder(max_length=64)
    model = _Misreads(enc.model, fail)
    assert model.config._attn_implementation == "sdpa"
    assert padding.broadcast_padding_dtype(model, enc.layout) is None
    enc.model = model  # and the encoder, asking the same, encodes with the 2-D mask
    ref = tiny_encoder(max_length=64)
    for a, b in zip(enc.encode_documents(DOCS, batch_size=4), ref.encode_documents(DOCS, batch_size=4), strict=True):
        np.testing.assert_allclose(a.embeddings, b.embeddings, atol=1e-6, rtol=0)


def test_the_probe_runs_once_per_model_and_again_when_it_changes(tiny_encoder, monkeypatch) -> None:
    enc = tiny_encoder(max_length=64)
    calls = []
    real = padding._probe
    monkeypatch.setattr(padding, "_probe", lambda *a: calls.append(1) or real(*a))
    assert padding.broadcast_padding_dtype(enc.model, enc.layout) is not None
    enc.encode_documents(DOCS)
    assert len(calls) == 1
    enc.model.set_attn_implementation("eager")
    assert padding.broadcast_padding_dtype(enc.model, enc.layout) is not None
    assert len(calls) == 2


def test_only_padded_batches_are_marked(tiny_encoder) -> None:
    enc = tiny_encoder(max_length=64)
    jobs = enc.layout.document_jobs(enc.layout.tokenize_sentences(["Alpha beta.", "Gamma delta epsilon zeta."]))
    same = [jobs[0], jobs[0]]
    assert not _pack(same, enc.pad_id, False).padded
    other = enc.layout.document_jobs(enc.layout.tokenize_sentences(["Eta."]))
    assert _pack([jobs[0], other[0]], enc.pad_id, False).padded


def _masks_seen(model: torch.nn.Module) -> list[str]:
    """What each forward call of ``model`` gets as its mask: ``none``, ``2d`` or ``4d``."""
    seen: list[str] = []

    def hook(_module, args, kwargs):
        mask = kwargs.get("attention_mask")
        seen.append("none" if mask is None else f"{mask.dim()}d")

    model.register_forward_pre_hook(hook, with_kwargs=True)
    return seen


@pytest.mark.parametrize("arch", ["bert", "mpnet", "xlm-roberta"])
@pytest.mark.parametrize("attn", [None, "eager"])
def test_an_unpadded_batch_goes_without_a_mask_and_gives_the_same_vectors(
    family_dirs, monkeypatch, arch: str, attn: str | None
) -> None:
    enc = LandmarkEncoder.from_pretrained(family_dirs[arch], device="cpu", attn_implementation=attn, max_length=64)
    assert padding.mask_optional(enc.model, enc.layout)
    seen = _masks_seen(enc.model)
    alone = enc.encode_documents(DOCS, batch_size=1)  # one window a batch: nothing is padded
    together = enc.encode_documents(DOCS, batch_size=4)
    assert seen.count("none") > 0 and len(seen) > seen.count("none")  # the padded batches keep theirs
    monkeypatch.setattr(encoder_module, "mask_optional", lambda model, layout: False)
    seen.clear()
    masked = enc.encode_documents(DOCS, batch_size=1)
    assert "none" not in seen
    for a, b in zip(alone, masked, strict=True):
        np.testing.assert_array_equal(a.embeddings, b.embeddings)
    for a, b in zip(together, masked, strict=True):
        np.testing.assert_allclose(a.embeddings, b.embeddings, atol=1e-6, rtol=0)


def test_causal_isolated_and_foreign_models_keep_the_mask(family_dirs, tiny_encoder) -> None:
    causal = LandmarkEncoder.from_pretrained(family_dirs["mistral"], device="cpu", max_length=64)
    assert not padding.mask_optional(causal.model, causal.layout)
    isolated = tiny_encoder(max_length=64, landmark_attention="isolated")
    isolated.add_landmark_token("[LMK]")
    assert not padding.mask_optional(isolated.model, isolated.layout)
    plain = tiny_encoder(max_length=64)

    class Foreign(torch.nn.Module):  # not a transformers model: what a missing mask means is unknown
        def forward(self, input_ids, attention_mask):
            return (torch.zeros(*input_ids.shape, 8),)

    assert not padding.mask_optional(Foreign(), plain.layout)


@pytest.mark.parametrize("arch", ["bert", "mpnet", "xlm-roberta"])
def test_launching_document_batches_reads_nothing_back_from_the_device(family_dirs, monkeypatch, arch: str) -> None:
    """On a GPU, reading a device tensor on the host (``bool(t)``, ``t.item()``, ``t.tolist()``)
    makes the launching thread wait until the device has run all it was given: the next batch
    is then launched only once the device is idle. Spied on here as those calls, on the CPU."""
    enc = LandmarkEncoder.from_pretrained(family_dirs[arch], device="cpu", max_length=64)
    enc._defer_on_cpu = True  # the accelerator's path: batches launched, vectors collected later
    enc.encode_documents(DOCS, batch_size=4)  # the padding probe runs once, before what is counted
    reads: list[str] = []
    launching = [False]
    for name in ("__bool__", "item", "tolist"):
        real = getattr(torch.Tensor, name)

        def spy(self, *args, _real=real, _name=name, **kwargs):
            if launching[0]:
                reads.append(_name)
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, spy)
    launch = enc._forward_pool_device

    def counted(*args, **kwargs):
        launching[0] = True
        try:
            return launch(*args, **kwargs)
        finally:
            launching[0] = False

    monkeypatch.setattr(enc, "_forward_pool_device", counted)
    for batch_size in (1, 4):  # unpadded batches, then padded ones
        enc.encode_documents(DOCS, batch_size=batch_size)
    assert reads == []
    # the spy sees such reads: with the mask handed over, transformers reads it every pass
    monkeypatch.setattr(encoder_module, "mask_optional", lambda model, layout: False)
    enc.encode_documents(DOCS, batch_size=1)
    assert "__bool__" in reads
