"""``LandmarkIndex``: add documents, search passages, expand and re-score hits.

The pieces it wires are the pipeline's own (``encode``, ``store``, ``ingest``,
``retrieve``, ``expand``); what lives here is only the wiring that every adapter used to
repeat: which encoder goes with a store (``store.identity.store_model``), which expansion a
search uses (``expand.choose_strategy``), recording and checking the model identity, writing
through the one write path (``ingest/write.py``), and turning a query into exactly ``k``
exact passages.

A search resolves its mode and expansion once, encodes the query, and hands the query, the
store, the lexical index and the fusion settings to ``retrieve`` (``find_passages``; the
sentence hits alone: ``find_hits``), whose one loop reads a mode's best sentences
(``dense``: the landmark vectors; ``lexical``: BM25 over the same stored sentences,
``store/lexical.py``; ``hybrid``: both fused, ``retrieve/fusion.py``; the default is the
model's ``landmark_config.json`` ``fusion.mode``) and expands, merges and tops them up to
exactly ``k`` passages, the same way for every mode.

The class keeps the wiring and the public API; its steps live next to it: ``opening``
(which store and model ``open`` finds), ``requests`` (a search's arguments, checked before
anything is read), ``writing`` (what each ``add_*`` hands ``ingest``) and ``expansion``
(hits a framework found, made into passages).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from landmark_rag.encode.protocols import QueryEncoder, SentenceEncoder
from landmark_rag.expand import AnySentenceSource, Strategy, check_max_tokens, choose_strategy
from landmark_rag.expand.strategies import StrategyName
from landmark_rag.index.expansion import expand_found
from landmark_rag.index.opening import open_store, records_model, store_identity
from landmark_rag.index.requests import (
    ORDERS,
    Order,
    Query,
    check_order,
    check_passage_cap,
    check_request,
    needs_vector,
    search_limits,
)
from landmark_rag.index.writing import (
    Encode,
    check_encoded,
    files_to_index,
    index_files,
    store_encoded,
    write_sources,
)
from landmark_rag.ingest import DocumentEncoder, FileSet, IndexReport, SourceDocument, text_documents
from landmark_rag.retrieve import Request, Sources, cosine_rescore, find_hits, find_passages, unit_vector
from landmark_rag.retrieve.fusion import FusionConfig, Mode, check_mode, model_fusion
from landmark_rag.retrieve.rescore import Scored
from landmark_rag.retrieve.search import find_budget_hits
from landmark_rag.store import DEFAULT_COLLECTION, DEFAULT_DB, record_model
from landmark_rag.store.protocols import SentenceStore
from landmark_rag.types import EncodedDocument, Hit, Passage

if TYPE_CHECKING:
    from landmark_rag.encode.config import LandmarkConfig
    from landmark_rag.store.lexical import StoreLexicalIndex

# the argument types of a search, importable from here as before
__all__ = ["ORDERS", "LandmarkIndex", "Order", "Query"]


class LandmarkIndex:
    """An encoder, a sentence store and the model's boundary expansion.

    Usually opened with :meth:`open`. Constructed directly, ``store`` is a
    :class:`~landmark_rag.store.ChromaSentenceStore` (or, for :meth:`expand` and
    :meth:`rescore` only, any ``SentenceSource`` such as a LlamaIndex docstore) and
    ``encoder`` a :class:`~landmark_rag.LandmarkEncoder` (``None`` when the caller brings
    query vectors itself). ``encoder_loader`` instead: a function of no arguments that
    returns the encoder, called on first use (so writing unchanged documents never loads a
    model). A store that records a model identity is checked against the encoder once it is
    there; an unmarked one is marked by the first write.

    ``strategy``/``strategy_params``: the default expansion (``None``: what the model's
    ``landmark_config.json`` names; ``config`` gives that config when there is no encoder).
    ``count_tokens`` measures the adaptive strategy's budget (default: the encoder's
    tokenizer, else about four characters a token).

    ``fusion``: a ``FusionConfig``, or a dict of settings overriding the model's
    (``mode``, ``method``, ``weight``, ``depth``, ``rrf_k``, ``language``, ``lexical_context``,
    ``bm25_k1``, ``bm25_b``); the model's
    ``landmark_config.json`` ``fusion`` entry otherwise (none: dense only).
    ``lexical_cache``: where the lexical index is cached (``None``: beside a local store,
    in memory for a server; ``False``: memory only; a folder).
    """

    def __init__(
        self,
        store: SentenceStore | AnySentenceSource,
        encoder: QueryEncoder | None = None,
        *,
        strategy: StrategyName | Strategy | None = None,
        strategy_params: dict[str, int | float] | None = None,
        config: LandmarkConfig | None = None,
        count_tokens: Callable[[str], int] | None = None,
        fusion: FusionConfig | dict[str, Any] | None = None,
        lexical_cache: str | os.PathLike[str] | bool | None = None,
        encoder_loader: Callable[[], QueryEncoder] | None = None,
    ) -> None:
        if encoder is not None and encoder_loader is not None:
            raise ValueError("pass encoder or encoder_loader, not both")
        self.store = store
        self._encoder = encoder
        self._load_encoder = encoder_loader
        self.strategy_params = dict(strategy_params or {})
        self._config = config
        self._strategy_choice, self._fusion_choice = strategy, fusion
        self._strategy: Strategy | None = None
        self._fusion: FusionConfig | None = None
        self._count_tokens = count_tokens
        self._lexical_cache = lexical_cache
        self._lexical: StoreLexicalIndex | None = None
        self._identity_recorded = False
        self._source: str | None = None  # the model source to record (set by open)
        if self._encoder is not None:
            self._encoder_ready(self._encoder)
        if self._load_encoder is None:  # an invalid choice fails here, not at the first search
            _ = self.strategy, self.fusion

    def _encoder_ready(self, encoder: QueryEncoder) -> None:
        """A reader compares the encoder with the store's identity, never records it."""
        if store_identity(self.store):
            self.sentence_store.check_identity(encoder.config.identity(), record=False)
            self._identity_recorded = True

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(
        cls,
        db: str | os.PathLike[str] = DEFAULT_DB,
        *,
        collection: str = DEFAULT_COLLECTION,
        model: str | os.PathLike[str] | None = None,
        device: str | None = None,
        overrides: dict[str, Any] | None = None,
        create: bool = True,
        client: Any = None,
        strategy: StrategyName | Strategy | None = None,
        strategy_params: dict[str, int | float] | None = None,
        fusion: FusionConfig | dict[str, Any] | None = None,
        lexical_cache: str | os.PathLike[str] | bool | None = None,
        lazy: bool = False,
        compile_encoder: bool = False,
    ) -> LandmarkIndex:
        """Open (or create) the index in ``db``: a folder, ``http(s)://host:port`` or ``":memory:"``.

        The model: ``model`` when given, else the one the store records (set up as at
        indexing time), else the package default for a new store; a model that differs
        from the store's is refused (``StoreMismatchError``), and a store with sentences but
        no recorded model needs ``model`` (``ModelNotRecordedError`` says so). ``overrides``
        change config fields of a new store's model (e.g. ``{"pooling": "mean"}``). With
        ``create=False`` a missing collection raises ``LookupError``. Opening never marks an
        existing collection: the first write records the model (readers leave it as it is).

        ``lazy``: when the store records its model (and no ``model``/``overrides`` are
        given), load it only on first use, so that re-adding unchanged documents never
        loads it; it is checked against the store then. ``compile_encoder``:
        ``torch.compile`` the encoder's document windows once loaded
        (``LandmarkEncoder.compile``: long indexing runs).
        """
        opened = open_store(db, collection=collection, model=model, device=device, overrides=overrides,
                            create=create, client=client, lazy=lazy, compile_encoder=compile_encoder)
        index = cls(opened.store, opened.encoder, strategy=strategy, strategy_params=strategy_params, fusion=fusion,
                    lexical_cache=lexical_cache, encoder_loader=opened.loader)
        index._source = opened.source
        return index

    # ------------------------------------------------------------------ parts
    @property
    def encoder(self) -> QueryEncoder:
        """The :class:`~landmark_rag.LandmarkEncoder` (loaded now if it was deferred;
        ``ValueError`` if there is none)."""
        if self._encoder is None and self._load_encoder is not None:
            encoder = self._load_encoder()
            self._encoder_ready(encoder)
            self._encoder, self._load_encoder = encoder, None
        if self._encoder is None:
            raise ValueError("this LandmarkIndex has no encoder: pass query vectors, or build it with one")
        return self._encoder

    @property
    def loaded_encoder(self) -> QueryEncoder | None:
        """The encoder if it is loaded, else ``None`` (never loads it)."""
        return self._encoder

    def _sentence_encoder(self) -> SentenceEncoder:
        """The encoder as something that encodes documents: a query-only encoder (the ONNX
        export a cold CLI query loads) can search a store but not write to it."""
        encoder = self.encoder
        if not isinstance(encoder, SentenceEncoder):
            raise TypeError(
                f"this LandmarkIndex's {type(encoder).__name__} encodes queries only: open the index with the "
                "model itself to add documents"
            )
        return encoder

    @property
    def sentence_store(self) -> SentenceStore:
        """:attr:`store` as something to write and search (``TypeError`` for an index built
        over a plain sentence source such as a framework's docstore, which can only expand and
        re-score hits)."""
        if not isinstance(self.store, SentenceStore):
            raise TypeError(
                f"this LandmarkIndex reads sentences from a {type(self.store).__name__}, which can expand and "
                "re-score hits but not be written or searched: open a landmark store (LandmarkIndex.open)"
            )
        return self.store

    @property
    def strategy(self) -> Strategy:
        """The default expansion (``strategy`` as given, else the model's)."""
        if self._strategy is None:
            self._strategy = choose_strategy(self._strategy_choice, self.strategy_params, self._model_config())
        return self._strategy

    @property
    def fusion(self) -> FusionConfig:
        """The search-mode settings: ``fusion`` as given over the model's ``fusion`` entry."""
        if self._fusion is None:
            choice = self._fusion_choice
            self._fusion = choice if isinstance(choice, FusionConfig) else model_fusion(
                self._model_config(), **(choice or {})
            )
        return self._fusion

    def _model_config(self) -> LandmarkConfig | None:
        if self._config is not None:
            return self._config
        if self._encoder is None and self._load_encoder is None:
            return None
        return self.encoder.config

    def resolve_strategy(self, strategy: StrategyName | Strategy | None = None) -> Strategy:
        """The expansion for one call: ``strategy`` built with this index's ``strategy_params``,
        or the index's own when ``None``."""
        if strategy is None:
            return self.strategy
        return choose_strategy(strategy, self.strategy_params, self._model_config())

    @property
    def lexical(self) -> StoreLexicalIndex:
        """The sentence-level BM25 index over this store (``store.lexical.StoreLexicalIndex``).

        Created on first use, in the ``fusion.language`` and scoring with its
        ``lexical_context`` and BM25 parameters; it is a cache of the store, built
        from the stored sentences when missing (no vector is touched) and kept in step with
        the store's manifest, so a store indexed before hybrid search existed works as is.
        """
        if self._lexical is None:
            from landmark_rag.store.lexical import StoreLexicalIndex

            self._lexical = StoreLexicalIndex(
                self.sentence_store, language=self.fusion.language, context=self.fusion.lexical_context,
                k1=self.fusion.bm25_k1, b=self.fusion.bm25_b, cache_dir=self._lexical_cache,
            )
        return self._lexical

    def resolve_mode(self, mode: Mode | str | None = None) -> Mode:
        """The search mode for one call: ``mode``, or the model's default when ``None``."""
        return check_mode(mode or self.fusion.mode)

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` as the adaptive strategy counts them."""
        counter = self._token_counter()
        if counter is None:
            raise ValueError("this LandmarkIndex has no encoder to count tokens with: pass count_tokens=")
        return counter(text)

    def _token_counter(self) -> Callable[[str], int] | None:
        if self._count_tokens is not None:
            return self._count_tokens
        if self._encoder is None and self._load_encoder is None:
            return None
        return self.encoder.count_tokens

    # ------------------------------------------------------------------ writing
    def add_texts(
        self,
        texts: Sequence[str],
        ids: Sequence[str | None] | None = None,
        metadatas: Sequence[dict[str, Any] | None] | None = None,
        *,
        skip_unchanged: bool = True,
        batch_size: int | None = None,
        show_progress: bool | None = False,
        encode: Encode | None = None,
    ) -> list[str]:
        """Encode whole documents (one pass each) and store one vector per sentence.

        Returns the document ids: ``ids[i]`` when given, else the first 16 hex digits of
        the text's content hash (adding the same text twice is idempotent). Re-adding an id
        replaces all its old sentences under the store's manifest protocol (an interrupted
        write never shows a half-written document); with ``skip_unchanged`` a document whose
        stored text hash and metadata are the same is not encoded again. Every text is
        checked before anything is written: an empty text, or two different texts under one
        id, raise ``ValueError``. ``encode(texts, doc_ids)`` replaces the encoder call (a
        framework's embeddings object that encodes in context). ``show_progress=None`` shows
        the bar only once the call has run a few seconds. Any failure propagates.
        """
        documents, doc_ids = text_documents(texts, ids, metadatas)
        self.add_sources(documents, skip_unchanged=skip_unchanged, batch_size=batch_size,
                         show_progress=show_progress, encode=encode)
        return doc_ids

    def add_sources(
        self,
        documents: Sequence[SourceDocument],
        *,
        skip_unchanged: bool = True,
        batch_size: int | None = None,
        show_progress: bool | None = False,
        encode: Encode | None = None,
    ) -> list[str]:
        """:meth:`add_texts` for documents already made (``ingest.SourceDocument``: distinct
        ids, e.g. a file's pages joined by ``ingest.join_pages``, whose sentences keep their
        pages); returns their ids. Any failure propagates."""
        documents = list(documents)
        self.record_identity()

        def encoder() -> DocumentEncoder:
            return DocumentEncoder(encode) if encode is not None else DocumentEncoder.of(self._sentence_encoder(), batch_size)

        write_sources(self.sentence_store, documents, encoder, skip_unchanged=skip_unchanged,
                      show_progress=show_progress)
        return [d.doc_id for d in documents]

    def add_files(
        self,
        paths: Iterable[str | os.PathLike[str]] | FileSet,
        *,
        glob: str | None = None,
        prune: bool = False,
        batch_size: int | None = None,
        show_progress: bool | None = None,
    ) -> IndexReport:
        """Index files: ``paths`` are files and folders (searched recursively), or a
        :class:`~landmark_rag.ingest.FileSet` that ``find_files`` returned; returns the report.

        PDF (text layer), Word (.docx), HTML (main text), Markdown and plain text are read
        (``landmark_rag.extract``; the first three need the ``documents`` extra); each
        sentence keeps its page (PDF) and its nearest heading as metadata.

        A document's id is its path relative to the folder given (a file given directly: its
        name), its metadata ``source`` (absolute path) and ``root``. Unchanged files (same
        text, same path) are skipped (opened with ``lazy=True``, the model is not even loaded
        when nothing changed); binary, undecodable, empty and unreadable files, scanned,
        encrypted and damaged PDFs, files whose format needs a library that is not
        installed, and files the encoder fails on, are reported as ``skipped`` with a
        one-line reason and the run goes on. ``glob`` keeps matching files only; the store's own
        folder is never indexed. ``prune``: also delete documents whose file is gone, or holds no
        document any more (emptied, binary, undecodable; not one a missing extra skips). Ctrl-C
        ends the run with ``report.interrupted`` set; a failing store raises
        ``StoreFailedError`` (a ``StoreError``) whose ``report`` says what was done. A path
        that does not exist raises ``FileNotFoundError`` before anything is written. A file the
        store already holds under another id (indexed from another folder) is skipped, saying so.
        ``show_progress``: ``None`` shows the bar once the run has taken a few seconds.
        """
        store = self.sentence_store
        found = files_to_index(store, paths, glob)
        self.record_identity()
        report = index_files(store, found, lambda: DocumentEncoder.of(self._sentence_encoder(), batch_size),
                             prune=prune, show_progress=show_progress)
        return report

    def add_documents(
        self, encoded_documents: Sequence[EncodedDocument], metadatas: Sequence[dict[str, Any] | None] | None = None
    ) -> list[str]:
        """Store already-encoded documents (each needs a ``doc_id``); returns their ids.

        Written as they are (the write path's last step): nothing is skipped or encoded.
        """
        docs = list(encoded_documents)
        check_encoded(docs, metadatas)
        self.record_identity()
        store_encoded(self.sentence_store, docs, metadatas)
        return [str(d.doc_id) for d in docs]

    def delete(self, doc_ids: Sequence[str]) -> int:
        """Remove documents and all their sentences; returns how many sentences went.

        ``doc_ids`` is a list: one string is refused, since iterating it would delete the
        documents named by its characters."""
        if isinstance(doc_ids, str):
            raise TypeError(f"delete() takes a list of document ids, not one string: delete([{doc_ids!r}])")
        store = self.sentence_store
        return sum(store.delete_document(str(doc_id)) for doc_id in dict.fromkeys(doc_ids))

    def record_identity(self) -> None:
        """Mark an unmarked store with this index's model (refuse a different one).

        Every write does it first. A store that already records its model and where it came
        from needs nothing: a deferred encoder is checked against it when it loads.
        """
        if self._identity_recorded:
            return
        if self._encoder is None and self._load_encoder is not None and records_model(self.store):
            self._identity_recorded = True  # nothing to record; the encoder is checked when it loads
            return
        store = self.sentence_store
        store.check_identity(self.encoder.config.identity())
        if self._source is not None:
            record_model(store, self._source, self.encoder.dim)
        self._identity_recorded = True

    # ------------------------------------------------------------------ reading
    def search(
        self,
        query: str,
        k: int | None = None,
        *,
        max_tokens: int | None = None,
        strategy: StrategyName | Strategy | None = None,
        where: dict[str, Any] | None = None,
        order: Order = "score",
        mode: Mode | None = None,
        query_vector: np.ndarray | None = None,
    ) -> list[Passage]:
        """Exactly ``k`` passages for ``query`` (fewer only when the store has fewer), or,
        with ``max_tokens``, the passages that fill that many tokens.

        ``k`` (default 4) counts passages; ``max_tokens`` counts what a reader pays for: the
        passages come in rank order and their texts add up to at most ``max_tokens`` tokens of
        the model's tokenizer (:meth:`count_tokens`); a passage that does not fit whole is cut
        between sentences (it keeps its hit and the sentences nearest to it). A passage is never less than one
        sentence: when the best hit's sentence alone is longer than ``max_tokens``, it comes
        back alone. With both, ``k`` caps the number of passages. The model's expansion
        decides how the budget is spent (``Evidence`` first grows the best passage into the
        evidence around its hit: docs/evaluation.md, the long-evidence benchmark).

        Each passage's text is the exact slice of its document; ``strategy`` overrides the
        index's expansion for this call (built with the index's ``strategy_params``);
        ``where`` is a Chroma metadata filter on the sentences; ``order`` is ``score`` (best
        first) or ``document`` (reading order). ``mode``: ``hybrid``, ``dense`` or
        ``lexical`` (``None``: the model's default, see :attr:`fusion`); lexical search
        returns fewer passages when fewer sentences share a term with the query (or follow
        one that does, with a ``lexical_context``).
        ``query_vector``: a query vector already computed (it is not encoded again).
        A blank query (without ``query_vector``: searching by a vector alone is fine), ``k < 1``,
        ``max_tokens < 1`` (or not a whole number) or an unknown ``order`` raise ``ValueError``.
        """
        k, budget = search_limits(k, max_tokens)
        check_request(1 if k is None else k, order, [query], vector_given=query_vector is not None)
        mode = self.resolve_mode(mode)
        strat = self.resolve_strategy(strategy)
        if query_vector is None and needs_vector(mode, strat):
            query_vector = self.encode_query(query)
        return self._passages(query, query_vector, k, strat, where=where, order=order, mode=mode, max_tokens=budget)

    def search_many(
        self,
        queries: Sequence[str],
        k: int | None = None,
        *,
        max_tokens: int | None = None,
        strategy: StrategyName | Strategy | None = None,
        where: dict[str, Any] | None = None,
        order: Order = "score",
        show_progress: bool = False,
        mode: Mode | None = None,
    ) -> list[list[Passage]]:
        """:meth:`search` for many queries, encoded in batches (all checked first)."""
        queries = list(queries)
        k, budget = search_limits(k, max_tokens)
        check_request(1 if k is None else k, order, queries)
        if not queries:
            return []
        mode = self.resolve_mode(mode)
        strat = self.resolve_strategy(strategy)
        if needs_vector(mode, strat):
            vectors: Sequence[np.ndarray | None] = list(self.encoder.encode_queries(queries, show_progress=show_progress))
        else:
            vectors = [None] * len(queries)
        return [
            self._passages(q, v, k, strat, where=where, order=order, mode=mode, max_tokens=budget)
            for q, v in zip(queries, vectors, strict=True)
        ]

    def hits(
        self,
        query: str,
        n: int | None = None,
        *,
        max_tokens: int | None = None,
        mode: Mode | None = None,
        where: dict[str, Any] | None = None,
        query_vector: np.ndarray | None = None,
    ) -> list[Hit]:
        """The best ``n`` sentence hits for ``query``, before expansion (best first); or, with
        ``max_tokens`` instead, the hits a :meth:`search` with that budget reads, so that
        :meth:`expand` with the same budget forms the same passages from them (what a
        framework retriever hands its expansion step).

        Scores are cosine (``dense``), BM25 (``lexical``) or the fused score (``hybrid``).
        ``query_vector``: a query vector already computed (e.g. by a framework).
        """
        if max_tokens is not None:
            budget = check_max_tokens(max_tokens)
            check_request(1, "score", [query], vector_given=query_vector is not None)
            mode = self.resolve_mode(mode)
            strat = self.strategy
            if query_vector is None and needs_vector(mode, strat):
                query_vector = self.encode_query(query)
            request = Request(mode, query, query_vector, where)
            return find_budget_hits(
                request, budget, self._sources(mode), strat, k=n, count_tokens=self._token_counter()
            )[0]
        if n is None:
            raise ValueError("hits needs n (how many) or max_tokens (a budget to fill)")
        check_request(n, "score", [query], what="n", vector_given=query_vector is not None)
        mode = self.resolve_mode(mode)
        if query_vector is None and mode != "lexical":
            query_vector = self.encode_query(query)
        return find_hits(Request(mode, query, query_vector, where), n, self._sources(mode))

    def encode_query(self, query: Query) -> np.ndarray:
        """A unit query vector: ``query`` encoded, or a given vector normalised."""
        if isinstance(query, str):
            return self.encoder.encode_query(query)
        return unit_vector(query)

    def _sources(self, mode: Mode) -> Sources:
        """What a search of ``mode`` reads (the lexical index only when the mode uses it: it is
        built from the store on first use)."""
        return Sources(self.sentence_store, self.lexical if mode != "dense" else None, self.fusion)

    def _passages(
        self,
        query: str,
        vector: np.ndarray | None,
        k: int | None,
        strategy: Strategy,
        *,
        where: dict[str, Any] | None,
        order: Order,
        mode: Mode,
        max_tokens: int | None = None,
    ) -> list[Passage]:
        """One search with mode, strategy and query vector already resolved (once per call of
        :meth:`search` / :meth:`search_many`, never again per read)."""
        request = Request(mode, query, vector, where)
        if max_tokens is not None:
            return find_budget_hits(
                request, max_tokens, self._sources(mode), strategy, k=k, order=order,
                count_tokens=self._token_counter(),
            )[1]
        assert k is not None  # search_limits gives k a default when there is no budget
        return find_passages(
            request, k, self._sources(mode), strategy, order=order, count_tokens=self._token_counter()
        )

    def expand(
        self,
        hits: Sequence[Hit],
        *,
        query: Query | None = None,
        k: int | None = None,
        strategy: StrategyName | Strategy | None = None,
        order: Order = "score",
        max_tokens: int | None = None,
    ) -> list[Passage]:
        """Sentence hits found elsewhere (a framework retriever) -> merged, exact passages.

        ``k``: at most this many passages, formed from the best hits first. ``max_tokens``:
        the passages fill at most that many tokens, as in :meth:`search`. The adaptive
        strategy needs ``query`` (text or vector).
        """
        check_passage_cap(k)
        budget = check_max_tokens(max_tokens) if max_tokens is not None else None
        check_order(order)
        vector = self.encode_query(query) if query is not None else None
        return expand_found(
            hits, self.store, self.resolve_strategy(strategy), query_vector=vector,
            count_tokens=self._token_counter(), k=k, order=order, max_tokens=budget,
        )

    def rescore(self, query: Query, passages: Sequence[Scored]) -> list[Scored]:
        """Copies of ``passages`` (or hits) scored by cosine with ``query``, from stored vectors."""
        return cosine_rescore(list(passages), self.store, self.encode_query(query))

    def __repr__(self) -> str:
        if self._load_encoder is not None:  # a repr never loads a model
            return f"LandmarkIndex(model={self._source!r}, not loaded yet)"
        name = getattr(getattr(self._encoder, "config", None), "model_name", None)
        return f"LandmarkIndex(model={name!r}, strategy={self.strategy!r}, mode={self.fusion.mode!r})"

