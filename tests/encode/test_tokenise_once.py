"""Every sentence is tokenised once on its way into a store (``segment.tokens``).

A counting wrapper around a real tokenizer's Rust backend records every text that is
tokenised, through the Hugging Face call or directly; each route that stores sentence
vectors - ``LandmarkIndex.add_texts``, LlamaIndex's parser then embedding model, LangChain's
splitter then retriever - must tokenise each sentence (as the layout reads it) exactly once,
and never a whole document. The ids themselves equal the tokenizer's own call.
"""

from __future__ import annotations

import copy
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoTokenizer

from landmark_rag.encode import LandmarkConfig, LandmarkEncoder
from landmark_rag.encode.layout import sentence_pieces
from landmark_rag.segment import segment_sentences
from landmark_rag.segment.tokens import text_tokenizer


class CountingBackend:
    """A ``tokenizers.Tokenizer`` that counts every text it encodes (copies share the count).

    Texts are counted lowercased: a BERT tokenizer's ASCII twin (a copy without its
    normaliser) is handed the sentence lowercased, and it still counts as that sentence."""

    def __init__(self, inner: Any, counts: Counter[str]) -> None:
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "counts", counts)

    def _count(self, inputs: Any) -> None:
        for x in inputs:
            self.counts[x.lower() if isinstance(x, str) else repr(x)] += 1

    def encode_batch(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        self._count(inputs)
        return self._inner.encode_batch(inputs, *args, **kwargs)

    def encode_batch_fast(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        self._count(inputs)
        return self._inner.encode_batch_fast(inputs, *args, **kwargs)

    def encode(self, sequence: Any, *args: Any, **kwargs: Any) -> Any:
        self._count([sequence])
        return self._inner.encode(sequence, *args, **kwargs)

    def __deepcopy__(self, memo: dict[int, Any]) -> CountingBackend:
        return CountingBackend(copy.deepcopy(self._inner, memo), self.counts)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._inner, name, value)


class CountingFlash:
    """The twin's flash-tokenizer (where installed) counting what it tokenises, as the backend does."""

    def __init__(self, inner: Any, counts: Counter[str]) -> None:
        self.inner = inner
        self.counts = counts
        self.calls = 0

    def takes(self, text: str) -> bool:
        return bool(self.inner.takes(text))

    def ids(self, text: str) -> list[int]:
        self.counts[text.lower()] += 1
        self.calls += 1
        return list(self.inner.ids(text))


def counting_encoder(model_dir: Path, **overrides: Any) -> tuple[LandmarkEncoder, Counter[str]]:
    """A fresh encoder on ``model_dir`` whose tokenizer counts what it tokenises."""
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    counts: Counter[str] = Counter()
    tokenizer._tokenizer = CountingBackend(tokenizer._tokenizer, counts)
    twin = text_tokenizer(tokenizer).twin
    if twin is not None and twin.flash() is not None:
        twin._flash = CountingFlash(twin.flash(), counts)  # type: ignore[assignment]
    model = AutoModel.from_pretrained(model_dir)
    config = LandmarkConfig(model_name=str(model_dir), pooling="landmark", max_length=64, **overrides)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        encoder = LandmarkEncoder(model, tokenizer, config, device=torch.device("cpu"))
    return encoder, counts


def articles(excerpt_articles: list[Any]) -> list[str]:
    # plus one sentence longer than a window: cut by segmentation, its pieces tokenised once each
    return [a.text for a in excerpt_articles] + [
        "A short opener. " + " ".join(f"clause{i} runs on" for i in range(60)) + ". The end."
    ]


def expected_pieces(model_dir: Path, encoder: LandmarkEncoder, texts: list[str]) -> list[str]:
    """The strings the layout tokenises for ``texts``' sentences, found with a tokenizer of
    their own (so finding them counts nothing)."""
    plain = AutoTokenizer.from_pretrained(model_dir)
    out = []
    for t in texts:
        sents = segment_sentences(t, max_tokens=encoder.max_sentence_tokens, tokenizer=plain, space_before=encoder.causal)
        out.extend(sentence_pieces([s.text for s in sents], [s.space_before for s in sents], encoder.causal))
    return out


def assert_once(counts: Counter[str], pieces: list[str], texts: list[str]) -> None:
    assert len(pieces) > 20
    # once per occurrence (a sentence that occurs twice, " 1347." in the causal case, twice)
    pieces = [p.lower() for p in pieces]
    assert {p: counts[p] for p in pieces} == dict(Counter(pieces))
    assert all(counts[t.lower()] == 0 for t in texts)  # no whole document tokenised (token counts)


@pytest.fixture(params=["bert", "llama"])
def model_dir(request, tiny_bert_dir: Path) -> Path:
    if request.param == "bert":
        return tiny_bert_dir
    return request.getfixturevalue("tiny_llama_dir")


def test_add_texts_tokenises_each_sentence_once(model_dir: Path, excerpt_articles, tmp_path: Path) -> None:
    import chromadb

    from landmark_rag import LandmarkIndex
    from landmark_rag.store import ChromaSentenceStore

    encoder, counts = counting_encoder(model_dir)
    texts = articles(excerpt_articles)
    collection = chromadb.PersistentClient(path=str(tmp_path / "db")).get_or_create_collection("once")
    index = LandmarkIndex(ChromaSentenceStore(collection), encoder=encoder)
    index.add_texts(texts, ids=[f"d{i}" for i in range(len(texts))])
    pieces = expected_pieces(model_dir, encoder, texts)
    assert_once(counts, pieces, texts)
    assert index.store.count_sentences() == len(pieces)
    flash = getattr(text_tokenizer(encoder.tokenizer).twin, "_flash", None)
    if isinstance(flash, CountingFlash):  # flash-tokenizer installed: it did the counted work
        assert flash.calls > 20


def test_llama_index_parser_then_embedding_tokenise_each_sentence_once(model_dir: Path, excerpt_articles) -> None:
    from llama_index.core import Document
    from llama_index.core.ingestion import IngestionPipeline

    from landmark_rag.llama_index import LandmarkEmbedding, LandmarkNodeParser

    encoder, counts = counting_encoder(model_dir)
    texts = articles(excerpt_articles)
    embed = LandmarkEmbedding(encoder=encoder)
    parser = LandmarkNodeParser.for_embedding(embed)  # the route docs/llama_index.md shows
    docs = [Document(text=t, id_=f"d{i}") for i, t in enumerate(texts)]
    nodes = IngestionPipeline(transformations=[parser, embed]).run(documents=docs)
    assert all(n.embedding is not None for n in nodes)
    pieces = expected_pieces(model_dir, encoder, texts)
    assert len(nodes) == len(pieces)
    assert_once(counts, pieces, texts)


def test_langchain_splitter_then_vector_store_tokenise_each_sentence_once(model_dir: Path, excerpt_articles) -> None:
    """docs/langchain.md, "Any vector store": the splitter encodes, the store adds its output."""
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore

    from landmark_rag.langchain import LandmarkEmbeddings, LandmarkTextSplitter

    encoder, counts = counting_encoder(model_dir)
    texts = articles(excerpt_articles)
    embeddings = LandmarkEmbeddings.from_encoder(encoder)
    docs = [Document(id=f"d{i}", page_content=t) for i, t in enumerate(texts)]
    sentences = LandmarkTextSplitter(embeddings=embeddings).split_documents(docs)
    store = InMemoryVectorStore.from_documents(sentences, embedding=embeddings)
    pieces = expected_pieces(model_dir, encoder, texts)
    assert len(sentences) == len(pieces) == len(store.store)
    assert_once(counts, pieces, texts)


def test_langchain_splitter_then_retriever_tokenise_each_sentence_once(
    model_dir: Path, excerpt_articles, tmp_path: Path
) -> None:
    """The sentences a splitter measured are not tokenised again when the retriever encodes
    the same documents (the splitter's ids are kept for it)."""
    from langchain_core.documents import Document

    from landmark_rag.langchain import LandmarkEmbeddings, LandmarkRetriever, LandmarkTextSplitter

    encoder, counts = counting_encoder(model_dir)
    texts = articles(excerpt_articles)
    embeddings = LandmarkEmbeddings.from_encoder(encoder)
    docs = [Document(id=f"d{i}", page_content=t) for i, t in enumerate(texts)]
    sentences = LandmarkTextSplitter(embeddings=embeddings, in_context=False).split_documents(docs)
    retriever = LandmarkRetriever(embeddings=embeddings, persist_directory=str(tmp_path / "db"), collection_name="once")
    retriever.add_documents(docs)
    pieces = expected_pieces(model_dir, encoder, texts)
    assert len(sentences) == len(pieces) == retriever.index.store.count_sentences()
    assert_once(counts, pieces, texts)


# ---------------------------------------------------------------------------- the ids themselves
def _tokenizers(tiny_bert_dir: Path, request) -> dict[str, Any]:
    out = {"wordpiece": AutoTokenizer.from_pretrained(tiny_bert_dir)}
    lmk = AutoTokenizer.from_pretrained(tiny_bert_dir)
    lmk.add_special_tokens({"additional_special_tokens": ["[LMK]"]})
    out["wordpiece+[LMK]"] = lmk
    try:
        out["byte-level BPE"] = AutoTokenizer.from_pretrained(request.getfixturevalue("smollm2_dir"))
    except pytest.skip.Exception:
        pass
    return out


TEXTS = [
    "Oxygen is a chemical element with symbol O and atomic number 8.",
    " It was isolated in 1774 [LMK] by Priestley.",
    "\n\nA new paragraph: ünïcödé, 東京, emoji 🙂, tabs\tand   spaces.",
    "[SEP] [CLS] <|endoftext|> </s>",
    "",
    "x" * 3000,
]


def test_ids_equal_the_tokenizer_call(tiny_bert_dir: Path, request) -> None:
    for name, tok in _tokenizers(tiny_bert_dir, request).items():
        tt = text_tokenizer(tok)
        assert tt.fast, name
        expected = tok(TEXTS, add_special_tokens=False, verbose=False)["input_ids"]
        got = tt.ids(TEXTS)
        assert [g.tolist() for g in got] == expected, name
        assert all(g.dtype == np.int64 for g in got)


def test_a_token_added_later_is_seen(tiny_bert_dir: Path) -> None:
    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    before = text_tokenizer(tok).ids(["a [LMK] b"], store=True)[0]
    tok.add_special_tokens({"additional_special_tokens": ["[LMK]"]})
    after = text_tokenizer(tok).ids(["a [LMK] b"])[0]
    assert len(after) == 3 < len(before)
    assert after.tolist() == tok("a [LMK] b", add_special_tokens=False)["input_ids"]


def test_a_truncating_call_elsewhere_does_not_leak_in(tiny_bert_dir: Path) -> None:
    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    tt = text_tokenizer(tok)
    tok(["word " * 50], truncation=True, max_length=8)  # leaves truncation set on tok's backend
    assert len(tt.ids(["word " * 50])[0]) == 50


def test_the_cache_is_bounded(tiny_bert_dir: Path) -> None:
    from landmark_rag.segment.tokens import TextTokenizer

    tt = TextTokenizer(AutoTokenizer.from_pretrained(tiny_bert_dir), cache_tokens=100)
    tt.ids([f"sentence number {i} is here." for i in range(200)], store=True)
    assert 0 < tt._cached <= 100 and len(tt._cache) < 200


def test_a_tokenizer_lookalike_is_called_not_bypassed(tiny_bert_dir: Path) -> None:
    """A wrapper with a ``__call__`` of its own (e.g. one that counts) sees every text."""
    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)

    class Wrapper:
        def __init__(self) -> None:
            self.texts: list[str] = []

        def __call__(self, texts, *args, **kwargs):
            self.texts.extend(texts)
            return tok(texts, *args, **kwargs)

        def __getattr__(self, name):
            return getattr(tok, name)

    wrapper = Wrapper()
    tt = text_tokenizer(wrapper)
    assert not tt.fast
    assert [x.tolist() for x in tt.ids(TEXTS[:3])] == tok(TEXTS[:3], add_special_tokens=False)["input_ids"]
    assert wrapper.texts == TEXTS[:3]


