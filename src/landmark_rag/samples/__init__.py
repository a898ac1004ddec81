"""A small sample corpus shipped with the package, for ``landmark-rag demo`` and quick tries.

Two whole Wikipedia articles (via SQuAD v1.1, CC BY-SA 4.0; see ``ATTRIBUTION.md`` here) as
files in a folder tree, and ten questions, each with the answer a correct passage must
contain. The articles are held-out articles of the project's data (16-23 of
data/squad-v1.1-dev-part-a.json): the default model was neither trained nor tuned on them,
and the questions were written for the demo, not taken from SQuAD, so the demo's score is
evidence of what retrieval does on text the model never saw.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

_HERE = resources.files(__name__)


@dataclass(frozen=True)
class SampleQuestion:
    question: str
    answer: str  # a string the right passage contains
    source: str  # the document id (path relative to the corpus folder) that holds it


CORPUS_NOTE = (
    "Text: the Wikipedia articles 'Jacksonville, Florida' and 'Prime number' (CC BY-SA 4.0, via SQuAD v1.1), "
    "held out from the default model's training and tuning; questions written for this demo, not from SQuAD."
)


def corpus_dir() -> Path:
    """The folder of sample documents (a real directory: the package is installed as files)."""
    return Path(str(_HERE / "corpus"))


def sample_questions() -> list[SampleQuestion]:
    data = json.loads((_HERE / "questions.json").read_text(encoding="utf-8"))
    return [SampleQuestion(**q) for q in data]
