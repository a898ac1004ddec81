"""``BoundaryExpansionCompressor``: sentence hits -> expanded passages, as a LangChain compressor.

For users who keep their own retriever (a ``Chroma.as_retriever()``, an ensemble, a
self-query retriever) over a collection that landmark-rag ingested: its results are single
sentences, which are the *information boundaries* of the paper, not the passages to read.
Wrapped in ``ContextualCompressionRetriever(base_compressor=BoundaryExpansionCompressor(...),
base_retriever=...)`` this compressor reads the neighbouring sentences from the collection
and returns the expanded, merged passages (core ``expand_hits``), each an exact slice of
its source document.

With any other vector store (``InMemoryVectorStore``, FAISS, ...) the neighbours come from
the sentences themselves: ``documents=`` (what ``LandmarkTextSplitter`` returned) or
``docstore=`` (the vector store, or any store that returns them by id).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from pydantic import ConfigDict, Field, PrivateAttr, field_validator

from landmark_rag.expand import check_max_tokens, choose_strategy
from landmark_rag.index import LandmarkIndex
from landmark_rag.langchain.collection import CollectionAdapter
from landmark_rag.langchain.convert import has_sentence_metadata, hit_from_document, passage_document
from landmark_rag.langchain.embeddings import LandmarkEmbeddings
from landmark_rag.langchain.sources import DocumentSentenceSource
from landmark_rag.store import DEFAULT_COLLECTION, ChromaSentenceStore
from landmark_rag.store.schema import VERSION, sentence_id
from landmark_rag.types import Hit


class BoundaryExpansionCompressor(CollectionAdapter, BaseDocumentCompressor):
    """Expand sentence ``Document`` objects into passages read from a landmark collection.

    Input documents are sentences carrying the core schema metadata (``doc_id``,
    ``sentence_index``, ``start``, ``end``, ...), as ``langchain_chroma.Chroma`` returns
    them from a landmark-ingested collection; a document with only an ``id`` of the form
    ``doc_id:index`` is looked up in the collection. Anything else is refused with a
    ``ValueError`` (it could not be placed in its source document).

    - ``persist_directory`` / ``client`` / ``collection_name``: the landmark Chroma collection
      where the sentences live;
    - or, for hits of any other vector store: ``documents`` (the sentence ``Document``s that
      ``LandmarkTextSplitter`` returned) or ``docstore`` (anything that returns them by id:
      the vector store itself through ``get_by_ids``, e.g. ``InMemoryVectorStore`` or FAISS,
      or a ``BaseStore`` through ``mget``). Such stores give no vectors back, so hits keep
      their input scores (``rescore`` has nothing to read) and ``adaptive`` is not available.
    - ``embeddings``: for the query vector; ``None`` uses the model recorded on the collection.
    - ``rescore``: score each hit as the cosine of the query and its stored vector (the
      retriever's own score is usually not passed along in ``Document``s). With ``False``,
      ``metadata["score"]`` is used when present, else the input order (1, 1/2, 1/3, ...).
    - ``strategy`` / ``strategy_params``: ``front``, ``surround``, ``adaptive`` or ``evidence``; ``None``
      (default): the expansion the model's ``landmark_config.json`` names, as the retriever.
    - ``k``: at most this many passages (best-first hits that form them); ``None``: all.
    - ``max_tokens``: a context budget: the passages, best first, add up to at most this many
      tokens of the model's tokenizer (about four characters a token when the index has no
      model); a passage that does not fit whole is cut between sentences around its hit, never
      less than one sentence.
    - ``order``: ``score`` (best first) or ``document`` (reading order).
    """

    # unknown arguments refused, not dropped (BaseDocumentCompressor would drop them)
    model_config = ConfigDict(arbitrary_types_allowed=True, protected_namespaces=(), extra="forbid")

    embeddings: LandmarkEmbeddings | None = None
    persist_directory: str | None = None
    collection_name: str = DEFAULT_COLLECTION
    client: Any = Field(default=None, exclude=True)
    strategy: Literal["front", "surround", "adaptive", "evidence"] | None = None
    strategy_params: dict[str, int | float] = Field(default_factory=dict)
    rescore: bool = True
    k: int | None = Field(default=None, ge=1)
    max_tokens: int | None = None
    order: Literal["score", "document"] = "score"
    documents: list[Document] | None = Field(default=None, exclude=True)
    docstore: Any = Field(default=None, exclude=True)

    _store: ChromaSentenceStore | None = PrivateAttr(default=None)
    _sentences: DocumentSentenceSource | None = PrivateAttr(default=None)
    _index: LandmarkIndex | None = PrivateAttr(default=None)

    @field_validator("max_tokens", mode="before")
    @classmethod
    def _check_max_tokens(cls, value: Any) -> Any:
        """The budget's own message (a bool or ``512.5`` is refused, not coerced)."""
        return None if value is None else check_max_tokens(value)

    def model_post_init(self, context: Any, /) -> None:
        if self.documents is not None or self.docstore is not None:
            if self.strategy is not None:
                named = choose_strategy(self.strategy, self.strategy_params)
                if named.needs_vectors:
                    raise ValueError(
                        "the adaptive strategy compares the neighbours' vectors, which documents=/docstore= "
                        "do not hold: use front or surround, or a landmark Chroma collection"
                    )
            self._sentences = DocumentSentenceSource(self.documents, self.docstore)
            return
        try:
            self._open_collection(create=False)
        except LookupError as exc:
            raise LookupError(
                f"BoundaryExpansionCompressor reads the sentences around each hit from where they are kept, and "
                f"has none: {exc}. With a landmark Chroma collection, name it (persist_directory= or client=, "
                "collection_name=). With any other vector store, pass the sentences: "
                "documents=<what LandmarkTextSplitter returned> or docstore=<the vector store> "
                "(docs/langchain.md, 'Any vector store')."
            ) from exc

    @property
    def source(self) -> Any:
        """Where neighbours are read: the Chroma store, or the sentence documents given."""
        return self._sentences if self._sentences is not None else self.store

    def _embeddings(self) -> LandmarkEmbeddings:
        if self.embeddings is None and self._sentences is not None:  # no collection recording a model
            self.embeddings = LandmarkEmbeddings()
        return CollectionAdapter._embeddings(self)

    @property
    def index(self) -> LandmarkIndex:
        """The core :class:`~landmark_rag.LandmarkIndex` over the collection.

        The model is loaded only when something needs it: the query vector (``rescore``,
        the adaptive strategy) or the model's own expansion (``strategy=None``).
        """
        if self._index is None:
            named = choose_strategy(self.strategy, self.strategy_params) if self.strategy is not None else None
            rescore = self.rescore and self._sentences is None
            needs_model = named is None or rescore or named.needs_vectors
            encoder = self._embeddings().encoder if needs_model else None
            self._index = LandmarkIndex(
                self.source, encoder, strategy=self.strategy, strategy_params=self.strategy_params
            )
        return self._index

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Expand the sentence hits in ``documents`` for ``query`` into passage Documents."""
        docs = self._located(documents)
        if not docs:
            return []
        index = self.index
        rescore = self.rescore and self._sentences is None  # only a collection holds the vectors
        vector = index.encode_query(query) if rescore or index.strategy.needs_vectors else None
        hits = self._hits(docs)
        if rescore:
            if vector is None:  # rescore encodes the query just above
                raise RuntimeError("rescoring the hits needs the query vector")
            hits = index.rescore(vector, hits)
        passages = index.expand(hits, query=vector, k=self.k, order=self.order, max_tokens=self.max_tokens)
        return [passage_document(p) for p in passages]

    def _located(self, documents: Sequence[Document]) -> list[Document]:
        """Documents with schema metadata: as given, or looked up in the collection by id."""
        out: list[Document | None] = []
        lookup: dict[str, int] = {}
        for doc in documents:
            if has_sentence_metadata(doc):
                out.append(doc)
            elif doc.id:
                lookup[str(doc.id)] = len(out)
                out.append(None)
            else:
                raise ValueError(
                    "BoundaryExpansionCompressor needs sentence Documents with landmark-rag metadata "
                    "(doc_id, sentence_index, start, end) or an id 'doc_id:index' from a landmark collection; "
                    f"got metadata keys {sorted(doc.metadata)}"
                )
        if lookup and self._sentences is not None:
            for sid, found_doc in self._sentences.lookup(list(lookup)).items():
                out[lookup[sid]] = found_doc
            missing = [sid for sid, pos in lookup.items() if out[pos] is None]
            if missing:
                raise ValueError(f"sentences {missing[:5]} are not in {self._sentences.describe()}")
        elif lookup:
            # ids as stored, of whatever version: expand() drops the hidden ones, as it does
            # for hits a framework's own search read raw
            for sid, hit in self.store.read_ids(list(lookup), hidden=True).items():
                out[lookup[sid]] = Document(page_content=hit.sentence.text, metadata=hit.metadata, id=sid)
            addresses: dict[str, str] = {}  # a plain address "doc_id:index" (record ids carry "@version")
            for sid, pos in lookup.items():
                doc_id, _, index = sid.partition("@")[0].rpartition(":")
                if out[pos] is None and doc_id and index.isdigit():
                    addresses[sid] = sentence_id(doc_id, int(index))
            found = self.store.read_ids(list(dict.fromkeys(addresses.values()))) if addresses else {}
            for sid, key in addresses.items():  # the sentence readers see at that address
                if key in found:
                    s = found[key].sentence
                    rid = sentence_id(str(s.doc_id), s.index, found[key].metadata.get(VERSION))  # as stored
                    out[lookup[sid]] = Document(page_content=s.text, metadata=dict(found[key].metadata), id=rid)
            missing = [sid for sid, pos in lookup.items() if out[pos] is None]
            if missing:
                raise ValueError(f"sentences {missing[:5]} are not in collection {self.collection_name!r}")
        return [d for d in out if d is not None]

    def _hits(self, docs: list[Document]) -> list[Hit]:
        """One hit per distinct sentence (first occurrence wins), scored ``metadata["score"]``
        when present, else by input order (1, 1/2, 1/3, ...)."""
        hits: list[Hit] = []
        seen: set[tuple[str, int]] = set()
        for rank, doc in enumerate(docs):
            fallback = doc.metadata.get("score", 1.0 / (rank + 1))
            hit = hit_from_document(doc, float(fallback) if isinstance(fallback, int | float) else 1.0 / (rank + 1))
            key = (str(hit.sentence.doc_id), hit.sentence.index)
            if key not in seen:
                seen.add(key)
                hits.append(hit)
        return hits
