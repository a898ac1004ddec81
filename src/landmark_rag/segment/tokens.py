"""Token ids of many texts at once, each sentence tokenised once on its way to the encoder.

It lives with segmentation, the first step that tokenises (to cut long sentences); the
encoder's layout reads the same ids.

Why a module of its own: indexing used to tokenise every sentence two or three times
(segmentation measured it with offsets, the layout tokenised it again, the write path
counted the whole document once more, and a framework's splitter and embedding model each
did their own), each time through transformers' per-item Python conversion. On a GPU that
host work, not the forward pass, set the indexing rate.

:func:`text_tokenizer` gives the one :class:`TextTokenizer` of a Hugging Face tokenizer.
It calls the fast tokenizer's Rust backend (``tokenizer.backend_tokenizer``, a private copy
with truncation and padding off, so a call elsewhere that sets them never leaks in) and
turns its ids straight into numpy arrays; the ids are exactly
``tokenizer(texts, add_special_tokens=False)["input_ids"]`` (checked on probe texts when the
copy is made; a tokenizer that disagrees, or a slow one, goes through the plain call).

For BERT-style tokenizers (``BertNormalizer``: MiniLM, mpnet, BGE, E5) it also keeps an
:class:`AsciiTwin`: the same backend without its normalizer, fed ASCII texts lowercased in
Python. On ASCII text that normaliser only lowercases (accents, Chinese characters and control
characters are not ASCII or are screened out), yet it costs about a third of the tokenizer's
time; the twin gives the same ids about 1.4x as fast, which is what bounds indexing on a GPU.

It also keeps a bounded cache of ids by exact text. Segmentation that a caller asked for on
its own (``LandmarkEncoder.segment``, ``segment_sentences`` with a tokenizer: the LlamaIndex
parser, the LangChain splitter) stores what it measured, and the encoder reads it back when
the same sentences come to be encoded, so a sentence split by a framework's parser and then
embedded by its embedding model is tokenised once. ``encode_documents`` hands its own
segmentation's ids straight to the layout and needs no cache for that.
"""

from __future__ import annotations

import copy
import logging
import re
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

#: Texts per tokenizer call: bounds the Encoding objects (and offsets) alive at once, here
#: and wherever sentences are measured in batches (``segment.split_measured``).
TOKENIZE_BATCH = 2048

#: Token ids the reuse cache keeps per tokenizer: 4M int64 ids (32 MB, about as much again
#: for the texts), enough for a framework pipeline's parse-then-embed of some 3,000
#: article-length documents; past it the oldest entries go and those sentences are simply
#: tokenised again. ``text_tokenizer(tokenizer).clear()`` empties it.
CACHE_TOKENS = 1 << 22

#: Texts the fast path must tokenise exactly as the tokenizer's own call does before it is used.
_PROBES = (
    "Hello, world! The quick brown fox.",
    " Leading space and trailing space ",
    "\n\nA paragraph break, ünïcödé, 東京, and emoji 🙂.",
    "",
)

#: Token offsets of a text: ``[n_tokens, 2]`` character spans within the text measured.
Offsets = np.ndarray


