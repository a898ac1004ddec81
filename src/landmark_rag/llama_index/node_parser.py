"""``LandmarkNodeParser``: one ``TextNode`` per sentence, in document order.

Landmark retrieval is chunking-free: the unit stored and searched is the sentence, and the
whole document is encoded in one pass later (``LandmarkEmbedding``). The parser therefore
only segments; it does not chunk, overlap or window. Every node carries the core schema
(``landmark_rag.store.schema``) so a LlamaIndex-written Chroma collection is readable by the
core store, the CLI and the ``BoundaryExpansionPostprocessor`` without a docstore.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.node_parser.interface import NodeParser
from llama_index.core.schema import BaseNode, Document, MetadataMode, NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.utils import get_tqdm_iterable

from landmark_rag.extract import Extracted
from landmark_rag.index.handoff import recent_sentences
from landmark_rag.llama_index.convert import HIDDEN_KEYS, join_page_nodes, node_text
from landmark_rag.segment import Segmenter, segment_sentences
from landmark_rag.store import content_hash, flat_metadata, sentence_id, sentence_metadata
from landmark_rag.types import Sentence


class LandmarkNodeParser(NodeParser):
    """Split documents into sentence nodes with exact offsets and deterministic ids.

    - node id ``sentence_id(doc_id, index)`` (``"doc_id:index"``), where ``doc_id`` is the
      input node's id: re-ingesting a document writes the same ids (``id_func`` is ignored
      for that reason);
    - ``start_char_idx``/``end_char_idx`` are exact: ``document.text[start:end] == node.text``;
    - metadata: the document's metadata made flat (Chroma-safe) plus the schema keys
      ``doc_id, sentence_index, start, end, space_before, doc_hash``; the schema keys are
      excluded from embedding and LLM rendering, so they never reach a prompt;
    - relationships: SOURCE (the document), PREVIOUS/NEXT (neighbouring sentences);
    - the pages of one file (documents sharing ``file_path``, else ``file_name``, with a
      ``page_label``, as ``SimpleDirectoryReader`` reads a PDF) are one document, id the
      file's path, joined in page order (``landmark_rag.ingest.join_pages``); each sentence
      keeps its page (``sentence_page``).

    ``segmenter`` is any callable from text to ``(start, end)`` spans (default sentencex).
    ``max_sentence_tokens`` with ``tokenizer`` cuts over-long sentences into pieces that fit
    the encoder's window; :meth:`for_embedding` sets both from a ``LandmarkEmbedding`` so
    the nodes are exactly the sentences the encoder itself would use. Given neither, the
    parser still cuts the way the encoder would whenever it can know the encoder: when
    ``Settings.embed_model`` is a ``LandmarkEmbedding`` at parse time (``cut_long_sentences``,
    on by default). Otherwise an over-long sentence stays one node, and the encoder, which
    must fit it into its window, sees less of it than the CLI or LangChain would store.
    """

    max_sentence_tokens: int | None = Field(
        default=None, description="Cut sentences longer than this many tokens (needs a tokenizer)."
    )
    cut_long_sentences: bool = Field(
        default=True,
        description="Without a tokenizer, cut like Settings.embed_model's encoder when that is a LandmarkEmbedding.",
    )
    segmenter_name: str = Field(
        default="sentencex", description="Name of the segmenter (part of the ingestion cache key)."
    )
    _segmenter: Segmenter | None = PrivateAttr(default=None)
    _tokenizer: Any = PrivateAttr(default=None)
    # measure a sentence with the whitespace before it, as a causal encoder's layout
    # tokenises it: the encoder then reuses these ids instead of tokenising it again
    _space_before: bool = PrivateAttr(default=False)

    def __init__(
        self,
        *,
        segmenter: Segmenter | None = None,
        tokenizer: Any = None,
        max_sentence_tokens: int | None = None,
        **kwargs: Any,
    ) -> None:
        if max_sentence_tokens is not None and tokenizer is None:
            raise ValueError("max_sentence_tokens needs a tokenizer to count tokens")
        if segmenter is not None:
            kwargs.setdefault("segmenter_name", _callable_name(segmenter))
        # pydantic's dataclass_transform gives super().__init__ the base's fields only, not this one
        super().__init__(max_sentence_tokens=max_sentence_tokens, **kwargs)  # type: ignore[call-arg]
        self._segmenter = segmenter
        self._tokenizer = tokenizer

    @classmethod
    def for_embedding(
        cls, embed_model: Any, *, segmenter: Segmenter | None = None, **kwargs: Any
    ) -> LandmarkNodeParser:
        """A parser that splits exactly as ``embed_model``'s encoder does (long sentences cut)."""
        encoder = getattr(embed_model, "encoder", embed_model)
        parser = cls(
            segmenter=segmenter,
            tokenizer=encoder.tokenizer,
            max_sentence_tokens=encoder.max_sentence_tokens,
            **kwargs,
        )
        parser._space_before = bool(encoder.causal)
        return parser

    @classmethod
    def class_name(cls) -> str:
        return "LandmarkNodeParser"

    # ------------------------------------------------------------------ parsing
    def split(self, text: str, doc_id: str | None = None) -> list[Sentence]:
        """The sentences of ``text`` as this parser cuts them."""
        if self._segmenter is None and self.segmenter_name != "sentencex":
            # e.g. a lambda segmenter lost when the parser was pickled for a worker process
            raise RuntimeError(f"the custom segmenter {self.segmenter_name!r} is not available in this process")
        tokenizer, max_tokens, space_before = self._cut_limits()
        return segment_sentences(
            text,
            segmenter=self._segmenter,
            doc_id=doc_id,
            max_tokens=max_tokens,
            tokenizer=tokenizer,
            space_before=space_before,
        )

    def _cut_limits(self) -> tuple[Any, int | None, bool]:
        """The tokenizer and sentence limit to cut with, and whether sentences are measured
        with the whitespace before them: the ones given, else the encoder's of a
        ``LandmarkEmbedding`` in ``Settings`` (read without resolving LlamaIndex's default
        model, which would try OpenAI), else none (no cutting)."""
        if self._tokenizer is not None or not self.cut_long_sentences:
            return self._tokenizer, self.max_sentence_tokens, self._space_before
        from llama_index.core import Settings

        from landmark_rag.llama_index.embedding import LandmarkEmbedding

        embed = getattr(Settings, "_embed_model", None)
        if isinstance(embed, LandmarkEmbedding):
            encoder = embed.encoder
            return encoder.tokenizer, encoder.max_sentence_tokens, bool(encoder.causal)
        return None, None, False

    def _parse_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> list[BaseNode]:
        out: list[BaseNode] = []
        for doc, extracted in get_tqdm_iterable(join_page_nodes(nodes), show_progress, "Splitting into sentences"):
            out.extend(self._sentence_nodes(doc, extracted))
        return out

    async def _aparse_nodes(
        self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> list[BaseNode]:
        # segmenting and tokenising long documents is CPU work: off the event loop, as the
        # embedding and ReplaceDocuments are under IngestionPipeline.arun
        return await asyncio.to_thread(self._parse_nodes, nodes, show_progress, **kwargs)

    def _sentence_nodes(self, doc: BaseNode, extracted: Extracted | None = None) -> list[TextNode]:
        text = node_text(doc)
        doc_id = doc.node_id
        sentences = self.split(text, doc_id)
        if not sentences:
            return []
        if extracted is not None:  # the pages of one file, joined: each sentence keeps its page
            sentences = extracted.locate(sentences)
        doc_hash = content_hash(text)
        user_md = flat_metadata(doc.metadata) if self.include_metadata else {}
        hidden = list(dict.fromkeys([*(doc.excluded_embed_metadata_keys or []), *HIDDEN_KEYS]))
        hidden_llm = list(dict.fromkeys([*(doc.excluded_llm_metadata_keys or []), *HIDDEN_KEYS]))
        source = doc.as_related_node_info()
        ids = [sentence_id(doc_id, s.index) for s in sentences]
        out = []
        for pos, s in enumerate(sentences):
            rel: dict[NodeRelationship, Any] = {NodeRelationship.SOURCE: source}
            if self.include_prev_next_rel and pos > 0:
                rel[NodeRelationship.PREVIOUS] = RelatedNodeInfo(node_id=ids[pos - 1])
            if self.include_prev_next_rel and pos + 1 < len(sentences):
                rel[NodeRelationship.NEXT] = RelatedNodeInfo(node_id=ids[pos + 1])
            out.append(
                TextNode(
                    id_=ids[pos],
                    text=s.text,
                    start_char_idx=s.start,
                    end_char_idx=s.end,
                    metadata=sentence_metadata(s, doc_hash, user_md),
                    excluded_embed_metadata_keys=hidden,
                    excluded_llm_metadata_keys=hidden_llm,
                    metadata_template=doc.metadata_template,
                    metadata_separator=doc.metadata_separator,
                    text_template=getattr(doc, "text_template", TextNode.model_fields["text_template"].default),
                    relationships=rel,
                )
            )
        return out

    def _postprocess_parsed_nodes(self, nodes: list[BaseNode], parent_doc_map: dict[str, Document]) -> list[BaseNode]:
        """Keep what the base class would otherwise overwrite.

        The base class re-finds each node's text in the document with ``str.find`` (which
        can land on an earlier repeat of a short sentence) and merges the document's raw,
        possibly nested, metadata back in. Our offsets are already exact and our metadata
        already flat, so both are restored after it ran.
        """
        kept = [
            (n.start_char_idx, n.end_char_idx, dict(n.metadata), dict(n.relationships))
            if isinstance(n, TextNode)
            else None
            for n in nodes
        ]
        nodes = super()._postprocess_parsed_nodes(nodes, parent_doc_map)
        for node, saved in zip(nodes, kept, strict=True):
            if saved is None:
                continue
            start, end, metadata, relationships = saved
            node.start_char_idx, node.end_char_idx = start, end  # type: ignore[attr-defined]
            node.metadata = metadata
            node.relationships = relationships
        # remembered (as hashes) so that LandmarkEmbedding can tell these sentences from
        # standalone strings if LlamaIndex later hands them over bare, and warn
        recent_sentences.add(
            t for n in nodes if isinstance(n, TextNode) for t in (n.text, n.get_content(metadata_mode=MetadataMode.EMBED))
        )
        return nodes


def _callable_name(fn: Any) -> str:
    name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    return f"{getattr(fn, '__module__', '')}.{name}"
