"""Concurrent CPU batches (encode/runtime/parallel.py): the same vectors, threads restored, errors surface."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from landmark_rag.encode.encoder import LandmarkEncoder
from landmark_rag.encode.runtime.parallel import auto_workers, run_batches

TEXT = " ".join(
    f"Sentence {i} says that the castle's {w} wall was rebuilt in {1200 + 7 * i} after a fire."
    for i, w in enumerate(["north", "south", "east", "west", "inner", "outer"] * 12)
)


def test_two_workers_give_the_vectors_of_one() -> None:
    # fp32: under bf16 autocast (a CPU with native bf16) a kernel's thread count can flip a rounding
    enc = LandmarkEncoder.from_pretrained(
        "all-MiniLM-L6-v2", device="cpu", dtype="float32", pooling="mean", max_length=64
    )
    texts = [TEXT, TEXT[: len(TEXT) // 3], "One short document."]
    enc.workers = 1
    one = enc.encode_documents(texts, batch_size=2)
    enc.workers = 2
    threads = torch.get_num_threads()
    two = enc.encode_documents(texts, batch_size=2)
    assert torch.get_num_threads() == threads
    assert [len(d) for d in one] == [len(d) for d in two] and len(one[0]) > 40
    # the same kernels on fewer threads each: equal up to the order of float sums inside them
    # (bit-equal on some hosts, not on others, e.g. a 16-core one)
    for a, b in zip(one, two, strict=True):
        np.testing.assert_allclose(a.embeddings, b.embeddings, rtol=0, atol=1e-6)


def test_run_batches_runs_each_once_and_raises_the_first_error() -> None:
    seen: list[int] = []
    run_batches(list(range(20)), seen.append, 2)
    assert sorted(seen) == list(range(20))

    def boom(b: int) -> None:
        if b == 3:
            raise RuntimeError("batch 3 failed")

    threads = torch.get_num_threads()
    with pytest.raises(RuntimeError, match="batch 3"):
        run_batches(list(range(8)), boom, 2)
    assert torch.get_num_threads() == threads


def test_auto_workers_is_one_off_cpu() -> None:
    assert auto_workers(torch.device("meta")) == 1
    assert auto_workers(torch.device("cpu")) == (2 if torch.get_num_threads() >= 2 else 1)