class TextTokenizer:
    """Ids (and, when asked, offsets) of texts under one Hugging Face tokenizer; see the module."""

    def __init__(self, tokenizer: Any, cache_tokens: int = CACHE_TOKENS) -> None:
        self.tokenizer = tokenizer
        self.size = _vocab_size(tokenizer) if tokenizer is not None else -1
        self.backend = _fast_backend(tokenizer) if tokenizer is not None else None
        self.twin = AsciiTwin.of(self.backend) if self.backend is not None else None
        self.cache_tokens = cache_tokens
        self._cache: OrderedDict[str, tuple[np.ndarray, Offsets | None]] = OrderedDict()
        self._cached = 0
        self._lock = threading.Lock()

    @classmethod
    def from_backend(cls, backend: Any, cache_tokens: int = CACHE_TOKENS) -> TextTokenizer:
        """One over a ready ``tokenizers.Tokenizer`` (truncation and padding off, as
        :func:`_fast_backend` leaves its copy) with no Hugging Face tokenizer around it: what a
        worker process that loaded only the backend's JSON tokenises with (``encode.runtime.process``)."""
        tt = cls(None, cache_tokens)
        tt.backend = backend
        tt.twin = AsciiTwin.of(backend)
        return tt

    @property
    def fast(self) -> bool:
        """Whether ids come from the Rust backend directly (else the tokenizer's own call)."""
        return self.backend is not None

    # ------------------------------------------------------------------ ids
    def ids(self, texts: Sequence[str], *, store: bool = False) -> list[np.ndarray]:
        """int64 ids per text, no special tokens; cached texts are not tokenised again.

        ``store``: keep these texts' ids for a later call (segmentation a caller asked for
        on its own, whose sentences will come back to be encoded)."""
        return self.measure(texts, store=store)[0]

    def measure(
        self, texts: Sequence[str], *, offsets_over: int | None = None, store: bool = False
    ) -> tuple[list[np.ndarray], dict[int, Offsets]]:
        """``(ids per text, {i: offsets})``: offsets (``[n, 2]`` character spans within the
        text) only for texts of more than ``offsets_over`` tokens (``None``: for none)."""
        out: list[np.ndarray | None] = [None] * len(texts)
        offsets: dict[int, Offsets] = {}
        missing: list[int] = []
        with self._lock:
            for i, t in enumerate(texts):
                hit = self._cache.get(t)
                if hit is None or (offsets_over is not None and len(hit[0]) > offsets_over and hit[1] is None):
                    missing.append(i)
                    continue
                self._cache.move_to_end(t)
                out[i] = hit[0]
                if offsets_over is not None and len(hit[0]) > offsets_over:
                    offsets[i] = hit[1]  # type: ignore[assignment]
        for c in range(0, len(missing), TOKENIZE_BATCH):
            part = missing[c : c + TOKENIZE_BATCH]
            ids, offs = self._encode([texts[i] for i in part], offsets_over)
            for k, i in enumerate(part):
                out[i] = ids[k]
                if k in offs:
                    offsets[i] = offs[k]
            if store:
                self._store([texts[i] for i in part], ids, offs)
        return out, offsets  # type: ignore[return-value]

    def _encode(self, texts: list[str], offsets_over: int | None) -> tuple[list[np.ndarray], dict[int, Offsets]]:
        offsets: dict[int, Offsets] = {}
        if self.backend is None:
            enc = self.tokenizer(
                texts, add_special_tokens=False, verbose=False, return_offsets_mapping=offsets_over is not None
            )
            ids = [np.asarray(x, dtype=np.int64) for x in enc["input_ids"]]
            if offsets_over is not None:
                for k, x in enumerate(ids):
                    if len(x) > offsets_over:
                        offsets[k] = np.asarray(enc["offset_mapping"][k], dtype=np.int64).reshape(-1, 2)
            return ids, offsets
        # ids without offsets (``_batch_encoder``); the few texts that need offsets (sentences to
        # cut) are encoded again with them, always by the backend itself (its offsets map into
        # the text as given)
        ids = self._ids(texts, _batch_encoder(self.backend))
        if offsets_over is not None:
            long = [k for k, x in enumerate(ids) if len(x) > offsets_over]
            if long:
                encodings = self.backend.encode_batch([texts[k] for k in long], add_special_tokens=False)
                for k, e in zip(long, encodings, strict=True):
                    offsets[k] = np.array(e.offsets, dtype=np.int64).reshape(-1, 2)
        return ids, offsets

    def _ids(self, texts: list[str], encode: Any) -> list[np.ndarray]:
        """Ids of ``texts`` by the backend, the ASCII texts by its twin when it has one."""
        twin = self.twin
        if twin is None:
            return [np.array(e.ids, dtype=np.int64) for e in encode(texts, add_special_tokens=False)]
        plain = [twin.takes(t) for t in texts]
        easy = twin.encode([t for t, p in zip(texts, plain, strict=True) if p])
        rest = [t for t, p in zip(texts, plain, strict=True) if not p]
        hard = iter(encode(rest, add_special_tokens=False) if rest else ())
        return [np.array(next(easy if p else hard).ids, dtype=np.int64) for p in plain]

    # ------------------------------------------------------------------ cache
    def _store(self, texts: list[str], ids: list[np.ndarray], offsets: dict[int, Offsets]) -> None:
        with self._lock:
            for k, (t, x) in enumerate(zip(texts, ids, strict=True)):
                old = self._cache.pop(t, None)
                if old is not None:
                    self._cached -= len(old[0])
                self._cache[t] = (x, offsets.get(k))
                self._cached += len(x)
            while self._cached > self.cache_tokens and self._cache:
                _, (x, _) = self._cache.popitem(last=False)
                self._cached -= len(x)

    def clear(self) -> None:
        """Forget every cached text."""
        with self._lock:
            self._cache.clear()
            self._cached = 0