# ---------------------------------------------------------------------------- the ASCII twin
def _ascii_texts() -> list[str]:
    """ASCII the twin takes and ASCII it must leave to the backend (control characters,
    added tokens in any case), with random printable strings."""
    import random
    import string

    rng = random.Random(7)
    alphabet = string.printable + "\x00\x01\x0b\x0c\x1f\x7f[]"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(500)]
    return texts + [
        "MiXeD CaSe Words, DON'T shout!", "a [SEP] b", "a [sep] b", "x[CLS]y", "[mask] and [MASK]",
        "it was [LMK] isolated", "it was [lmk] isolated", "bell\x07char", "del\x7f", "tab\tand\nnew\r\nlines",
    ]


def test_the_ascii_twin_gives_the_backend_ids(tiny_bert_dir: Path, request) -> None:
    from landmark_rag.segment.tokens import TextTokenizer

    texts = _ascii_texts() + TEXTS
    for name, tok in _tokenizers(tiny_bert_dir, request).items():
        tt = TextTokenizer(tok)
        assert (tt.twin is not None) == name.startswith("wordpiece"), name  # byte-level BPE has no normaliser to skip
        expected = tok(texts, add_special_tokens=False, verbose=False)["input_ids"]
        assert [g.tolist() for g in tt.ids(texts)] == expected, name
        if tt.twin is not None:
            assert tt.twin.takes("Plain ASCII, Mixed Case.")
            assert not tt.twin.takes("a [sep] b")  # an added token, in any case
            assert not tt.twin.takes("ünïcödé")
            assert not tt.twin.takes("bell\x07")
            assert tt.twin.takes("a [lmk] b") == ("LMK" not in name)


