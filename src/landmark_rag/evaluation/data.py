"""The articles of one evaluation run, chosen from the loaded data.

Loading is :func:`landmark_rag.datasets.read_squad` and choosing is
:func:`landmark_rag.datasets.select` (the selection spec training uses too); what is the
evaluation's own is the policy on top: the corpus keeps the data's order, and a question cap
is spread round-robin over the articles.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from landmark_rag.datasets import Article, Question, select

__all__ = ["cap_questions", "choose_articles"]


def choose_articles(
    articles: Iterable[Article],
    *,
    select_spec: str | None = None,
    titles: Sequence[str] | None = None,
    max_articles: int | None = None,
    max_questions: int | None = None,
) -> list[Article]:
    """The articles a run evaluates on.

    ``select_spec`` (the selection spec of :func:`~landmark_rag.datasets.select`: ``"13:16"``,
    ``"0,3,Oxygen"``, ``"@held-out.txt"``) and ``titles`` (whole titles, as ``--title`` gives
    them) pick articles; with neither, every article. Either way the picked articles stay in
    the data's order, each once: the corpus order breaks score ties, so a run must not depend on
    how a titles file happens to be ordered. An unknown title is an error, so a typo cannot
    silently shrink a held-out set. ``max_articles`` then keeps the first N and
    ``max_questions`` caps the questions (:func:`cap_questions`).
    """
    arts = list(articles)
    if select_spec is not None or titles:
        picked = {id(a) for a in select(arts, select_spec or "")}
        picked |= {id(a) for a in select(arts, list(titles or ()))}
        arts = [a for a in arts if id(a) in picked]
    if max_articles is not None:
        arts = arts[: max(0, max_articles)]
    if max_questions is not None:
        arts = cap_questions(arts, max_questions)
    return arts


def cap_questions(articles: Sequence[Article], max_questions: int) -> list[Article]:
    """At most ``max_questions`` questions, taken round-robin over the articles so a small cap
    still samples every article. Articles left without questions still stay in the corpus:
    they are distractors, which keeps the retrieval problem as hard as the full data."""
    keep: list[set[str]] = [set() for _ in articles]
    left, depth = max(0, max_questions), 0
    while left > 0 and any(depth < len(a.questions) for a in articles):
        for i, art in enumerate(articles):
            if depth < len(art.questions) and left > 0:
                keep[i].add(art.questions[depth].qid)
                left -= 1
        depth += 1
    return [
        replace(a, questions=tuple(q for q in a.questions if q.qid in kept))
        for a, kept in zip(articles, keep, strict=True)
    ]


@dataclass(slots=True)
class _EvalSet:
    """Deprecated: the articles of a run and where they came from (pass the articles instead)."""

    source: str
    articles: list[Article]

    @property
    def questions(self) -> list[Question]:
        return [q for a in self.articles for q in a.questions]

    def __len__(self) -> int:
        return sum(len(a.questions) for a in self.articles)


#: Names docs/evaluation.md showed before the one record type -> (what to use instead, the object).
_DEPRECATED: dict[str, tuple[str, Any]] = {
    "EvalArticle": ("landmark_rag.datasets.Article", Article),
    "EvalSet": ("a list of landmark_rag.datasets.Article", _EvalSet),
}


def _deprecated(name: str, module: str) -> Any:
    """The object behind a deprecated name of ``module`` (with a ``DeprecationWarning``)."""
    if name not in _DEPRECATED:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    instead, obj = _DEPRECATED[name]
    warnings.warn(f"{module}.{name} is deprecated; use {instead}", DeprecationWarning, stacklevel=3)
    return obj


def __getattr__(name: str) -> Any:
    return _deprecated(name, __name__)
