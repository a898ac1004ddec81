"""Text -> lexical terms for the package's BM25 (``store/bm25.py``): the sentence-level index of
a store (``store/lexical.py``) and the evaluation's ``bm25`` and ``hybrid`` systems.

One analyzer per ``language`` setting, used for the stored sentences and for queries alike
(terms only match when both sides are analysed the same way):

- words are runs of word characters of two or more letters, case-folded (the splitter
  bm25s uses, so plain English text gives the terms a bm25s pipeline would);
- stop words of the language are dropped and the rest Snowball-stemmed with PyStemmer, so
  "reactions" matches "reaction" (without stemming BM25 misses every plural and tense);
- scripts written without spaces (Han, Hiragana, Katakana, Thai, Lao, Khmer, Myanmar) have
  no words to split on, so each run becomes its single characters plus overlapping character
  bigrams (Lucene's CJK approach): "東京大学" -> 東 京 大 学 東京 京大 大学. Works for any
  model and needs no dictionary; the unigrams keep one-character queries answerable and BM25's
  IDF keeps frequent ones cheap.

Text is NFKC-normalised first, so full-width letters and digits match their ASCII forms.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache

#: bump when the terms an analyzer produces change, so persisted lexical indexes rebuild
ANALYZER_VERSION = 1

#: ISO 639-1 code -> Snowball algorithm name (PyStemmer); full names are accepted as well
_ISO = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "cs": "czech", "da": "danish",
    "nl": "dutch", "en": "english", "eo": "esperanto", "et": "estonian", "fi": "finnish", "fr": "french",
    "de": "german", "el": "greek", "hi": "hindi", "hu": "hungarian", "id": "indonesian", "ga": "irish",
    "it": "italian", "lt": "lithuanian", "ne": "nepali", "no": "norwegian", "nb": "norwegian",
    "fa": "persian", "pl": "polish", "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian",
    "st": "sesotho", "es": "spanish", "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish",
    # no Snowball stemmer: no stemming, stop words where bm25s has a list, bigrams for the scripts
    "zh": "chinese", "ja": "japanese", "ko": "korean", "th": "thai",
}
#: languages whose stop-word list bm25s ships
_STOPWORD_LANGS = {
    "english", "german", "dutch", "french", "spanish", "portuguese", "italian", "russian", "swedish",
    "norwegian", "chinese", "turkish", "korean", "danish",
}
_NO_STEMMER = {"chinese", "japanese", "korean", "thai", "none"}

# Scripts without spaces between words: Han (incl. extension A and compatibility), Hiragana,
# Katakana (incl. half-width), Thai, Lao, Myanmar, Khmer.
_NOSPACE = (
    "\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
    "\u0e00-\u0e7f\u0e80-\u0eff\u1000-\u109f\u1780-\u17ff"
)
_TOKEN = re.compile(rf"([{_NOSPACE}]+)|((?:(?![{_NOSPACE}])\w){{2,}})")


def language_name(language: str | None) -> str:
    """Canonical language name for ``language`` (ISO code or name, any case; ``None`` -> english).

    ``"none"`` means no stemming and no stop words (terms are the case-folded words).
    """
    name = (language or "english").strip().lower()
    name = _ISO.get(name, name)
    known = set(_ISO.values()) | {"none", "porter", "dutch_porter"}
    if name not in known:
        raise ValueError(
            f"unknown language {language!r} for lexical search; use an ISO 639-1 code or one of: "
            + ", ".join(sorted(known))
        )
    return name


@lru_cache(maxsize=16)
def make_analyzer(language: str | None = "english") -> Callable[[str], list[str]]:
    """The analyzer for ``language``: ``text -> terms`` (cached per language)."""
    name = language_name(language)
    stop: frozenset[str] = frozenset()
    if name in _STOPWORD_LANGS:
        from bm25s.tokenization import _infer_stopwords

        stop = frozenset(_infer_stopwords(name))
    stem_word: Callable[[str], str] | None = None
    if name not in _NO_STEMMER:
        try:
            import Stemmer
        except ImportError as exc:  # pragma: no cover - PyStemmer is a declared dependency of [hybrid]
            raise ImportError(
                "lexical search needs PyStemmer for stemming: pip install 'landmark-rag[hybrid]'"
            ) from exc
        stem_word = Stemmer.Stemmer(name).stemWord

    cache: dict[str, str] = {}

    def analyze(text: str) -> list[str]:
        out: list[str] = []
        for run, word in _TOKEN.findall(unicodedata.normalize("NFKC", text).lower()):
            if run:
                out.extend(run)
                out.extend(run[i : i + 2] for i in range(len(run) - 1))
            elif word not in stop:
                if stem_word is None:
                    out.append(word)
                else:
                    term = cache.get(word)
                    if term is None:
                        term = stem_word(word)
                        if len(cache) < 1_000_000:  # bounded: a corpus of random strings
                            cache[word] = term
                    out.append(term)
        return out

    analyze.__doc__ = f"Lexical terms of a text ({name})."
    return analyze


__all__ = ["ANALYZER_VERSION", "language_name", "make_analyzer"]
