"""Turn sentence hits into passages: expand, clip, merge, slice exactly."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, cast

import numpy as np

from landmark_rag.expand.headings import is_heading_line
from landmark_rag.expand.strategies import Strategy, approx_tokens, choose_strategy, join_limits
from landmark_rag.store.schema import user_metadata
from landmark_rag.types import DENSE_SCORE, EncodedDocument, Hit, Passage, Sentence, passage_pages


class SentenceSource(Protocol):
    """Where expansion reads neighbouring sentences from (a docstore, memory), one document at a time."""

    def get_sentences(self, doc_id: str, indices: Iterable[int]) -> dict[int, Sentence]: ...

    def get_embeddings(self, doc_id: str, indices: Iterable[int]) -> dict[int, np.ndarray]: ...


class BatchSentenceSource(Protocol):
    """A source that reads the sentences of many documents in one call (``ChromaSentenceStore``:
    its by-document read, ``read_documents``, which a vector store answers in one round trip)."""

    def read_documents(
        self, requests: Mapping[str, Iterable[int] | None], *, embeddings: bool = False
    ) -> dict[str, EncodedDocument]: ...


#: Anything expansion and re-scoring read sentences from.
AnySentenceSource = SentenceSource | BatchSentenceSource


def read_sentences(
    source: AnySentenceSource, requests: Mapping[str, Iterable[int]], *, embeddings: bool = False
) -> tuple[dict[str, dict[int, Sentence]], dict[str, dict[int, np.ndarray]]]:
    """Sentences (and, with ``embeddings``, vectors) of several documents, by document id.

    One ``read_documents`` call when the source has it (a vector store: one round trip per
    query instead of one or two per document hit), else ``get_sentences``/``get_embeddings``
    per document (a docstore, memory).
    """
    read_documents = getattr(source, "read_documents", None)
    if callable(read_documents):
        got: dict[str, EncodedDocument] = read_documents(requests, embeddings=embeddings)
        sents = {d: {s.index: s for s in doc.sentences} for d, doc in got.items()}
        vecs = (
            {d: {s.index: v for s, v in zip(doc.sentences, doc.embeddings, strict=True)} for d, doc in got.items()}
            if embeddings else {}
        )
        return sents, vecs
    source = cast(SentenceSource, source)  # no batch read: one document at a time
    sents = {d: source.get_sentences(d, sorted(idx)) for d, idx in requests.items()}
    vecs = {d: source.get_embeddings(d, sorted(idx)) for d, idx in requests.items()} if embeddings else {}
    return sents, vecs


@dataclass
class InMemorySource:
    """A :class:`SentenceSource` over already-encoded documents (evaluation, tests)."""

    sentences: dict[str, list[Sentence]] = field(default_factory=dict)
    embeddings: dict[str, np.ndarray] = field(default_factory=dict)

    def get_sentences(self, doc_id: str, indices: Iterable[int]) -> dict[int, Sentence]:
        sents = self.sentences.get(doc_id, [])
        return {i: sents[i] for i in indices if 0 <= i < len(sents)}

    def get_embeddings(self, doc_id: str, indices: Iterable[int]) -> dict[int, np.ndarray]:
        vecs = self.embeddings.get(doc_id)
        if vecs is None:
            return {}
        return {i: vecs[i] for i in indices if 0 <= i < len(vecs)}


@dataclass
class _Span:
    lo: int
    hi: int
    score: float
    hits: list[int]
    best: Hit
    cosine: float | None = None


def hit_cosine(hit: Hit) -> float | None:
    value = hit.metadata.get(DENSE_SCORE) if hit.metadata else None
    return float(value) if isinstance(value, int | float) else None


def _best_cosine(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else max(a, b)


def expand_hits(
    hits: Sequence[Hit],
    source: AnySentenceSource,
    strategy: Strategy | str = "front",
    *,
    query_vector: np.ndarray | None = None,
    count_tokens: Callable[[str], int] | None = None,
    order: Literal["score", "document"] = "score",
    max_passages: int | None = None,
) -> list[Passage]:
    """Expand each hit with ``strategy``, merge overlapping or adjacent spans of a document,
    and return passages whose text is the exact slice of the original document.

    A merged passage scores as its best hit and records every hit inside it. Sentences the
    source cannot supply (before the start, past the end) are simply not included.

    With ``max_passages``, hits are taken best first and only as many as are needed to form
    that many passages: one more hit adds at most one passage, so the result has exactly
    ``max_passages`` passages whenever the hits allow it, and lower hits that would merge
    into (and so swallow) the best passages are not used.
    """
    strat = choose_strategy(strategy)
    if strat.needs_vectors and query_vector is None:  # before any read from the source
        raise ValueError(f"the {type(strat).__name__.lower()} strategy needs the query vector")
    count = count_tokens or approx_tokens
    hits = [h for h in hits if not is_heading_line(h.sentence)]  # headings are where, not what
    by_doc: dict[str, list[Hit]] = defaultdict(list)
    for h in hits:
        if h.sentence.doc_id is None:
            raise ValueError("hits need sentences with a doc_id")
        by_doc[h.sentence.doc_id].append(h)

    spans_by_doc: dict[str, list[_Span]] = {}
    sents_by_doc: dict[str, dict[int, Sentence]] = {}
    joins_by_doc: dict[str, _Joins] = {}
    requests = {
        doc_id: sorted(
            {i for h in doc_hits for i in strat.candidates(h.sentence.index) if i >= 0}
            | {h.sentence.index for h in doc_hits}
        )
        for doc_id, doc_hits in by_doc.items()
    }
    all_sents, all_vecs = read_sentences(source, requests, embeddings=strat.needs_vectors) if requests else ({}, {})
    for doc_id, doc_hits in by_doc.items():
        sents = dict(all_sents.get(doc_id, {}))
        for h in doc_hits:  # the hit itself is always available
            sents.setdefault(h.sentence.index, h.sentence)
        vecs = all_vecs.get(doc_id, {})
        spans = []
        for h in doc_hits:
            z = h.sentence.index
            lo, hi = strat.span(z, h.score, sents, vecs, query_vector, count)
            lo, hi = _without_heading_edges(lo, hi, z, sents)
            spans.append(_Span(lo, hi, h.score, [z], h, hit_cosine(h)))
        spans_by_doc[doc_id] = spans
        sents_by_doc[doc_id] = sents
        joins_by_doc[doc_id] = _joiner(strat, sents, count)
    if max_passages is not None:
        spans_by_doc = _best_prefix(hits, spans_by_doc, max_passages, joins_by_doc, absorb=join_limits(strat)[0] > 0)
    passages = [
        _passage(doc_id, span, sents_by_doc[doc_id])
        for doc_id, spans in spans_by_doc.items()
        for span in _merge(spans, joins_by_doc[doc_id])
    ]
    if order == "document":
        passages.sort(key=lambda p: (p.doc_id, p.start))
    else:
        passages.sort(key=lambda p: (-p.score, p.doc_id, p.start))
    return passages


def _without_heading_edges(lo: int, hi: int, hit: int, sents: dict[int, Sentence]) -> tuple[int, int]:
    """``lo..hi`` without heading lines at either end (the hit itself is never one): a heading
    is the passage's metadata, and one at the end belongs to the next section."""
    while lo < hit and is_heading_line(sents[lo]):
        lo += 1
    while hi > hit and is_heading_line(sents[hi]):
        hi -= 1
    return lo, hi


