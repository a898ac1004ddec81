"""Batching (``encode.batching``): by a token budget (``encode_documents(batch_tokens=...)``)
padded tokens per batch stay under the budget, every window runs exactly once, and the vectors
do not depend on it; the padded batches as plain arrays (what a preparation process hands back)
give the encoder the very jobs it would have made itself."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from landmark_rag.encode.batching import batch_jobs, coalesce, concat_batches, pack_arrays, span_tokens
from landmark_rag.encode.layout import Job


def _job(n: int) -> Job:
    return Job(np.zeros(n, dtype=np.int64), 0, np.array([0]), np.array([0]), np.array([n]))


@pytest.mark.parametrize("budget", [1, 50, 64, 100, 1000])
def test_token_budget_batches(budget: int) -> None:
    widths = [5, 10, 10, 20, 30, 30, 64, 100]
    jobs = [_job(w) for w in widths]
    batches = batch_jobs(jobs, batch_size=2, batch_tokens=budget)
    assert [len(j.ids) for b in batches for j in b] == widths  # each once, in order
    for b in batches:
        padded = len(b) * max(len(j.ids) for j in b)
        assert padded <= budget or len(b) == 1  # a window wider than the budget runs alone
    if budget == 1000:
        assert len(batches) == 1  # batch_size does not cap a token-budget batch


def test_window_count_batches_unchanged() -> None:
    jobs = [_job(w) for w in (3, 4, 5, 6, 7)]
    assert [len(b) for b in batch_jobs(jobs, batch_size=2, batch_tokens=None)] == [2, 2, 1]


def test_vectors_do_not_depend_on_batching(tiny_encoder) -> None:
    enc = tiny_encoder(pooling="landmark", max_length=48)
    texts = [" ".join(f"Line {i} of document {d} is here." for i in range(n)) for d, n in enumerate((3, 25, 60))]
    a = enc.encode_documents(texts, batch_size=16)
    b = enc.encode_documents(texts, batch_tokens=100)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x.embeddings, y.embeddings, atol=1e-5)


def _layout_jobs(enc, texts):
    jobs = []
    for d, text in enumerate(texts):
        sents = enc.segment(text)
        jobs.extend(enc.layout.document_jobs(enc.layout.tokenize_sentences([s.text for s in sents]), d))
    return jobs


TEXTS = [
    " ".join(f"Sentence {i} tells of the {i}th harbour wall." for i in range(40)),
    "One line only. And a second one.",
    " ".join(f"Line {i} records the year {1200 + i}." for i in range(90)),
]


@pytest.mark.parametrize("mean", [False, True])
def test_arrays_give_back_their_jobs(tiny_encoder, mean) -> None:
    enc = tiny_encoder(max_length=48)
    jobs = _layout_jobs(enc, TEXTS)
    for batch in batch_jobs(jobs, 4, None):
        arrays = pack_arrays(batch, enc.pad_id, mean)
        assert arrays.ids.shape == (len(batch), max(len(j.ids) for j in batch))
        assert (arrays.spans is not None) is mean
        back = arrays.jobs()
        assert len(back) == len(batch)
        for a, b in zip(batch, back, strict=True):
            assert a.doc == b.doc
            for field in ("ids", "sentences", "starts", "ends"):
                np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
        beyond = np.arange(arrays.ids.shape[1])[None, :] >= arrays.lengths[:, None]
        assert (arrays.ids[beyond] == enc.pad_id).all()  # right-padded with the pad id
        assert arrays.padded == bool((arrays.lengths < arrays.ids.shape[1]).any())
        if mean:
            g = arrays.gather
            np.testing.assert_array_equal(arrays.spans, span_tokens(g[0], g[1], g[2], arrays.ids.shape[1]))


def test_jobs_are_sorted_by_length_and_each_kept_once(tiny_encoder) -> None:
    enc = tiny_encoder(max_length=48)
    jobs = _layout_jobs(enc, TEXTS)
    batches = batch_jobs(jobs, 16, 100)
    assert sorted(id(j) for b in batches for j in b) == sorted(id(j) for j in jobs)
    widths = [len(j.ids) for b in batches for j in b]
    assert widths == sorted(widths)  # sorted by length: the least padding


def test_a_portable_layout_lays_out_the_same_jobs_without_its_tokenizer(tiny_encoder) -> None:
    enc = tiny_encoder(max_length=48)
    portable = pickle.loads(pickle.dumps(enc.layout.portable()))
    assert portable.tokenizer is None and b"transformers" not in pickle.dumps(enc.layout.portable())
    toks = enc.layout.tokenize_sentences([s.text for s in enc.segment(TEXTS[0])])
    empty = [np.zeros(0, dtype=np.int64), *toks[:3]]  # an empty sentence takes the fallback id
    for a, b in zip(enc.layout.document_jobs(enc.layout.cap_ids(empty)),
                    portable.document_jobs(portable.cap_ids(empty)), strict=True):
        np.testing.assert_array_equal(a.ids, b.ids)
        np.testing.assert_array_equal(a.sentences, b.sentences)


def _arrays_equal(a, b) -> None:
    for field in a._fields:
        x, y = getattr(a, field), getattr(b, field)
        assert (x is None) == (y is None), field
        if x is not None:
            np.testing.assert_array_equal(x, y, err_msg=field)


@pytest.mark.parametrize("mean", [False, True])
def test_joined_batches_are_the_batch_of_all_their_jobs(tiny_encoder, mean) -> None:
    """Batches of different widths joined (``concat_batches``) equal one batch packed from all
    their jobs in order: ids re-padded, rows, pooled sentences and mean pooling's token index
    moved along."""
    enc = tiny_encoder(max_length=48)
    jobs = _layout_jobs(enc, TEXTS)
    batches = batch_jobs(jobs, 5, None)
    assert len({max(len(j.ids) for j in b) for b in batches}) > 1  # widths differ
    parts = [pack_arrays(b, enc.pad_id, mean) for b in batches]
    _arrays_equal(concat_batches(parts, enc.pad_id), pack_arrays([j for b in batches for j in b], enc.pad_id, mean))
    with pytest.raises(ValueError, match="token index"):
        concat_batches([pack_arrays(batches[0], enc.pad_id, True), pack_arrays(batches[1], enc.pad_id, False)], 0)


def test_coalesced_groups_number_their_documents_on_and_keep_the_budget(tiny_encoder) -> None:
    """Groups of documents joined (``coalesce``): each group's documents numbered after the
    groups before it (an empty document, which has no window, still counts), consecutive
    batches joined while their padded tokens stay within the budget, every window once."""
    enc = tiny_encoder(max_length=48)
    groups = []
    for texts in (TEXTS[:2], ["", TEXTS[2]], [TEXTS[1], ""]):
        jobs = _layout_jobs(enc, texts)
        groups.append(([pack_arrays(b, enc.pad_id, True) for b in batch_jobs(jobs, 8, None)], len(texts)))

    def rows(batches, offset=0):
        return [(int(d) + offset, ids[:n].tolist()) for b in batches for d, ids, n in zip(b.docs, b.ids, b.lengths, strict=True)]

    expected = [r for g, (batches, _) in enumerate(groups) for r in rows(batches, sum(n for _, n in groups[:g]))]
    assert sorted({d for d, _ in expected}) == [0, 1, 3, 4]  # documents 2 and 5 are empty
    for budget in (1, 48 * 10, 48 * 40, 1 << 20):
        out = coalesce(groups, budget, enc.pad_id)
        assert rows(out) == expected
        alone = {b.ids.shape for bs, _ in groups for b in bs}
        assert all(b.ids.size <= budget or b.ids.shape in alone for b in out)  # joined only within it
        for b in out:
            np.testing.assert_array_equal(b.spans, span_tokens(b.gather[0], b.gather[1], b.gather[2], b.ids.shape[1]))
        if budget == 1:
            assert len(out) == sum(len(b) for b, _ in groups)  # nothing fits: as they came
        if budget == 1 << 20:
            assert len(out) == 1