def test_an_added_token_with_a_space_is_matched_across_line_breaks(tiny_bert_dir: Path) -> None:
    """clean_text turns tabs and line breaks into spaces before added tokens are matched: a
    text where one then appears stays with the backend."""
    from tokenizers import AddedToken

    from landmark_rag.segment.tokens import TextTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    tok.add_tokens([AddedToken("new york", normalized=True)])
    texts = ["a new\tyork b", "New\r\nYork", "new york", "newyork city", "New  York"]
    tt = TextTokenizer(tok)
    assert tt.twin is not None and not tt.twin.takes("New\nYork") and tt.twin.takes("newyork city")
    assert [x.tolist() for x in tt.ids(texts)] == tok(texts, add_special_tokens=False)["input_ids"]


def test_the_ascii_twin_is_not_used_for_other_normalisers(tiny_bert_dir: Path) -> None:
    """A normaliser other than BertNormalizer (here NFKC then lowercase) keeps the backend alone."""
    from tokenizers import normalizers

    from landmark_rag.segment.tokens import AsciiTwin

    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    backend = copy.deepcopy(tok.backend_tokenizer)
    assert AsciiTwin.of(backend) is not None
    backend.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    assert AsciiTwin.of(backend) is None


# ---------------------------------------------------------------------------- flash-tokenizer
def test_flash_tokenizer_gives_the_backend_ids(tiny_bert_dir: Path, excerpt_articles) -> None:
    """Where flash-tokenizer is installed the twin's batches go to it, with the tokenizer's own
    ids: real sentences, random printable ASCII, words at and past the 100-character limit
    (the backend's ``[UNK]``, left to the backend), an empty text."""
    pytest.importorskip("flash_tokenizer")
    import random
    import string

    from landmark_rag.segment.tokens import TextTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    tt = TextTokenizer(tok)
    assert tt.twin is not None
    flash = tt.twin.flash()
    assert flash is not None
    rng = random.Random(3)
    alphabet = string.printable.replace("\x0b", "").replace("\x0c", "")  # those two: not the twin's
    noise = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 90))) for _ in range(2000)]
    sentences = [s.text for a in excerpt_articles for s in segment_sentences(a.text)]
    texts = [*sentences, *noise, "", "a" * 100, "a" * 101, "x " + "b" * 150 + " y", "A" * 4000, "Mixed CASE words."]
    assert flash.takes("a" * 100) and not flash.takes("a" * 101)
    assert sum(map(tt.twin.takes, texts)) > 1500
    assert [x.tolist() for x in tt.ids(texts)] == tok(texts, add_special_tokens=False, verbose=False)["input_ids"]


