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
Where `flash-tokenizer <https://github.com/NLPOptimize/flash-tokenizer>`_ is installed (the
``fast-tokenizer`` extra; a C++ BERT WordPiece tokenizer), the twin hands batches of such texts
to it instead: about 3.5x the twin's rate again on one thread, the same ids (checked on probe
texts and random ASCII when it is set up; words past the model's ``max_input_chars_per_word``,
which the backend turns into ``[UNK]`` and it does not, stay with the backend).

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
import os
import random
import re
import string
import sys
import tempfile
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
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
        easy = iter(twin.ids([t for t, p in zip(texts, plain, strict=True) if p]))
        rest = [t for t, p in zip(texts, plain, strict=True) if not p]
        hard = iter(encode(rest, add_special_tokens=False) if rest else ())
        return [np.array(next(easy) if p else next(hard).ids, dtype=np.int64) for p in plain]

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
        self._flash: FlashWordPiece | None = None
        self._flash_tried = False
        self._flash_lock = threading.Lock()

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
        return made if _agrees(want, got, "ASCII twin") else None

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

    def ids(self, texts: list[str]) -> list[list[int]]:
        """Ids of ``texts`` (each one the twin ``takes``): by :class:`FlashWordPiece` where it is
        installed and the call is a batch, else by the twin's own backend."""
        flash = self.flash() if len(texts) >= FLASH_MIN_TEXTS else None
        if flash is None:
            return [e.ids for e in self.encode(texts)]
        fit = [flash.takes(t) for t in texts]
        rest = self.encode([t for t, f in zip(texts, fit, strict=True) if not f])
        return [flash.ids(t) if f else next(rest).ids for t, f in zip(texts, fit, strict=True)]

    def flash(self) -> FlashWordPiece | None:
        """The :class:`FlashWordPiece` for this twin's vocabulary, made on first use (``None``:
        not installed, switched off, or not exact for this tokenizer)."""
        if not self._flash_tried:
            with self._flash_lock:
                if not self._flash_tried:
                    self._flash = FlashWordPiece.of(self.backend, self.lowercase, self.takes)
                    self._flash_tried = True
        return self._flash

    def __getstate__(self) -> dict[str, Any]:
        # the C++ tokenizer does not pickle: a copy makes its own on first use
        state = self.__dict__.copy()
        state.update(_flash=None, _flash_tried=False, _flash_lock=None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._flash_lock = threading.Lock()

    def __deepcopy__(self, memo: dict[int, Any]) -> AsciiTwin:
        made = AsciiTwin(copy.deepcopy(self.backend, memo), self.lowercase, self.added)
        memo[id(self)] = made
        return made


#: Texts in one call before the twin hands them to :class:`FlashWordPiece`: batches (indexing,
#: training) gain from it; a query alone is not worth its setup (an import and a vocabulary load).
FLASH_MIN_TEXTS = 8

#: ``LANDMARK_RAG_FAST_TOKENIZER=0`` keeps the tokenizers backend even where flash-tokenizer is
#: installed (ids are the same either way; for comparisons and as an escape hatch).
FLASH_ENV = "LANDMARK_RAG_FAST_TOKENIZER"


_FLASH_MADE: dict[tuple[Any, ...], FlashWordPiece] = {}
_FLASH_LOCK = threading.Lock()


class FlashWordPiece:
    """flash-tokenizer's BERT WordPiece tokenizer over a backend's vocabulary, for the ASCII texts
    an :class:`AsciiTwin` takes: see the module.

    :meth:`of` makes one only where it is installed and gives the backend's ids on probe texts
    and a few thousand random ASCII strings; :meth:`takes` leaves to the backend the texts with a
    word longer than the model's ``max_input_chars_per_word`` (the backend's ``[UNK]``)."""

    def __init__(self, core: Any, max_word: int) -> None:
        self.core = core
        self._long_word = re.compile(f"[A-Za-z0-9]{{{max_word + 1},}}")

    @classmethod
    def of(cls, backend: Any, lowercase: bool, takes: Callable[[str], bool]) -> FlashWordPiece | None:
        """The one for ``backend`` (a ``tokenizers.Tokenizer`` with a WordPiece model: the twin's
        normaliser-free copy, which ``takes`` says a text may go to), or ``None`` where it
        cannot be exact."""
        if os.environ.get(FLASH_ENV, "1").strip().lower() in {"0", "false", "no", "off"}:
            return None
        try:
            from flash_tokenizer._core import FlashBertTokenizer
        except Exception:  # noqa: BLE001 - not installed, or no wheel for this platform: the backend is exact
            return None
        try:
            from tokenizers import models, pre_tokenizers

            model = backend.model
            if not isinstance(model, models.WordPiece) or model.continuing_subword_prefix != "##":
                return None
            if not isinstance(backend.pre_tokenizer, pre_tokenizers.BertPreTokenizer):
                return None
            vocab = backend.get_vocab(with_added_tokens=False)
            tokens = sorted(vocab, key=vocab.__getitem__)
            if [vocab[t] for t in tokens] != list(range(len(tokens))) or not all(tokens) or re.search(
                r"\s", "".join(tokens)
            ):
                return None  # the vocabulary file it reads is one token per line, by position
            key = (tuple(tokens), lowercase, int(model.max_input_chars_per_word), model.unk_token)
            with _FLASH_LOCK:
                made = _FLASH_MADE.get(key)
            if made is not None:
                return made
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "vocab.txt")
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write("\n".join(tokens) + "\n")
                core = FlashBertTokenizer(path, lowercase, 1 << 30, True)
            made = cls(core, int(model.max_input_chars_per_word))
            probes = [p for p in _flash_probes(tokens) if takes(p) and made.takes(p)]
            want = [e.ids for e in backend.encode_batch([p.lower() if lowercase else p for p in probes],
                                                        add_special_tokens=False)]
            got = [made.ids(p) for p in probes]
        except Exception as exc:  # noqa: BLE001 - any surprise: the backend alone is always right
            logger.debug("flash-tokenizer not used for this tokenizer (%s)", exc)
            return None
        if not _agrees(want, got, "flash-tokenizer"):
            return None
        with _FLASH_LOCK:
            # one per vocabulary set-up in a process: tokenizers of one model share it
            return _FLASH_MADE.setdefault(key, made)

    def takes(self, text: str) -> bool:
        """Whether ``text`` (one the twin takes) has no word the backend would make ``[UNK]``."""
        return self._long_word.search(text) is None

    def ids(self, text: str) -> list[int]:
        """The ids of ``text``, without the ``[CLS]`` and ``[SEP]`` it always adds."""
        return self.core.encode(text, "longest", 1 << 30)[1:-1]


def _agrees(want: list[list[int]], got: list[list[int]], what: str) -> bool:
    """Whether a stand-in tokeniser (``what``) gave the backend's ids on every probe (logged if not)."""
    if got != want:
        logger.debug("%s disagrees with the tokenizer on probes; not used", what)
        return False
    return True


def _flash_probes(tokens: list[str]) -> list[str]:
    """ASCII probe texts for :class:`FlashWordPiece`: the twin's probes, random printable ASCII,
    and runs of the vocabulary's own words (so that WordPiece's longest-match splits are tried)."""
    rng = random.Random(13)
    alphabet = string.ascii_letters + string.digits + string.punctuation + " \t\n\r" * 3
    noise = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(1000)]
    words = [t.removeprefix("##") for t in tokens if t.isascii() and t.isprintable()]
    runs = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 24))) for _ in range(1000)]
    glued = ["".join(rng.choice(words) for _ in range(rng.randint(2, 6))) for _ in range(300)]
    return [*_ASCII_PROBES, *_PROBES, "a" * 100, "b" * 99 + "." + "c" * 100, *noise, *runs, *glued]


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
