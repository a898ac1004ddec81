"""Text overlap with evaluation documents: the check that catches a copy under another title.

A title list catches an evaluation document only under the title it was listed with. Public
story and article collections often hold the same text under several names (a tale in two
fairy books, a renamed file), so the benchmark's documents are also compared by their words:
each document is reduced to the hashes of its word n-grams (shingles), and a training document
that shares enough of them with the benchmark is dropped.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable

#: Words per shingle: twelve identical words in a row occur in two unrelated texts almost
#: only when one quotes the other (stock phrases such as "once upon a time there was a
#: king" are shorter).
SHINGLE_WORDS = 12
#: Shared shingles at which a document counts as a copy: 20 shingles is a verbatim run of
#: about 31 words, a few sentences; unrelated FairytaleQA training stories share at most 2
#: with the benchmark's stories.
COPY_SHINGLES = 20

_WORD = re.compile(r"\w+")


def shingles(text: str, n: int = SHINGLE_WORDS) -> set[int]:
    """Hashes of every run of ``n`` words of ``text`` (case-, punctuation-, whitespace- and
    Unicode-form-insensitive, so a re-typeset copy still matches). A stable hash, not Python's
    salted ``hash``: a recipe's exclusions must not depend on the process."""
    words = _WORD.findall(unicodedata.normalize("NFKC", text).casefold())
    return {
        int.from_bytes(hashlib.blake2b(" ".join(words[i : i + n]).encode("utf-8"), digest_size=8).digest(), "big")
        for i in range(max(0, len(words) - n + 1))
    }


def shingles_of(texts: Iterable[str], n: int = SHINGLE_WORDS) -> frozenset[int]:
    """The union of :func:`shingles` of several texts (a benchmark's documents)."""
    out: set[int] = set()
    for text in texts:
        out |= shingles(text, n)
    return frozenset(out)


def is_copy(text: str, reference: frozenset[int], threshold: int = COPY_SHINGLES) -> bool:
    """Whether ``text`` shares at least ``threshold`` shingles with ``reference``."""
    if not reference:
        return False
    return len(shingles(text) & reference) >= threshold