def test_flash_tokenizer_leaves_the_vectors_unchanged(tiny_bert_dir: Path, excerpt_articles, monkeypatch) -> None:
    """The same documents give the same vectors with flash-tokenizer and without it."""
    pytest.importorskip("flash_tokenizer")
    from landmark_rag.segment.tokens import FLASH_ENV

    def vectors() -> tuple[list[np.ndarray], int]:
        encoder, _ = counting_encoder(tiny_bert_dir)
        docs = encoder.encode_documents([a.text for a in excerpt_articles])
        flash = text_tokenizer(encoder.tokenizer).twin._flash  # type: ignore[union-attr]
        return [d.embeddings for d in docs], flash.calls if isinstance(flash, CountingFlash) else 0

    with_flash, calls = vectors()
    monkeypatch.setenv(FLASH_ENV, "0")
    without, calls_off = vectors()
    assert calls > 20 and calls_off == 0
    assert len(with_flash) == len(without) == len(excerpt_articles)
    assert all(np.array_equal(a, b) for a, b in zip(with_flash, without, strict=True))


def test_flash_tokenizer_is_switched_off_by_the_environment(tiny_bert_dir: Path, monkeypatch) -> None:
    """``LANDMARK_RAG_FAST_TOKENIZER=0`` leaves the twin on the tokenizers backend, same ids."""
    from landmark_rag.segment.tokens import FLASH_ENV, TextTokenizer

    monkeypatch.setenv(FLASH_ENV, "0")
    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    tt = TextTokenizer(tok)
    assert tt.twin is not None and tt.twin.flash() is None
    texts = [f"Sentence {i}, plainly ASCII." for i in range(20)]
    assert [x.tolist() for x in tt.ids(texts)] == tok(texts, add_special_tokens=False)["input_ids"]


