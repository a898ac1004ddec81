"""Which documents a training set must not contain: evaluation articles and reserved domains.

Titles are compared after :func:`~landmark_rag.train.prepare.recipe.normalise_title` (the
form the recipe keeps them in), so ``Prime_number``, ``Prime number`` and
``prime%20number`` are one article: a copy of an evaluation article in another dataset (with
its own spelling of the title) is still caught.
"""

from __future__ import annotations

from urllib.parse import unquote

from landmark_rag.train.prepare.recipe import Recipe, normalise_title


def exclusion_reason(recipe: Recipe, title: str) -> str | None:
    """Why a document with this title is left out (``None``: it is kept)."""
    key = normalise_title(title)
    if key in recipe.excluded_titles:
        return "evaluation article"
    if key in recipe.domain_titles:
        return "reserved domain (listed)"
    readable = " ".join(unquote(title).replace("_", " ").split())
    if any(p.search(readable) for p in recipe.domain_patterns):
        return "reserved domain (title pattern)"
    return None