#: Whether a span joins the span before it (sorted by start) in one passage.
_Joins = Callable[["_Span", "_Span"], bool]


def _touching(before: _Span, after: _Span) -> bool:
    return after.lo <= before.hi + 1


def _joiner(strategy: Strategy, sents: Mapping[int, Sentence], count: Callable[[str], int]) -> _Joins:
    """The join rule of one document: overlapping or touching spans always join (passages
    never overlap); a strategy that bridges (``Evidence``) also joins spans up to ``bridge``
    sentences apart when the sentences between were read, none of them is a heading line (a
    heading starts another section), and the joined passage keeps within its token limit."""
    bridge, cap = join_limits(strategy)
    if bridge <= 0:
        return _touching
    tokens: dict[int, int] = {}

    def size(lo: int, hi: int) -> int:
        for i in range(lo, hi + 1):
            if i not in tokens:
                tokens[i] = count(sents[i].text)
        return sum(tokens[i] for i in range(lo, hi + 1))

    def joins(before: _Span, after: _Span) -> bool:
        if _touching(before, after):
            return True
        gap = range(before.hi + 1, after.lo)
        if len(gap) > bridge or any(i not in sents or is_heading_line(sents[i]) for i in gap):
            return False
        return cap is None or size(before.lo, max(before.hi, after.hi)) <= cap

    return joins


