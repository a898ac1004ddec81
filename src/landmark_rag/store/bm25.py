"""BM25 arithmetic over sentences given as term ids: the package's one BM25.

A sentence's score can take in the sentence before it (``context``, see
:meth:`BM25Index.scores`): a sentence often leaves to its predecessor the name it is about
("It was founded in 1851." after "The Times is a British newspaper."), which the landmark
vector of the sentence carries (it is encoded in context) but its own terms do not.

Both lexical rankings the package reports use it: the lexical half of hybrid search
(:class:`~landmark_rag.store.lexical.StoreLexicalIndex`, over a store's sentences) and the
evaluation harness's ``bm25`` and ``hybrid`` systems (over a corpus in memory), so every
BM25 figure in a results table comes from the same scoring. Terms come from
``store/analyzer.py``; this module only counts.

It is BM25 as ``bm25s`` scores it (Lucene variant; k1 1.5 and b 0.75 by default, a model's
fusion may set others), pinned to ``bm25s.BM25`` by a test, but the matrix is built with a few vectorised numpy operations:
``bm25s.BM25.index`` loops over documents in Python (9 s for 100k sentences on the shared
CPU, against 0.85 s), and a store's index is rebuilt whenever a reader sees the store change.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

#: bm25s's (and Lucene's) parameters: term-frequency saturation and length normalisation. What
#: every BM25 here uses unless given others (a model's ``FusionConfig.bm25_k1`` / ``bm25_b``).
DEFAULT_K1 = 1.5
DEFAULT_B = 0.75


def check_parameters(k1: float, b: float) -> None:
    """A ``ValueError`` unless ``k1 >= 0`` (term-frequency saturation; 0 counts a term once) and
    ``0 <= b <= 1`` (how far a sentence's length normalises its scores; 0: not at all)."""
    if not 0.0 <= float(k1) < float("inf"):
        raise ValueError(f"BM25 k1 must be finite and >= 0, not {k1!r}")
    if not 0.0 <= float(b) <= 1.0:
        raise ValueError(f"BM25 b must lie in [0, 1], not {b!r}")


class BM25Index:
    """BM25 over sentences given as term ids (pure, in memory): one row per sentence id.

    The Lucene variant, by default with bm25s's parameters (k1 1.5, b 0.75; a model's fusion
    may set others: ``FusionConfig.bm25_k1`` / ``bm25_b``); see the module docstring for why
    the matrix is built here rather than by ``bm25s``.

    ``flat`` holds every sentence's term ids back to back and ``lengths`` their counts.
    ``documents``: one label per row (e.g. the document id's number), rows of a document
    consecutive and in sentence order; it tells which row precedes which, for ``context``
    (``None``: no row has a predecessor). ``positions``: each row's sentence index within its
    document, when rows may skip sentences; a row then follows the row before it only when its
    index is one more (``None``: consecutive rows of a document are consecutive sentences).
    """

    def __init__(
        self, ids: Sequence[str], flat: np.ndarray, lengths: np.ndarray, vocab: dict[str, int],
        *, k1: float = DEFAULT_K1, b: float = DEFAULT_B, documents: np.ndarray | None = None,
        positions: np.ndarray | None = None,
    ) -> None:
        check_parameters(k1, b)
        self.ids = list(ids)
        self.vocab = vocab
        self.k1, self.b = float(k1), float(b)
        n, n_terms = len(self.ids), max(len(vocab), 1)
        lengths = np.asarray(lengths, dtype=np.int64)
        flat = np.asarray(flat, dtype=np.int64)
        if lengths.shape[0] != n or int(lengths.sum()) != flat.shape[0]:
            raise ValueError("ids, term ids and lengths disagree")
        # follows[r]: row r - 1 is the sentence before row r in the same document
        self._follows = np.zeros(n, dtype=bool)
        if documents is not None:
            documents = np.asarray(documents)
            if documents.shape != (n,):
                raise ValueError(f"documents: one label per row expected ({n}), got shape {documents.shape}")
            self._follows[1:] = documents[1:] == documents[:-1]
            if positions is not None:
                positions = np.asarray(positions, dtype=np.int64)
                if positions.shape != (n,):
                    raise ValueError(f"positions: one index per row expected ({n}), got shape {positions.shape}")
                self._follows[1:] &= positions[1:] == positions[:-1] + 1
        doc = np.repeat(np.arange(n, dtype=np.int64), lengths)
        pairs, tf = np.unique(flat * max(n, 1) + doc, return_counts=True)  # sorted by term, then row
        term, row = pairs // max(n, 1), pairs % max(n, 1)
        df = np.bincount(term, minlength=n_terms)
        idf = np.log1p((n - df + 0.5) / (df + 0.5))
        avg = float(lengths.mean()) if n and lengths.sum() else 1.0
        norm = k1 * ((1.0 - b) + b * lengths[row] / avg)
        self._data = (idf[term] * tf / (norm + tf)).astype(np.float32)
        self._rows = row
        self._indptr = np.concatenate([[0], np.cumsum(df)])

    @classmethod
    def from_terms(
        cls, ids: Sequence[str], rows: Sequence[Sequence[int]], vocab: dict[str, int], *,
        documents: np.ndarray | None = None, k1: float = DEFAULT_K1, b: float = DEFAULT_B,
    ) -> BM25Index:
        """From one list of term ids per sentence."""
        lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        flat = np.fromiter((t for r in rows for t in r), dtype=np.int64, count=int(lengths.sum()))
        return cls(ids, flat, lengths, vocab, documents=documents, k1=k1, b=b)

    @classmethod
    def from_texts(
        cls, ids: Sequence[str], texts: Sequence[str], analyze: Callable[[str], list[str]], *,
        documents: np.ndarray | None = None, k1: float = DEFAULT_K1, b: float = DEFAULT_B,
    ) -> BM25Index:
        """From one text per row, analysed by ``analyze`` (``store.analyzer.make_analyzer``):
        an in-memory corpus (the evaluation's systems) in one call."""
        vocab: dict[str, int] = {}
        rows = [[vocab.setdefault(t, len(vocab)) for t in analyze(text)] for text in texts]
        return cls.from_terms(ids, rows, vocab, documents=documents, k1=k1, b=b)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def nbytes(self) -> int:
        """Bytes of the score matrix (values, rows, term pointers)."""
        return int(self._data.nbytes + self._rows.nbytes + self._indptr.nbytes)

    def scores(self, terms: Sequence[str], *, context: float = 0.0) -> np.ndarray:
        """float32 BM25 score of every row for a query's terms (zeros when none is known).

        A term repeated in the query counts as often as it appears (as in bm25s).
        ``context``: each row's score plus ``context`` times the score of the sentence before
        it in its document (``documents``); 0 scores each sentence alone. A sentence whose
        predecessor matches then matches too, so more rows can score above zero.
        """
        if context < 0:
            raise ValueError(f"context must be >= 0, not {context!r}")
        out = np.zeros(len(self.ids), dtype=np.float32)
        for t in terms:
            j = self.vocab.get(t)
            if j is not None and j + 1 < self._indptr.shape[0]:
                lo, hi = self._indptr[j], self._indptr[j + 1]
                out[self._rows[lo:hi]] += self._data[lo:hi]  # rows are unique within a term
        if context and out.shape[0] > 1:
            own = out.copy()
            out[1:] += np.float32(context) * np.where(self._follows[1:], own[:-1], np.float32(0))
        return out

    def top(self, terms: Sequence[str], n: int, *, context: float = 0.0) -> list[tuple[int, float]]:
        """Rows with a positive score, best first, at most ``n`` (ties: lower row first)."""
        if n <= 0 or not self.ids:
            return []
        return ranked_rows(self.scores(terms, context=context), n)


def ranked_rows(scores: np.ndarray, n: int) -> list[tuple[int, float]]:
    """The ``n`` best rows with a positive score, best first (ties: lower row first).

    A prefix of the full ranking whatever ``n``: rows tied with the ``n``-th are all kept
    until the row order has decided between them (a partition alone keeps any of them, so a
    read of ``n`` and a deeper read could disagree on which came first).
    """
    pos = np.flatnonzero(scores > 0)
    if n <= 0:
        return []
    if pos.size > n:
        kth = np.partition(scores[pos], pos.size - n)[pos.size - n]  # the n-th best score
        pos = pos[scores[pos] >= kth]
    order = pos[np.lexsort((pos, -scores[pos]))][:n]
    return [(int(i), float(scores[i])) for i in order]


__all__ = ["BM25Index", "ranked_rows"]