def test_a_twin_pickles_without_its_flash_tokenizer(tiny_bert_dir: Path) -> None:
    """The C++ tokenizer does not pickle; a copied twin makes its own on first use."""
    import pickle

    from landmark_rag.segment.tokens import TextTokenizer

    tt = TextTokenizer(AutoTokenizer.from_pretrained(tiny_bert_dir))
    assert tt.twin is not None
    tt.twin.flash()
    for twin in (pickle.loads(pickle.dumps(tt.twin)), copy.deepcopy(tt.twin)):
        texts = [f"Copied twin number {i}." for i in range(10)]
        assert twin.ids(texts) == tt.twin.ids(texts)
        assert (twin.flash() is None) == (tt.twin.flash() is None)


def test_offsets_of_long_texts_come_from_the_backend(tiny_bert_dir: Path) -> None:
    """Offsets (for cutting long sentences) map into the text as given, case and all."""
    from landmark_rag.segment.tokens import TextTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    tt = TextTokenizer(tok)
    text = "The QUICK Brown fox " * 20
    ids, offsets = tt.measure([text, "Short One."], offsets_over=10)
    assert set(offsets) == {0}
    want = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    assert ids[0].tolist() == want["input_ids"]
    assert offsets[0].tolist() == [list(o) for o in want["offset_mapping"]]
