"""``sentence-window``: LlamaIndex's SentenceWindowNodeParser behaviour.

The parser embeds each sentence on its own and stores a window of three sentences either
side in metadata; the metadata-replacement postprocessor then hands that window to the
LLM. Same vectors as ``sentence``, wider passages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from landmark_rag.evaluation.systems.base import DenseSystem, SentenceWindowMixin, Workspace

if TYPE_CHECKING:
    from landmark_rag.encode.encoder import LandmarkEncoder

#: SentenceWindowNodeParser's default ``window_size``.
WINDOW = 3


class SentenceWindowSystem(SentenceWindowMixin, DenseSystem):
    name: ClassVar[str] = "sentence-window"
    description: ClassVar[str] = "each sentence embedded alone, hit +/- 3 sentences (LlamaIndex)"
    sentence_units: ClassVar[bool] = True
    before: ClassVar[int] = WINDOW
    after: ClassVar[int] = WINDOW

    def make_encoder(self, workspace: Workspace) -> LandmarkEncoder:
        return workspace.standalone_encoder()
