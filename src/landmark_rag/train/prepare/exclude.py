"""Which documents a training set must not contain: evaluation articles and reserved domains.

Titles are compared after :func:`~landmark_rag.train.prepare.recipe.normalise_title` (the
form the recipe keeps them in), so ``Prime_number``, ``Prime number`` and
``prime%20number`` are one article: a copy of an evaluation article in another dataset (with
its own spelling of the title) is still caught. Documents of a recipe's benchmark files are
also caught by their text (:mod:`.overlap`).
"""

from __future__ import annotations

from urllib.parse import unquote

from landmark_rag.train.prepare.overlap import is_copy
from landmark_rag.train.prepare.recipe import Recipe, normalise_title


def exclusion_reason(recipe: Recipe, title: str, text: str | None = None) -> str | None:
    """Why a document with this title (and ``text``, when given) is left out (``None``: it is
    kept). The text is compared with the recipe's benchmark documents only: SQuAD's evaluation
    articles are caught by title, a benchmark story may come back under another file name."""
    key = normalise_title(title)
    if key in recipe.excluded_titles:
        return "evaluation article"
    if key in recipe.benchmark_titles:
        return "benchmark document (title)"
    if text is not None and is_copy(text, recipe.benchmark_shingles):
        return "benchmark document (text)"
    if key in recipe.domain_titles:
        return "reserved domain (listed)"
    readable = " ".join(unquote(title).replace("_", " ").split())
    if any(p.search(readable) for p in recipe.domain_patterns):
        return "reserved domain (title pattern)"
    return None