def _best_prefix(
    hits: Sequence[Hit],
    spans_by_doc: dict[str, list[_Span]],
    limit: int,
    joins_by_doc: Mapping[str, _Joins],
    *,
    absorb: bool = False,
) -> dict[str, list[_Span]]:
    """Take hits best first until their spans form ``limit`` passages.

    A hit whose span would bridge two passages already formed (and so reduce their number)
    is skipped: its sentences sit next to passages the caller already gets. With ``absorb``
    (a strategy that joins nearby hits), the lower hits go on being read after that: each one
    that joins a passage already formed grows it (the evidence runs on there), and the others,
    which would add passages past ``limit``, are left out.
    """
    position = {id(h): r for r, h in enumerate(hits)}
    ranked = sorted(
        ((position[id(sp.best)], doc_id, sp) for doc_id, spans in spans_by_doc.items() for sp in spans),
        key=lambda t: (-t[2].score, t[0]),
    )
    kept: dict[str, list[_Span]] = defaultdict(list)
    counts: dict[str, int] = defaultdict(int)
    for _, doc_id, sp in ranked:
        full = sum(counts.values()) >= limit
        if full and not absorb:
            break
        n = len(_merge([*kept[doc_id], sp], joins_by_doc[doc_id]))
        if n == counts[doc_id] or (n > counts[doc_id] and not full):
            kept[doc_id].append(sp)
            counts[doc_id] = n
    return dict(kept)


def _merge(spans: list[_Span], joins: _Joins = _touching) -> list[_Span]:
    spans = sorted(spans, key=lambda s: (s.lo, s.hi))
    merged: list[_Span] = []
    for s in spans:
        if merged and joins(merged[-1], s):
            m = merged[-1]
            m.hi = max(m.hi, s.hi)
            m.hits.extend(s.hits)
            m.cosine = _best_cosine(m.cosine, s.cosine)
            if s.score > m.score:
                m.score, m.best = s.score, s.best
        else:
            merged.append(_Span(s.lo, s.hi, s.score, list(s.hits), s.best, s.cosine))
    return merged


def _passage(doc_id: str, span: _Span, sents: dict[int, Sentence]) -> Passage:
    return make_passage(doc_id, span.lo, span.hi, sents, span.hits, span.score, span.best, span.cosine)


def make_passage(
    doc_id: str,
    lo: int,
    hi: int,
    sents: Mapping[int, Sentence],
    hit_indices: Iterable[int],
    score: float,
    best: Hit,
    cosine: float | None,
) -> Passage:
    """The passage of sentences ``lo..hi``: its text rebuilt exactly from the sentences (each
    keeps the whitespace before it), scored as its best hit, with that hit's user metadata."""
    run = [sents[i] for i in range(lo, hi + 1)]
    text = run[0].text + "".join(s.space_before + s.text for s in run[1:])
    return Passage(
        doc_id=doc_id,
        start=run[0].start,
        end=run[-1].end,
        first_index=lo,
        last_index=hi,
        hit_indices=sorted(set(hit_indices)),
        score=float(score),
        text=text,
        metadata=user_metadata(best.metadata),
        pages=passage_pages(run),
        heading=run[0].heading,
        cosine=cosine,
    )