_REGISTRY: weakref.WeakKeyDictionary[Any, TextTokenizer] = weakref.WeakKeyDictionary()
_REGISTRY_LOCK = threading.Lock()


def text_tokenizer(tokenizer: Any) -> TextTokenizer:
    """The :class:`TextTokenizer` of ``tokenizer``, shared by everything that tokenises with it
    (made again when its vocabulary grows, e.g. after a landmark token was added); a
    :class:`TextTokenizer` is its own."""
    if isinstance(tokenizer, TextTokenizer):
        return tokenizer
    size = _vocab_size(tokenizer)
    with _REGISTRY_LOCK:
        tt = _REGISTRY.get(tokenizer)
        if tt is None or tt.size != size:
            tt = _REGISTRY[tokenizer] = TextTokenizer(tokenizer)
        return tt


def _vocab_size(tokenizer: Any) -> int:
    """The vocabulary size, added tokens included (``-1``: a tokenizer-like object without one)."""
    try:
        return len(tokenizer)
    except TypeError:
        return -1


def probe_texts(tokenizer: Any) -> list[str]:
    """Texts two tokenisers must give the same ids for before one stands in for the other:
    spaces, a paragraph break, non-ASCII, and ``tokenizer``'s special tokens inside text."""
    return [*_PROBES, *(f"a {t} b" for t in getattr(tokenizer, "all_special_tokens", [])[:8])]


def _batch_encoder(backend: Any) -> Any:
    """``backend``'s batch call for ids alone: ``encode_batch_fast`` (tokenizers >= 0.20, no
    offsets tracked, ~15 % faster) where it has one."""
    return getattr(backend, "encode_batch_fast", None) or backend.encode_batch


#: ASCII characters a ``BertNormalizer`` with ``clean_text`` deletes (control characters other
#: than tab, newline and carriage return): texts with any go to the backend itself.
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

#: ASCII texts the twin must tokenise exactly as the backend does before it is used: case,
#: punctuation, digits, whitespace runs, contractions, long words, a URL.
_ASCII_PROBES = (
    "Hello, World! The QUICK brown fox's 3.14 jumps -- over\tthe\n\nlazy dog (again).",
    "  Multiple   spaces\r\nand CamelCaseWords, e-mail@example.com & http://x.org/a?b=c#d",
    "Supercalifragilisticexpialidocious antidisestablishmentarianism 1,234,567.89 $5 50% #tag",
    "Don't stop; won't stop: isn't it? \"Quoted\" 'single' [brackets] {braces} <angles> a/b\\c ~`^|_",
)


