"""A small sample corpus shipped with the package, for ``landmark-rag demo`` and quick tries.

Three Wikipedia excerpts (via SQuAD v1.1, CC BY-SA 4.0; see ``ATTRIBUTION.md`` here) as
plain-text files in a folder tree, and a few questions with the answer a correct passage
must contain. Real prose, so the demo shows what retrieval does on text a user might have.
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


def corpus_dir() -> Path:
    """The folder of sample documents (a real directory: the package is installed as files)."""
    return Path(str(_HERE / "corpus"))


def sample_questions() -> list[SampleQuestion]:
    data = json.loads((_HERE / "questions.json").read_text(encoding="utf-8"))
    return [SampleQuestion(**q) for q in data]