class AsciiTwin:
    """A ``BertNormalizer`` backend's twin without the normaliser, for ASCII texts: see the module.

    ``takes(text)`` says whether a text may go to the twin: ASCII, with no control character
    the normaliser would delete and none of the backend's added tokens (``[SEP]``, a landmark
    token) in any case, since those are matched on the text as given. ``of`` makes one only for
    a ``BertNormalizer`` whose twin agrees with the backend on probe texts."""

    def __init__(self, backend: Any, lowercase: bool, added: re.Pattern[str] | None) -> None:
        self.backend = backend
        self.lowercase = lowercase
        self.added = added
        self._encode = _batch_encoder(backend)

    @classmethod
    def of(cls, backend: Any) -> AsciiTwin | None:
        """The twin of ``backend`` (a ``tokenizers.Tokenizer``), or ``None`` where it cannot be
        exact: any normaliser but ``BertNormalizer``, or one that disagrees on the probes."""
        try:
            from tokenizers import normalizers

            norm = backend.normalizer
            if not isinstance(norm, normalizers.BertNormalizer):
                return None
            twin = copy.deepcopy(backend)
            twin.normalizer = None
            contents = sorted(
                {t.content for t in backend.get_added_tokens_decoder().values() if t.content}, key=len, reverse=True
            )
            # clean_text turns tabs and line breaks into spaces before added tokens are matched
            patterns = ["".join(r"[ \t\n\r]" if ch == " " else re.escape(ch) for ch in c) for c in contents]
            added = re.compile("|".join(patterns), re.IGNORECASE) if contents else None
            made = cls(twin, bool(norm.lowercase), added)
            probes = [p for p in (*_ASCII_PROBES, *_PROBES) if made.takes(p)]
            want = [e.ids for e in backend.encode_batch(probes, add_special_tokens=False)]
            got = [e.ids for e in made.encode(probes)]
        except Exception as exc:  # noqa: BLE001 - any surprise: the backend alone is always right
            logger.debug("no ASCII twin for this tokenizer (%s)", exc)
            return None
        if got != want:
            logger.debug("ASCII twin disagrees with the tokenizer on probes; not used")
            return None
        return made

    def takes(self, text: str) -> bool:
        """Whether the twin gives ``text`` the backend's ids."""
        return (
            text.isascii()
            and _ASCII_CONTROL.search(text) is None
            and (self.added is None or self.added.search(text) is None)
        )

    def encode(self, texts: list[str]) -> Any:
        """Encodings of ``texts`` (each one the twin ``takes``), as an iterator."""
        if not texts:
            return iter(())
        if self.lowercase:
            texts = [t.lower() for t in texts]
        return iter(self._encode(texts, add_special_tokens=False))


def _fast_backend(tokenizer: Any) -> Any:
    """A private copy of a fast tokenizer's backend that tokenises as the tokenizer's own call
    does (no truncation, no padding, its special-token splitting); ``None`` when there is
    none or it disagrees with the tokenizer on the probes.

    Only a transformers tokenizer itself is bypassed: an object that merely behaves like one
    (a wrapper with a ``__call__`` of its own, the ONNX export's tokenizer) is always called."""
    transformers = sys.modules.get("transformers")
    base = getattr(transformers, "PreTrainedTokenizerBase", None) if transformers is not None else None
    if base is None or not isinstance(tokenizer, base) or not getattr(tokenizer, "is_fast", False):
        return None
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return None
    try:
        backend = copy.deepcopy(backend)
        backend.no_truncation()
        backend.no_padding()
        split = bool(getattr(tokenizer, "split_special_tokens", False))
        if getattr(backend, "encode_special_tokens", split) != split:
            backend.encode_special_tokens = split
        probes = probe_texts(tokenizer)
        expected = tokenizer(probes, add_special_tokens=False, verbose=False)["input_ids"]
        got = [e.ids for e in backend.encode_batch(probes, add_special_tokens=False)]
    except Exception as exc:  # noqa: BLE001 - any surprise: the tokenizer's own call is always right
        logger.debug("tokenizer backend not usable directly (%s); using the tokenizer's call", exc)
        return None
    if got != [list(x) for x in expected]:
        logger.debug("tokenizer backend disagrees with the tokenizer's call; using the call")
        return None
    return backend
